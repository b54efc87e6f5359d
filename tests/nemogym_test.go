package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/cmd/corpsim/cli"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/worlds"
)

// nemoClient is a NeMo Gym client's view of the /nemo routes: plain HTTP
// with a cookie jar of its own.
type nemoClient struct {
	t    testing.TB
	base string
	c    *http.Client
}

func newNemoClient(t testing.TB, haddr string) *nemoClient {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &nemoClient{t: t, base: "http://" + haddr + "/nemo/", c: &http.Client{Jar: jar, Timeout: 2 * time.Minute}}
}

// post sends body (bytes as they are, anything else as JSON) to route.
func (n *nemoClient) post(route string, body any) (int, []byte) {
	n.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case []byte:
		rd = bytes.NewReader(b)
	case nil:
	default:
		data, err := json.Marshal(b)
		if err != nil {
			n.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	resp, err := n.c.Post(n.base+route, "application/json", rd)
	if err != nil {
		n.t.Fatalf("POST /nemo/%s: %v", route, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// nemoOutput is a tool call's output.
type nemoOutput struct {
	Result      string          `json:"result"`
	Error       string          `json:"error"`
	Turn        uint64          `json:"turn"`
	Observation json.RawMessage `json:"observation"`
	Done        bool            `json:"done"`
	Status      string          `json:"status"`
	Score       *float64        `json:"score"`
}

// call calls a tool and returns its output; the HTTP status must be 200.
func (n *nemoClient) call(tool string, args any) nemoOutput {
	n.t.Helper()
	code, body := n.post(tool, args)
	var out struct {
		Output *nemoOutput `json:"output"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &out) != nil || out.Output == nil {
		n.t.Fatalf("tool %s: %d %s; want 200 with an output", tool, code, body)
	}
	return *out.Output
}

func (n *nemoClient) seed(row map[string]any) string {
	n.t.Helper()
	code, body := n.post("seed_session", row)
	var reply struct {
		Session, Member string
		Tools           []nemoTool
	}
	if code != http.StatusOK || json.Unmarshal(body, &reply) != nil || reply.Session == "" {
		n.t.Fatalf("seed_session: %d %s", code, body)
	}
	// The reply lists the member's tools: its world's actions, as
	// `corpsim tools --world` does, then observe.
	checkNemoTools(n.t, "seed_session", reply.Tools, row["world"].(string))
	return reply.Session
}

// nemoTool is what a test reads of a tool a NeMo Gym route lists.
type nemoTool struct{ Type, Name string }

// checkNemoTools checks that tools are a session of world's: its actions,
// as `corpsim tools --world` lists them, then observe.
func checkNemoTools(t testing.TB, route string, tools []nemoTool, world string) {
	t.Helper()
	w, err := worlds.Shipped(world)
	if err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for _, d := range agents.ToolDefsFor(w) {
		want = append(want, d.Function.Name)
	}
	want = append(want, "observe")
	for _, tl := range tools {
		if tl.Type != "function" {
			t.Errorf("%s: tool %s of type %q, want function", route, tl.Name, tl.Type)
		}
		got = append(got, tl.Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s lists the tools %v, want %v", route, got, want)
	}
}

// nemoRow is a task row as a NeMo Gym dataset holds it: the corpsim fields
// beside responses_create_params.
func nemoRow(seed int, member string) map[string]any {
	return map[string]any{"world": "startup", "seed": seed, "agents": "greedy", "member": member, "turn_timeout": "30s",
		"responses_create_params": map[string]any{"input": []any{map[string]any{"role": "user", "content": "Play " + member + "."}}},
		"task_id":                 fmt.Sprintf("startup-%d-%s", seed, member)}
}

// playGreedy plays the session greedily through the tools, one action per
// call, the first of greedy's for each observation, until it has ended;
// before the first action it makes the four calls every adapter must
// survive: an unknown tool, a tool of worlds with systems (startup, whose
// session it plays, has none), arguments that do not parse, and arguments
// over the reply limit. It returns the number of calls.
func playGreedy(t *testing.T, n *nemoClient) (calls int, final nemoOutput) {
	t.Helper()
	out := n.call("observe", map[string]any{})
	if out.Turn == 0 || out.Observation == nil {
		t.Fatalf("observe: %+v; want the first turn's observation", out)
	}
	startup, err := worlds.Shipped("startup")
	if err != nil {
		t.Fatal(err)
	}
	offered := strings.Join(agents.ToolNames(agents.ToolDefsFor(startup)), ", ")
	bad := []struct {
		tool string
		args []byte
		want string
	}{
		{"fly", []byte(`{}`), `unknown tool "fly" (tools: ` + offered + ")"},
		{"get", []byte(`{"record":"account","id":"a1"}`), `unknown tool "get" (tools: ` + offered + ")"},
		{"claim", []byte(`{"task":`), "not a JSON object"},
		{"message", []byte(`{"to":"alice","text":"` + strings.Repeat("x", org.MaxReplyBytes) + `"}`), "over 65536 bytes"},
	}
	for _, b := range bad {
		o := n.call(b.tool, b.args)
		if !strings.Contains(o.Result, "refused: malformed tool call") || !strings.Contains(o.Result, b.want) || o.Turn == 0 {
			t.Fatalf("tool %s with %.40q: %+v; want it refused saying %q, and the next turn", b.tool, b.args, o, b.want)
		}
		out = o
	}
	for calls = 1; !out.Done; calls++ {
		if calls > 5000 {
			t.Fatal("the session did not end within 5000 calls")
		}
		if out.Error != "" {
			t.Fatalf("call %d: %+v", calls, out)
		}
		var o org.Observation
		if err := json.Unmarshal(out.Observation, &o); err != nil {
			t.Fatalf("call %d: observation %s: %v", calls, out.Observation, err)
		}
		acts, _ := (&agents.Greedy{}).Decide(context.Background(), o)
		a := org.Action{Type: org.ActWait}
		if len(acts) > 0 {
			a = acts[0]
		}
		name, args, err := agents.ToolCallFromAction(a)
		if err != nil {
			t.Fatal(err)
		}
		out = n.call(name, json.RawMessage(args))
		if !out.Done && out.Result != "accepted" && !strings.HasPrefix(out.Result, "refused (") {
			t.Fatalf("call %d (%s %s): result %q; want accepted or refused with a reason", calls, name, args, out.Result)
		}
	}
	return calls, out
}

// scoreOf is `corpsim score SESSION --json` of a stopped server's data.
func scoreOf(t *testing.T, data, session string) *app.RunResult {
	t.Helper()
	out, errs, code := runCLI(t, "score", session, "--data", data, "--json")
	var res app.RunResult
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("corpsim score %s exited %d: %s%s", session, code, out, errs)
	}
	return &res
}

func deliveredBy(res *app.RunResult, member string) float64 {
	for _, m := range res.Score.Members {
		if m.Member == member {
			return m.Delivered
		}
	}
	return 0
}

// TestNemoGymSeedToolsVerify: a NeMo Gym client (net/http, a cookie jar)
// seeds a session of a real `corpsim serve --http`, plays bob through the
// tool routes to the session's end and verifies: verify echoes the body
// with a reward equal to the team score `corpsim score` reports, and the
// member's delivered value among reward_components. Tool errors (unknown
// tool, bad or oversized arguments) are outputs and are recorded in the
// log; another client's cookie reaches only its own session, a forged one
// none; malformed and oversized bodies are refused with 400 and 413; past
// --max-sessions a seed is answered 503; an abrupt disconnect is counted
// and leaves the server and the session serving.
func TestNemoGymSeedToolsVerify(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real corpsim")
	}
	data, haddr := filepath.Join(t.TempDir(), "data"), freeAddr(t)
	sp := startServe(t, data, "--http", haddr, "--max-sessions", "2", "--nemo-max-sessions", "2", "--max-message", "1048576")
	if !strings.Contains(sp.stdout.String(), "corpsim NeMo Gym resources server on http://"+haddr+"/nemo") {
		t.Errorf("serve does not say it serves /nemo:\n%s", sp.stdout.String())
	}
	// Malformed and oversized rows: refused before anything is made.
	c := newNemoClient(t, haddr)
	for _, tc := range []struct {
		route string
		body  []byte
		code  int
		want  string
	}{
		{"seed_session", []byte(`not json`), 400, "JSON object"},
		{"seed_session", []byte(`[1,2]`), 400, "JSON object"},
		{"seed_session", []byte(`{"world":"startup","seed":-1,"member":"bob"}`), 400, "malformed JSON"},
		{"seed_session", []byte(`{"world":"startup"}`), 400, `names no \"member\"`},
		{"seed_session", []byte(`{"world":"startup","member":"bob","agents":"greedy,carol=remote"}`), 400, "remote"},
		{"seed_session", []byte(`{"world":"startup","member":"bob","load":0}`), 400, "load"},
		{"seed_session", []byte(`{"world":"startup","member":"nobody"}`), 400, "nobody"},
		{"seed_session", append([]byte(`{"world":"startup","member":"bob","pad":"`), bytes.Repeat([]byte("x"), 2<<20)...), 413, "limit"},
		{"reset", []byte(`{"member":`), 400, "malformed"},
	} {
		if code, body := c.post(tc.route, tc.body); code != tc.code || !strings.Contains(string(body), tc.want) {
			t.Errorf("POST /nemo/%s %.50q: %d %s; want %d saying %q", tc.route, tc.body, code, body, tc.code, tc.want)
		}
	}
	a, b := newNemoClient(t, haddr), newNemoClient(t, haddr)
	sa := a.seed(nemoRow(4, "bob"))
	sb := b.seed(nemoRow(5, "carol"))
	if sa == sb {
		t.Fatalf("two seeds gave one session %s", sa)
	}

	// Isolation: b's cookie reaches b's session, a forged or missing one nothing.
	var ob org.Observation
	if out := b.call("observe", map[string]any{}); json.Unmarshal(out.Observation, &ob) != nil || ob.Session != sb || ob.Member != "carol" {
		t.Fatalf("b observes %+v (%s); want carol's turn of %s", ob, out.Observation, sb)
	}
	forged := newNemoClient(t, haddr)
	u, _ := url.Parse("http://" + haddr + "/nemo/")
	forged.c.Jar.SetCookies(u, []*http.Cookie{{Name: "corpsim_nemo", Value: sa}})
	for _, c := range []*nemoClient{forged, newNemoClient(t, haddr)} {
		for _, route := range []string{"observe", "claim", "verify", "step", "close"} {
			if code, body := c.post(route, map[string]any{"task": "api"}); code != http.StatusNotFound || !strings.Contains(string(body), `"detail"`) {
				t.Errorf("POST /nemo/%s without a session's cookie: %d %s; want 404 with a detail", route, code, body)
			}
		}
	}

	// Capacity: a third session is refused, not crashed on.
	if code, body := newNemoClient(t, haddr).post("seed_session", nemoRow(6, "erin")); code != http.StatusServiceUnavailable || !strings.Contains(string(body), "NeMo Gym sessions") {
		t.Errorf("a third seed with --max-sessions 2 and --nemo-max-sessions 2: %d %s; want 503", code, body)
	}

	for _, tc := range []struct {
		route string
		body  []byte
		code  int
	}{
		{"verify", []byte(`"a string"`), 400},
		{"verify", []byte(`{"response":`), 400},
		{"step", []byte(`{}`), 400},
		{"step", []byte(`{"response": 7}`), 400},
	} {
		if code, body := b.post(tc.route, tc.body); code != tc.code {
			t.Errorf("POST /nemo/%s %s: %d %s; want %d", tc.route, tc.body, code, body, tc.code)
		}
	}

	// An abrupt disconnect: a tool call whose body never arrives in full.
	cookie := b.c.Jar.Cookies(u)[0]
	conn, err := net.Dial("tcp", haddr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "POST /nemo/claim HTTP/1.1\r\nHost: %s\r\nCookie: %s=%s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"task\":", haddr, cookie.Name, cookie.Value)
	conn.Close()

	// a plays bob to the end; b's session goes on untouched and still answers.
	calls, final := playGreedy(t, a)
	if final.Status != "finished" || final.Score == nil {
		t.Fatalf("the last call's output %+v; want finished with the team score", final)
	}
	if out := b.call("observe", map[string]any{}); out.Turn == 0 && !out.Done {
		t.Errorf("b's session does not answer after the disconnect: %+v", out)
	}
	verifyBody := map[string]any{"responses_create_params": map[string]any{"input": "Play bob."}, "response": map[string]any{"output": []any{}}, "task_id": "t-1"}
	code, body := a.post("verify", verifyBody)
	var v struct {
		Reward           *float64           `json:"reward"`
		RewardComponents map[string]float64 `json:"reward_components"`
		TaskID           string             `json:"task_id"`
		Response         map[string]any     `json:"response"`
		Corpsim          struct {
			Session, Member, Status string
			Complete                bool
		} `json:"corpsim"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &v) != nil || v.Reward == nil {
		t.Fatalf("verify: %d %s", code, body)
	}
	if v.TaskID != "t-1" || v.Response == nil || v.Corpsim.Session != sa || v.Corpsim.Status != "finished" || !v.Corpsim.Complete {
		t.Errorf("verify does not echo the body, or names the wrong session: %s", body)
	}
	// b's verify plays b's session to its end (carol idle) and scores it alone.
	code, bbody := b.post("verify", map[string]any{"response": map[string]any{"output": []any{}}})
	var vb struct {
		Reward  float64 `json:"reward"`
		Corpsim struct{ Session, Status string }
	}
	if code != http.StatusOK || json.Unmarshal(bbody, &vb) != nil || vb.Corpsim.Session != sb || vb.Corpsim.Status != "finished" {
		t.Fatalf("b's verify: %d %s", code, bbody)
	}
	// A closed session frees its slot.
	if code, body := a.post("close", map[string]any{}); code != http.StatusOK {
		t.Fatalf("close: %d %s", code, body)
	}
	if code, body := a.post("observe", map[string]any{}); code != http.StatusNotFound {
		t.Errorf("observe after close: %d %s; want 404", code, body)
	}
	e := newNemoClient(t, haddr)
	e.seed(nemoRow(7, "erin"))
	metrics := scrapeText(t, haddr)
	if code, body := e.post("close", map[string]any{}); code != http.StatusOK { // stopped: serve need not wait for its turn to stop
		t.Fatalf("close: %d %s", code, body)
	}
	sp.stop(t, 20*time.Second)

	res := scoreOf(t, data, sa)
	if math.Abs(*v.Reward-res.Score.TeamScore) > 1e-6 || math.Abs(v.RewardComponents["team"]-res.Score.TeamScore) > 1e-6 {
		t.Errorf("verify's reward %g (components %v); corpsim score says %g", *v.Reward, v.RewardComponents, res.Score.TeamScore)
	}
	if got, want := v.RewardComponents["member"], deliveredBy(res, "bob"); math.Abs(got-want) > 1e-6 {
		t.Errorf("reward_components.member %g; corpsim score says bob delivered %g", got, want)
	}
	if res.Score.TeamScore <= 0 {
		t.Errorf("team score %g: greedy bob should have earned something", res.Score.TeamScore)
	}
	if rb := scoreOf(t, data, sb); math.Abs(vb.Reward-rb.Score.TeamScore) > 1e-6 {
		t.Errorf("b's reward %g; corpsim score of %s says %g", vb.Reward, sb, rb.Score.TeamScore)
	}
	l := mustOpenStore(t, data)
	defer l.Close()
	var malformed []string
	for _, ev := range eventsOf(t, l, sa, payload.EvActionRejected) {
		p := payloadOf[payload.ActionRejected](t, ev)
		if ev.Actor == "bob" && p.Action.Type == "invalid" {
			malformed = append(malformed, p.Kind+": "+p.Action.Text)
		}
	}
	if len(malformed) != 4 || !strings.Contains(malformed[0], `unknown tool "fly"`) || !strings.Contains(malformed[1], `unknown tool "get"`) || !strings.HasPrefix(malformed[0], "malformed") {
		t.Errorf("the log records bob's malformed calls as %q; want the 4, kind malformed", malformed)
	}
	for _, want := range []string{`corpsim_adapter_steps_total{adapter="nemo"}`, `corpsim_adapter_errors_total{adapter="nemo",code="no_session"}`,
		`corpsim_adapter_errors_total{adapter="nemo",code="capacity"}`, `corpsim_adapter_errors_total{adapter="nemo",code="bad_call"}`,
		`corpsim_adapter_errors_total{adapter="nemo",code="disconnected"}`, `corpsim_adapter_sessions{adapter="nemo"} 2`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics has no %s", want)
		}
	}
	t.Logf("bob played %d calls; team score %.2f, bob delivered %.2f; carol idle: %.2f", calls, res.Score.TeamScore, deliveredBy(res, "bob"), vb.Reward)
}

// scrapeText reads the --http listener's /metrics.
func scrapeText(t *testing.T, haddr string) string {
	t.Helper()
	resp, err := http.Get("http://" + haddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestNemoGymResetStep: the Gymnasium-style routes. reset gives the first
// observation as text; each step takes the model's response, its
// function_call items being one turn's actions, and returns the next
// observation, the reward since the last step and one tool output per
// call; the episode ends terminated (finished), and its rewards add up to
// the team score `corpsim score` reports.
func TestNemoGymResetStep(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real corpsim")
	}
	data, haddr := filepath.Join(t.TempDir(), "data"), freeAddr(t)
	sp := startServe(t, data, "--http", haddr)
	n := newNemoClient(t, haddr)
	code, body := n.post("reset", nemoRow(4, "bob"))
	var reset struct {
		Observation *string `json:"observation"`
		Info        struct {
			Session               string     `json:"session"`
			Turn                  uint64     `json:"turn"`
			SupportsExplicitClose bool       `json:"supports_explicit_close"`
			Tools                 []nemoTool `json:"tools"`
		} `json:"info"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &reset) != nil || reset.Observation == nil || reset.Info.Turn == 0 || !reset.Info.SupportsExplicitClose {
		t.Fatalf("reset: %d %s", code, body)
	}
	// A step answers with the next observation: reset offers the
	// actions, not observe.
	if n := len(reset.Info.Tools); n == 0 || reset.Info.Tools[n-1].Name != "observe" {
		reset.Info.Tools = append(reset.Info.Tools, nemoTool{Type: "function", Name: "observe"})
	} else {
		t.Errorf("reset's info lists observe among its tools")
	}
	checkNemoTools(t, "reset", reset.Info.Tools, "startup")
	text := *reset.Observation
	var total float64
	steps, outputs := 0, 0
	for {
		steps++
		if steps > 5000 {
			t.Fatal("no end within 5000 steps")
		}
		var o org.Observation
		if err := json.Unmarshal([]byte(text), &o); err != nil {
			t.Fatalf("step %d: the observation is not an observation's JSON: %v: %.100q", steps, err, text)
		}
		acts, _ := (&agents.Greedy{}).Decide(context.Background(), o)
		output := []any{map[string]any{"type": "reasoning", "id": "rs", "summary": []any{}}}
		for i, a := range acts {
			name, args, err := agents.ToolCallFromAction(a)
			if err != nil {
				t.Fatal(err)
			}
			output = append(output, map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d", i), "call_id": fmt.Sprintf("call_%d_%d", steps, i),
				"name": name, "arguments": string(args), "status": "completed"})
		}
		if steps == 2 {
			output = append(output, map[string]any{"type": "function_call", "call_id": "bad", "name": "teleport", "arguments": "{}"})
		}
		if steps == 3 { // over the limit: the turn is refused whole, and the log says so
			for i := len(output) - 1; i <= org.MaxActions; i++ {
				output = append(output, map[string]any{"type": "function_call", "call_id": fmt.Sprintf("over_%d", i), "name": "teleport", "arguments": "{}"})
			}
		}
		code, body := n.post("step", map[string]any{"responses_create_params": map[string]any{"input": "Play bob."},
			"response": map[string]any{"id": "resp", "output": output}})
		var st struct {
			Observation *string `json:"observation"`
			Reward      float64 `json:"reward"`
			Terminated  bool    `json:"terminated"`
			Truncated   bool    `json:"truncated"`
			Info        struct {
				ToolOutputs []struct {
					CallID string `json:"call_id"`
					Output string `json:"output"`
				} `json:"tool_outputs"`
				Status string `json:"status"`
			} `json:"info"`
		}
		if code != http.StatusOK || json.Unmarshal(body, &st) != nil {
			t.Fatalf("step %d: %d %s", steps, code, body)
		}
		total += st.Reward
		if want := len(output) - 1; len(st.Info.ToolOutputs) != want {
			t.Fatalf("step %d: %d tool outputs for %d calls: %s", steps, len(st.Info.ToolOutputs), want, body)
		}
		outputs += len(st.Info.ToolOutputs)
		if steps == 3 {
			want := fmt.Sprintf("refused (malformed): reply has %d actions; the limit is %d", len(output)-1, org.MaxActions)
			for _, o := range st.Info.ToolOutputs {
				if !strings.Contains(o.Output, want) {
					t.Errorf("the output of %s in a step of %d calls: %q; want it to say %q", o.CallID, len(output)-1, o.Output, want)
				}
			}
		}
		if steps == 2 {
			last := st.Info.ToolOutputs[len(st.Info.ToolOutputs)-1]
			if last.CallID != "bad" || !strings.Contains(last.Output, `unknown tool \"teleport\"`) {
				t.Errorf("the output of the unknown tool: %+v", last)
			}
		}
		if st.Terminated || st.Truncated {
			if !st.Terminated || st.Info.Status != "finished" || st.Observation != nil {
				t.Errorf("the episode ended %s: terminated %v, truncated %v; want terminated, finished, no observation", body, st.Terminated, st.Truncated)
			}
			break
		}
		if st.Observation == nil {
			t.Fatalf("step %d: no observation and not ended: %s", steps, body)
		}
		text = *st.Observation
	}
	if code, body := n.post("close", map[string]any{}); code != http.StatusOK {
		t.Errorf("close: %d %s", code, body)
	}
	sp.stop(t, 20*time.Second)
	if out, errs, code := runCLI(t, "log", "--data", data, "--type", "action.rejected", reset.Info.Session); code != 0 || !strings.Contains(out, "the limit is 16") {
		t.Errorf("the log of the session holds no rejection of the step over the limit (exit %d, %s):\n%s", code, errs, out)
	}
	res := scoreOf(t, data, reset.Info.Session)
	if math.Abs(total-res.Score.TeamScore) > 1e-6 || res.Score.TeamScore <= 0 {
		t.Errorf("the steps' rewards add up to %g; corpsim score says %g", total, res.Score.TeamScore)
	}
	t.Logf("%d steps, %d tool outputs, rewards %.2f", steps, outputs, total)
}

// TestNemoGymAtTheRoot: with --nemo-listen the same routes answer at the
// root of a listener of their own, as NeMo Gym's clients address a
// resources server (host:port + route, no prefix).
func TestNemoGymAtTheRoot(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real corpsim")
	}
	data, haddr, naddr := filepath.Join(t.TempDir(), "data"), freeAddr(t), freeAddr(t)
	sp := startServe(t, data, "--http", haddr, "--nemo-listen", naddr)
	if !strings.Contains(sp.stdout.String(), "NeMo Gym resources server also on http://"+naddr+"/") {
		t.Errorf("serve does not say where the root routes are:\n%s", sp.stdout.String())
	}
	n := newNemoClient(t, naddr)
	n.base = "http://" + naddr + "/"
	session := n.seed(nemoRow(3, "bob"))
	calls, _ := playGreedy(t, n)
	code, body := n.post("verify", map[string]any{"responses_create_params": map[string]any{"input": "Play bob."}})
	var v struct {
		Reward float64 `json:"reward"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &v) != nil {
		t.Fatalf("verify at the root: %d %s", code, body)
	}
	sp.stop(t, 20*time.Second)
	res := scoreOf(t, data, session)
	if math.Abs(v.Reward-res.Score.TeamScore) > 1e-6 || calls == 0 {
		t.Fatalf("verify at the root: reward %.4f after %d calls, corpsim score %.4f", v.Reward, calls, res.Score.TeamScore)
	}
	_, errs, code2 := runCLI(t, "serve", "--data", t.TempDir(), "--nemo-listen", freeAddr(t))
	if code2 != 2 || !strings.Contains(errs, "--nemo-listen") {
		t.Errorf("--nemo-listen without --http: exit %d, %s", code2, errs)
	}
}

// TestNemoGymShutdownEndsItsSessions: a NeMo Gym session is named by a
// cookie this process alone knows, so serve stops it on SIGTERM instead of
// keeping it to resume with no client.
func TestNemoGymShutdownEndsItsSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real corpsim")
	}
	data, haddr := filepath.Join(t.TempDir(), "data"), freeAddr(t)
	sp := startServe(t, data, "--http", haddr)
	n := newNemoClient(t, haddr)
	session := n.seed(nemoRow(5, "bob"))
	n.call("observe", map[string]any{})
	sp.stop(t, 20*time.Second)
	if strings.Contains(sp.stdout.String(), session) {
		t.Errorf("serve keeps %s to resume, though no client could play it after a restart:\n%s", session, sp.stdout.String())
	}
	l := mustOpenStore(t, data)
	defer l.Close()
	m, err := l.Session(context.Background(), session)
	if err != nil || m.Status != events.StatusInterrupted {
		t.Fatalf("the NeMo Gym session is %v (%v), want interrupted", m.Status, err)
	}
}

// TestNemoGymMaxSessions: --nemo-max-sessions bounds the NeMo Gym
// sessions below the server's own capacity (the routes take no token), and
// the server still runs sessions of the authenticated seats past it.
func TestNemoGymMaxSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real corpsim")
	}
	data, haddr := filepath.Join(t.TempDir(), "data"), freeAddr(t)
	sp := startServe(t, data, "--http", haddr, "--nemo-max-sessions", "1")
	newNemoClient(t, haddr).seed(nemoRow(3, "bob"))
	code, body := newNemoClient(t, haddr).post("seed_session", nemoRow(4, "bob"))
	if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "already holds 1 NeMo Gym sessions") {
		t.Fatalf("a second NeMo Gym session past --nemo-max-sessions 1: %d %s; want 503", code, body)
	}
	token, err := os.ReadFile(filepath.Join(data, "operator.token"))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", "http://"+haddr+"/v1/sessions", strings.NewReader(`{"world":"startup","seed":5,"agents":"greedy"}`))
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("an operator's session beside the NeMo Gym one: HTTP %d %s; want 201", resp.StatusCode, b)
	}
	sp.stop(t, 20*time.Second)
	// By default strangers hold at most half of --max-sessions.
	haddr = freeAddr(t)
	sp = startServe(t, filepath.Join(t.TempDir(), "data"), "--http", haddr, "--max-sessions", "2")
	newNemoClient(t, haddr).seed(nemoRow(3, "bob"))
	if code, body := newNemoClient(t, haddr).post("seed_session", nemoRow(4, "bob")); code != http.StatusServiceUnavailable || !strings.Contains(string(body), "already holds 1 NeMo Gym sessions") {
		t.Fatalf("a second NeMo Gym session with --max-sessions 2 and no --nemo-max-sessions: %d %s; want 503", code, body)
	}
	sp.stop(t, 20*time.Second)
	if _, errs, code := runCLI(t, "serve", "--data", t.TempDir(), "--max-sessions", "2", "--nemo-max-sessions", "3"); code != 2 || !strings.Contains(errs, "--nemo-max-sessions 3") {
		t.Errorf("--nemo-max-sessions above --max-sessions: exit %d, %s; want a usage error", code, errs)
	}
}
