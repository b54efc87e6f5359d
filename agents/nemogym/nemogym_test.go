package nemogym_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/httpgw"
	"github.com/corpsim/corpsim/agents/nemogym"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// fakeOps stands in for the gateway: each session's member is asked turn
// after turn until it has answered endAfter of them (0: never ends); a
// claim of task "taken" is refused in the next observation.
type fakeOps struct {
	mu      sync.Mutex
	n       int
	created []wire.CreateRequest
	stopped []string
	deleted []string // sessions Delete was asked for, each after its stop
	// finishing counts the Deletes of a session refused as running
	// before one succeeds (a session ended and still finishing).
	finishing map[string]int
	answered  map[string][][]org.Action // by token
	turn      map[string]uint64         // by token: the turn waiting
	ended     map[string]bool
	refused   map[string][]org.RejectedView
	endAfter  int
	score     float64
	full      bool                  // Create answers 503
	block     chan struct{}         // when set, Observe waits on it (or ctx)
	observed  chan struct{}         // when set, told of every Observe
	stopGate  func(context.Context) // when set, called by every stop before it is done
	stale     []org.RejectedView    // listed in every observation after an act, as a refusal an earlier turn left
}

func newFake() *fakeOps {
	return &fakeOps{answered: map[string][][]org.Action{}, turn: map[string]uint64{}, ended: map[string]bool{}, refused: map[string][]org.RejectedView{}}
}

func (f *fakeOps) Create(_ context.Context, req wire.CreateRequest) (wire.CreateReply, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.full {
		return wire.CreateReply{}, &httpgw.Error{Status: http.StatusServiceUnavailable, Msg: "too many sessions (max 1)"}
	}
	f.n++
	f.created = append(f.created, req)
	id := fmt.Sprintf("s%d", f.n)
	member := req.Agents[strings.LastIndex(req.Agents, ",")+1 : strings.LastIndex(req.Agents, "=")]
	tok := "tok-" + id
	f.turn[tok] = 1
	return wire.CreateReply{Session: id, Seats: map[string]wire.Seat{member: {Session: id, Member: member, Token: tok}}}, nil
}

func (f *fakeOps) Control(ctx context.Context, id string, op wire.ControlOp) (wire.ControlReply, error) {
	if f.stopGate != nil && op == wire.OpStop {
		f.stopGate(ctx)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if op == wire.OpStop {
		f.stopped = append(f.stopped, id)
		f.ended["tok-"+id] = true
	}
	return wire.ControlReply{Session: id, Status: "interrupted"}, nil
}

func (f *fakeOps) Delete(_ context.Context, ids []string, _ bool) ([]wire.Deleted, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []wire.Deleted
	for _, id := range ids {
		if f.finishing[id] > 0 { // ended, still finishing on the server
			f.finishing[id]--
			return out, &httpgw.Error{Status: http.StatusConflict, Msg: id + " runs here", Code: wire.DeleteRunning}
		}
		if !slices.Contains(f.stopped, id) && !f.ended[id] {
			return out, fmt.Errorf("%s runs: stop it first", id)
		}
		f.deleted = append(f.deleted, id)
		out = append(out, wire.Deleted{Session: id})
	}
	return out, nil
}

func (f *fakeOps) Score(_ context.Context, id string) (httpgw.ScoreReply, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return httpgw.ScoreReply{Session: id, Score: f.score, Complete: true}, nil
}

func (f *fakeOps) Events(_ context.Context, id string, from uint64, _ int) (httpgw.EventsReply, error) {
	p, _ := json.Marshal(payload.Reward{Team: 3, Members: map[string]float64{"bob": 1.25, "carol": 9}})
	return httpgw.EventsReply{Session: id, Events: []events.Event{{Seq: 7, Type: payload.EvReward, Payload: p}}, Last: 7, Complete: true}, nil
}

func (f *fakeOps) Observe(ctx context.Context, tok string, _ time.Duration) (httpgw.Observation, error) {
	if f.observed != nil {
		f.observed <- struct{}{}
	}
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return httpgw.Observation{}, &httpgw.Error{Status: http.StatusServiceUnavailable, Msg: "the request ended"}
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended[tok] {
		return httpgw.Observation{Done: true, Status: "finished"}, nil
	}
	n := f.turn[tok]
	body, _ := json.Marshal(org.Observation{Member: "bob", Turn: n, Rejected: f.refused[tok]})
	return httpgw.Observation{Turn: n, Body: body}, nil
}

func (f *fakeOps) Act(_ context.Context, tok string, body []byte) (httpgw.ActReply, error) {
	r, err := wire.ParseReply(body)
	if err != nil {
		return httpgw.ActReply{}, &httpgw.Error{Status: http.StatusBadRequest, Msg: err.Error()}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.Turn != f.turn[tok] {
		return httpgw.ActReply{}, &httpgw.Error{Status: http.StatusConflict, Msg: "stale"}
	}
	f.answered[tok] = append(f.answered[tok], r.Actions)
	f.refused[tok] = slices.Clone(f.stale)
	for _, a := range r.Actions {
		if a.Type == org.ActClaim && a.Task == "taken" {
			f.refused[tok] = append(f.refused[tok], org.RejectedView{Action: a, Kind: "state", Reason: "task taken is held by carol"})
		}
	}
	f.turn[tok]++
	if f.endAfter > 0 && len(f.answered[tok]) >= f.endAfter {
		f.ended[tok] = true
	}
	return httpgw.ActReply{Turn: r.Turn, Forwarded: true}, nil
}

// counter is a Recorder.
type counter struct {
	mu                      sync.Mutex
	opened, closed, stepped int
	failed                  []string
}

func (c *counter) Opened()  { c.mu.Lock(); c.opened++; c.mu.Unlock() }
func (c *counter) Closed()  { c.mu.Lock(); c.closed++; c.mu.Unlock() }
func (c *counter) Stepped() { c.mu.Lock(); c.stepped++; c.mu.Unlock() }
func (c *counter) Failed(code string) {
	c.mu.Lock()
	c.failed = append(c.failed, code)
	c.mu.Unlock()
}

// clock is a settable wall clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type harness struct {
	t     *testing.T
	ops   *fakeOps
	srv   *nemogym.Server
	http  *httptest.Server
	rec   *counter
	clock *clock
}

func mustHarness(t *testing.T, ops *fakeOps, cfg nemogym.Config) *harness {
	t.Helper()
	h := &harness{t: t, ops: ops, rec: &counter{}, clock: &clock{now: time.Unix(1e9, 0)}}
	cfg.Recorder, cfg.Now = h.rec, h.clock.Now
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: testWriter{t}, Level: hclog.Debug})
	h.srv = nemogym.New(ops, cfg)
	h.http = httptest.NewServer(h.srv.Handler())
	t.Cleanup(func() { h.http.Close(); h.srv.Close() })
	return h
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// client is a cookie jar of its own.
func (h *harness) client() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar}
}

func (h *harness) post(c *http.Client, route string, body string) (int, []byte, *http.Response) {
	h.t.Helper()
	resp, err := c.Post(h.http.URL+"/nemo/"+route, "application/json", strings.NewReader(body))
	if err != nil {
		h.t.Fatalf("POST %s: %v", route, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b, resp
}

func (h *harness) seed(c *http.Client, member string) {
	h.t.Helper()
	if code, body, _ := h.post(c, "seed_session", `{"world":"startup","member":"`+member+`"}`); code != http.StatusOK {
		h.t.Fatalf("seed: %d %s", code, body)
	}
}

type output struct {
	Result string `json:"result"`
	Error  string `json:"error"`
	Turn   uint64 `json:"turn"`
	Done   bool   `json:"done"`
}

func (h *harness) call(c *http.Client, tool, args string) output {
	h.t.Helper()
	code, body, _ := h.post(c, tool, args)
	var out struct{ Output *output }
	if code != http.StatusOK || json.Unmarshal(body, &out) != nil || out.Output == nil {
		h.t.Fatalf("%s: %d %s", tool, code, body)
	}
	return *out.Output
}

func TestSeedBuildsTheCreateRequest(t *testing.T) {
	h := mustHarness(t, newFake(), nemogym.Config{})
	c := h.client()
	code, body, _ := h.post(c, "seed_session", `{"world":"startup","seed":9,"load":1.5,"agents":"planner,alice=idle","member":"bob","turn_timeout":"2m",
		"responses_create_params":{"input":"hi","tools":[]},"expected":[1,2]}`)
	if code != http.StatusOK || !strings.Contains(string(body), `"session":"s1"`) {
		t.Fatalf("seed: %d %s", code, body)
	}
	want := wire.CreateRequest{World: "startup", Seed: 9, Load: 1.5, Agents: "planner,alice=idle,bob=remote", TurnTimeout: "2m"}
	if got := h.ops.created; len(got) != 1 || got[0] != want {
		t.Fatalf("created %+v, want %+v", got, want)
	}
	h.seed(h.client(), "carol")
	if got := h.ops.created[1].Agents; got != "greedy,carol=remote" {
		t.Errorf("a row without agents: %q, want greedy for the others", got)
	}
}

func TestToolCallsAnswerOneTurnEach(t *testing.T) {
	h := mustHarness(t, newFake(), nemogym.Config{})
	c := h.client()
	h.seed(c, "bob")
	tests := []struct {
		tool, args string
		want       org.Action
		result     string
	}{
		{"claim", `{"task":"api"}`, org.Action{Type: org.ActClaim, Task: "api"}, "accepted"},
		{"claim", `{"task":"taken"}`, org.Action{Type: org.ActClaim, Task: "taken"}, "refused (state): task taken is held by carol"},
		{"work", `{"task":"api","for":"1h"}`, org.Action{Type: org.ActWork, Task: "api", For: "1h"}, "accepted"},
		{"wait", ``, org.Action{Type: org.ActWait}, "accepted"},
		{"fly", `{}`, org.Action{Type: "invalid", Text: `unknown tool "fly" (tools: claim, work, complete, handoff, request_approval, approve, reject, escalate, message, wait, open_case, schedule_meeting, get, search, update, create, delete, decide)`}, `refused: malformed tool call: unknown tool "fly"`},
		{"claim", `{"task":`, org.Action{Type: "invalid"}, "refused: malformed tool call: arguments of claim are not a JSON object"},
		{"reject", `{"request":"r1"}`, org.Action{Type: "invalid", Text: `reject needs the argument "reason"`}, `needs the argument "reason"`},
		{"message", `{"to":"a","text":"` + strings.Repeat("x", org.MaxReplyBytes) + `"}`, org.Action{Type: "invalid", Text: "arguments of message are over 65536 bytes"}, "over 65536 bytes"},
	}
	for i, tc := range tests {
		out := h.call(c, tc.tool, tc.args)
		if !strings.Contains(out.Result, tc.result) || out.Turn != uint64(i+2) || out.Error != "" {
			t.Errorf("%s %.30s: %+v; want result %q and turn %d", tc.tool, tc.args, out, tc.result, i+2)
		}
		got := h.ops.answered["tok-s1"][i]
		if len(got) != 1 || got[0].Type != tc.want.Type || (tc.want.Text != "" && got[0].Text != tc.want.Text) || (tc.want.Type != "invalid" && got[0] != tc.want) {
			t.Errorf("%s %.30s: turn %d answered with %+v, want %+v", tc.tool, tc.args, i+1, got, tc.want)
		}
	}
	if out := h.call(c, "observe", `{}`); out.Turn != uint64(len(tests)+1) || len(h.ops.answered["tok-s1"]) != len(tests) {
		t.Errorf("observe: %+v; it must answer nothing", out)
	}
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	if h.rec.stepped != len(tests)+1 || slices.Index(h.rec.failed, nemogym.CodeBadCall) < 0 {
		t.Errorf("recorded %d steps and failures %v", h.rec.stepped, h.rec.failed)
	}
}

func TestTheCookieIsSentOnEveryAnswerAndReachesItsSessionAlone(t *testing.T) {
	ops := newFake()
	ops.endAfter = 3
	h := mustHarness(t, ops, nemogym.Config{})
	a, b := h.client(), h.client()
	h.seed(a, "bob")
	h.seed(b, "bob")
	var first string
	for i, route := range []string{"observe", "claim", "verify"} {
		code, body, resp := h.post(a, route, `{"task":"api"}`)
		var cookie *http.Cookie
		for _, ck := range resp.Cookies() {
			if ck.Name == nemogym.CookieName {
				cookie = ck
			}
		}
		if code != http.StatusOK || cookie == nil || !cookie.HttpOnly || cookie.Path != "/" {
			t.Fatalf("%s: %d %s, cookie %+v; want 200 and the session's cookie again", route, code, body, cookie)
		}
		if i == 0 {
			first = cookie.Value
		} else if cookie.Value != first {
			t.Errorf("%s: cookie %q, want %q again", route, cookie.Value, first)
		}
	}
	if n := len(h.ops.answered["tok-s2"]); n != 0 {
		t.Errorf("a's calls answered %d turns of b's session", n)
	}
	if out := h.call(b, "observe", ``); out.Turn != 1 {
		t.Errorf("b's session moved: %+v", out)
	}
}

func TestReseedReplacesTheSession(t *testing.T) {
	h := mustHarness(t, newFake(), nemogym.Config{})
	c := h.client()
	h.seed(c, "bob")
	old := c.Jar.Cookies(mustURL(t, h.http.URL))[0]
	h.seed(c, "bob")
	if !slices.Equal(h.ops.stopped, []string{"s1"}) || h.srv.Len() != 1 {
		t.Fatalf("stopped %v, %d held; want s1 stopped and one session", h.ops.stopped, h.srv.Len())
	}
	req, _ := http.NewRequest("POST", h.http.URL+"/nemo/observe", nil)
	req.AddCookie(old)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("the replaced cookie: %d, want 404", resp.StatusCode)
	}
}

func TestIdleSessionsAreDroppedAndStopped(t *testing.T) {
	ops := newFake()
	h := mustHarness(t, ops, nemogym.Config{IdleTimeout: time.Minute})
	idle, busy := h.client(), h.client()
	h.seed(idle, "bob")
	h.seed(busy, "carol")
	// busy's request is under way (waiting for a turn) while the clock passes.
	ops.block, ops.observed = make(chan struct{}), make(chan struct{}, 1)
	done := make(chan output)
	go func() { done <- h.call(busy, "observe", ``) }()
	<-ops.observed
	h.clock.add(2 * time.Minute)
	if n := h.srv.Sweep(); n != 1 {
		t.Fatalf("swept %d sessions, want the idle one", n)
	}
	close(ops.block)
	ops.observed = nil
	<-done
	if !slices.Equal(ops.stopped, []string{"s1"}) || h.srv.Len() != 1 {
		t.Fatalf("stopped %v, %d held; want s1 stopped, s2 kept", ops.stopped, h.srv.Len())
	}
	if code, _, _ := h.post(idle, "observe", ``); code != http.StatusNotFound {
		t.Errorf("the dropped session's cookie: %d, want 404", code)
	}
	h.clock.add(30 * time.Second) // busy's request ended 30s ago: not idle yet
	if n := h.srv.Sweep(); n != 0 {
		t.Errorf("swept %d sessions 30s after their last request", n)
	}
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	if h.rec.opened != 2 || h.rec.closed != 1 {
		t.Errorf("opened %d, closed %d; want 2, 1", h.rec.opened, h.rec.closed)
	}
}

func TestCapacity(t *testing.T) {
	ops := newFake()
	h := mustHarness(t, ops, nemogym.Config{MaxSessions: 1, IdleTimeout: time.Minute})
	h.seed(h.client(), "bob")
	code, body, _ := h.post(h.client(), "seed_session", `{"member":"bob"}`)
	if code != http.StatusServiceUnavailable || !strings.Contains(string(body), `"detail"`) {
		t.Fatalf("a second seed with MaxSessions 1: %d %s; want 503", code, body)
	}
	h.clock.add(2 * time.Minute) // the first is idle now: dropped to make room
	h.seed(h.client(), "bob")
	ops.mu.Lock()
	ops.full = true // the corpsim server is full
	ops.mu.Unlock()
	h.clock.add(2 * time.Minute)
	if code, body, _ := h.post(h.client(), "seed_session", `{"member":"bob"}`); code != http.StatusServiceUnavailable || !strings.Contains(string(body), "too many sessions") {
		t.Fatalf("a seed the server refuses for capacity: %d %s; want its 503", code, body)
	}
	ops.mu.Lock()
	ops.full = false
	ops.mu.Unlock()
	h.seed(h.client(), "bob") // the refused seed gave its slot back
}

func TestBodiesAreBounded(t *testing.T) {
	ops := newFake()
	ops.endAfter = 1
	h := mustHarness(t, ops, nemogym.Config{MaxBodyBytes: 1000, MaxVerifyBytes: 2000})
	c := h.client()
	pad := func(n int) string { return `{"member":"bob","pad":"` + strings.Repeat("x", n) + `"}` }
	if code, body, _ := h.post(c, "seed_session", pad(1000)); code != http.StatusRequestEntityTooLarge || !strings.Contains(string(body), "limit of 1000 bytes") {
		t.Fatalf("an oversized seed: %d %s", code, body)
	}
	h.seed(c, "bob")
	if code, _, _ := h.post(c, "step", `{"response":{"output":[]},"pad":"`+strings.Repeat("x", 1000)+`"}`); code != http.StatusRequestEntityTooLarge {
		t.Errorf("an oversized step: %d", code)
	}
	if code, _, _ := h.post(c, "verify", pad(1500)); code != http.StatusOK {
		t.Errorf("a verify within its own limit: %d", code)
	}
	if code, _, _ := h.post(c, "verify", pad(2000)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("an oversized verify: %d", code)
	}
}

func TestVerifyPlaysOutAndEchoes(t *testing.T) {
	ops := newFake()
	ops.endAfter, ops.score = 5, 12.3456789
	h := mustHarness(t, ops, nemogym.Config{})
	c := h.client()
	h.seed(c, "bob")
	h.call(c, "claim", `{"task":"api"}`)
	code, body, _ := h.post(c, "verify", `{"responses_create_params":{"input":"x"},"response":{"output":[]},"id":3}`)
	var v struct {
		Reward           float64            `json:"reward"`
		RewardComponents map[string]float64 `json:"reward_components"`
		ID               int                `json:"id"`
		Response         map[string]any     `json:"response"`
		Corpsim          struct{ Status string }
	}
	if code != http.StatusOK || json.Unmarshal(body, &v) != nil {
		t.Fatalf("verify: %d %s", code, body)
	}
	if v.Reward != 12.345679 || v.RewardComponents["team"] != 12.345679 || v.RewardComponents["member"] != 1.25 || v.ID != 3 || v.Response == nil || v.Corpsim.Status != "finished" {
		t.Errorf("verify answered %s", body)
	}
	ans := ops.answered["tok-s1"]
	if len(ans) != 5 || len(ans[1]) != 0 || len(ans[4]) != 0 {
		t.Errorf("the play-out answered %v; want the 4 turns after the claim with no action", ans)
	}
	if len(ops.stopped) != 0 {
		t.Errorf("a session that finished was stopped: %v", ops.stopped)
	}
}

func TestVerifyStopsAPlayOutThatTakesTooLong(t *testing.T) {
	ops := newFake() // never ends
	h := mustHarness(t, ops, nemogym.Config{PlayOutTimeout: 20 * time.Millisecond})
	c := h.client()
	h.seed(c, "bob")
	code, body, _ := h.post(c, "verify", `{}`)
	if code != http.StatusOK || !strings.Contains(string(body), `"status":"stopped"`) || !slices.Equal(ops.stopped, []string{"s1"}) {
		t.Fatalf("verify of an endless session: %d %s, stopped %v", code, body, ops.stopped)
	}
}

func TestStep(t *testing.T) {
	ops := newFake()
	ops.endAfter = 2
	h := mustHarness(t, ops, nemogym.Config{})
	c := h.client()
	code, body, _ := h.post(c, "reset", `{"member":"bob"}`)
	if code != http.StatusOK || !strings.Contains(string(body), `"observation":"{\"session\"`) {
		t.Fatalf("reset: %d %s", code, body)
	}
	ops.mu.Lock()
	ops.score = 4
	ops.mu.Unlock()
	step := `{"response":{"output":[{"type":"message","role":"assistant","content":[]},
		{"type":"function_call","call_id":"a","name":"claim","arguments":"{\"task\":\"taken\"}"},
		{"type":"function_call","id":"fc_b","name":"work","arguments":{"task":"api"}},
		{"type":"function_call","call_id":"c","name":"nap","arguments":"{}"}]}}`
	code, body, _ = h.post(c, "step", step)
	var st struct {
		Observation *string
		Reward      float64
		Terminated  bool
		Truncated   bool
		Info        struct {
			ToolOutputs []struct {
				CallID string `json:"call_id"`
				Output string `json:"output"`
			} `json:"tool_outputs"`
		}
	}
	if code != http.StatusOK || json.Unmarshal(body, &st) != nil || st.Observation == nil || st.Reward != 4 || st.Terminated || st.Truncated {
		t.Fatalf("step: %d %s", code, body)
	}
	if got := ops.answered["tok-s1"][0]; len(got) != 3 || got[1] != (org.Action{Type: org.ActWork, Task: "api"}) || got[2].Type != "invalid" {
		t.Errorf("the step answered its turn with %+v", got)
	}
	outs := st.Info.ToolOutputs
	if len(outs) != 3 || outs[0].CallID != "a" || !strings.Contains(outs[0].Output, "refused (state)") || outs[1].CallID != "fc_b" ||
		!strings.Contains(outs[1].Output, "accepted") || !strings.Contains(outs[2].Output, `unknown tool \"nap\"`) {
		t.Errorf("tool outputs %+v", outs)
	}
	ops.mu.Lock()
	ops.score = 10
	ops.mu.Unlock()
	code, body, _ = h.post(c, "step", `{"response":{"output":[]}}`)
	if code != http.StatusOK || json.Unmarshal(body, &st) != nil || st.Reward != 6 || !st.Terminated || st.Truncated || st.Observation != nil {
		t.Fatalf("the last step: %d %s; want reward 6, terminated", code, body)
	}
}

// TestEndSessionsStopsSeveralAtOnce: a shutdown stops the sessions
// together, not one after another (a thousand took longer than serve's
// grace). Each stop waits until another is in flight too, or for a
// second: one at a time, none would ever see another.
func TestEndSessionsStopsSeveralAtOnce(t *testing.T) {
	ops := newFake()
	var mu sync.Mutex
	inFlight, most := 0, 0
	together := make(chan struct{})
	var once sync.Once
	ops.stopGate = func(ctx context.Context) {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		if inFlight >= 2 {
			once.Do(func() { close(together) })
		}
		mu.Unlock()
		select {
		case <-together:
		case <-time.After(time.Second):
		case <-ctx.Done():
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
	}
	h := mustHarness(t, ops, nemogym.Config{})
	const sessions = 4
	for i := range sessions {
		h.seed(h.client(), fmt.Sprintf("m%d", i))
	}
	h.srv.EndSessions()
	if len(ops.stopped) != sessions || most < 2 {
		t.Fatalf("EndSessions stopped %d of %d sessions, at most %d at once; want all, several at once", len(ops.stopped), sessions, most)
	}
	if h.srv.Len() != 0 {
		t.Fatalf("%d sessions held after EndSessions", h.srv.Len())
	}
}

// A refusal of a whole reply that an earlier turn left in the observation
// (the engine clears it at the member's next turn, not at a timeout) does
// not label this step's calls: only the reply's own refusal does.
func TestStepIgnoresAnEarlierWholeRefusal(t *testing.T) {
	ops := newFake()
	ops.stale = []org.RejectedView{{Kind: org.KindMalformed, Reason: "reply has 17 actions; the limit is 16"}}
	h := mustHarness(t, ops, nemogym.Config{})
	c := h.client()
	if code, body, _ := h.post(c, "reset", `{"member":"bob"}`); code != http.StatusOK {
		t.Fatalf("reset: %d %s", code, body)
	}
	code, body, _ := h.post(c, "step", `{"response":{"output":[{"type":"function_call","call_id":"a","name":"work","arguments":"{\"task\":\"api\"}"}]}}`)
	if code != http.StatusOK || !strings.Contains(string(body), `"output":"{\"result\":\"accepted\"}"`) {
		t.Fatalf("step: %d %s; want the call accepted", code, body)
	}
}

func TestCloseEndsWaitsAndRefusesLater(t *testing.T) {
	ops := newFake()
	h := mustHarness(t, ops, nemogym.Config{})
	c := h.client()
	h.seed(c, "bob")
	ops.block, ops.observed = make(chan struct{}), make(chan struct{}, 1)
	done := make(chan output)
	go func() { done <- h.call(c, "observe", ``) }()
	<-ops.observed
	h.srv.Close()
	if out := <-done; out.Error == "" {
		t.Errorf("the waiting call after Close: %+v; want an error output", out)
	}
	if code, _, _ := h.post(h.client(), "seed_session", `{"member":"bob"}`); code != http.StatusServiceUnavailable {
		t.Errorf("a seed after Close: %d, want 503", code)
	}
	h.rec.mu.Lock()
	defer h.rec.mu.Unlock()
	if h.rec.opened != 1 || h.rec.closed != 1 {
		t.Errorf("opened %d, closed %d", h.rec.opened, h.rec.closed)
	}
}

func TestToolsAreResponsesFunctionTools(t *testing.T) {
	h := mustHarness(t, newFake(), nemogym.Config{})
	resp, err := http.Get(h.http.URL + "/nemo/tools")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tools []map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&tools); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		var name string
		_ = json.Unmarshal(tl["name"], &name)
		names = append(names, name)
		if string(tl["type"]) != `"function"` || !bytes.HasPrefix(tl["parameters"], []byte(`{"type":"object"`)) || tl["function"] != nil {
			t.Errorf("tool %s is not in the Responses shape", name)
		}
	}
	if want := append(slices.Clone(org.ActionTypes), "observe"); !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
}

// GET /nemo/tools?world=W lists the tools of W's sessions, as `corpsim
// tools --world W` does, then observe; an unknown world is a 404 naming
// the shipped ones.
func TestToolsOfAWorld(t *testing.T) {
	h := mustHarness(t, newFake(), nemogym.Config{})
	get := func(query string) (int, []byte) {
		resp, err := http.Get(h.http.URL + "/nemo/tools" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	for _, world := range []string{"startup", "billing-support"} {
		w, err := worlds.Shipped(world)
		if err != nil {
			t.Fatal(err)
		}
		code, body := get("?world=" + world)
		var got []nemogym.Tool
		if err := json.Unmarshal(body, &got); code != http.StatusOK || err != nil {
			t.Fatalf("%s: %d %v: %.200s", world, code, err, body)
		}
		want := nemogym.ToolsOf(w)
		if len(want) != len(agents.ToolDefsFor(w))+1 || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %d tools, want the world's %d and observe", world, len(got), len(agents.ToolDefsFor(w)))
		}
		var create *nemogym.Tool
		for i := range got {
			if got[i].Name == "create" {
				create = &got[i]
			}
		}
		if (create != nil) != (len(w.Systems) > 0) {
			t.Errorf("%s: create listed %v with %d systems", world, create != nil, len(w.Systems))
		}
		if create != nil && !slices.Contains(create.Parameters.Properties["record"].Enum, w.Systems[0].Types[0].ID) {
			t.Errorf("%s: create's record enum %v lacks %s", world, create.Parameters.Properties["record"].Enum, w.Systems[0].Types[0].ID)
		}
	}
	if code, body := get("?world=atlantis"); code != http.StatusNotFound || !strings.Contains(string(body), "startup") {
		t.Errorf("an unknown world: %d %s, want 404 naming the shipped worlds", code, body)
	}
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// TestMemberMustBeAnID: a row's member that is not a member's ID (a comma
// or an equals sign would be read as part of the agents' list it goes
// into) is refused before any session is made.
func TestMemberMustBeAnID(t *testing.T) {
	ops := newFake()
	h := mustHarness(t, ops, nemogym.Config{})
	for _, member := range []string{",0", "bob=greedy", " bob", "Bob", "a b"} {
		body, _ := json.Marshal(map[string]string{"world": "startup", "member": member})
		code, out, _ := h.post(h.client(), "seed_session", string(body))
		if code != http.StatusBadRequest || !strings.Contains(string(out), "is not a member's ID") {
			t.Errorf("member %q: %d %s, want 400 naming it not a member's ID", member, code, out)
		}
	}
	if len(ops.created) != 0 {
		t.Fatalf("sessions created: %+v", ops.created)
	}
}

// The routes take no token, so a row that carries a world file's text,
// names the llm agent (a world of any size, the model endpoint's credits)
// or names the oracle (told the seed's hidden truth, which its actions
// show the model beside it) needs the operator token; rows of shipped worlds and built-in agents run
// for anyone. Nothing is created for a row refused.
func TestRowsOfSourceLLMOrOracleNeedTheOperatorToken(t *testing.T) {
	h := mustHarness(t, newFake(), nemogym.Config{OperatorToken: "op-secret"})
	post := func(body, token string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("POST", h.http.URL+"/nemo/seed_session", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := h.client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	source := `{"source":"version: 1\nname: w\n","member":"bob"}`
	llm := `{"world":"startup","agents":"greedy,alice=llm","member":"bob"}`
	oracle := `{"world":"meetings","agents":"greedy,colm=oracle","member":"cara"}`
	for _, body := range []string{source, llm, oracle} {
		for _, tok := range []string{"", "wrong"} {
			if code, b := post(body, tok); code != http.StatusForbidden || !strings.Contains(b, "operator token") {
				t.Fatalf("%s with token %q: %d %s; want 403 naming the operator token", body, tok, code, b)
			}
		}
	}
	if n := len(h.ops.created); n != 0 {
		t.Fatalf("%d sessions created for rows refused", n)
	}
	if code, b := post(`{"world":"startup","member":"bob"}`, ""); code != http.StatusOK {
		t.Fatalf("a shipped world's row without a token: %d %s", code, b)
	}
	for _, body := range []string{source, llm, oracle} {
		if code, b := post(body, "op-secret"); code != http.StatusOK {
			t.Fatalf("%s with the operator token: %d %s", body, code, b)
		}
	}
	// The row sent without a token draws in the open domain, apart from
	// the operator's sessions; those with it, in the operator's.
	h.ops.mu.Lock()
	defer h.ops.mu.Unlock()
	var domains []string
	for _, c := range h.ops.created {
		domains = append(domains, c.DrawDomain)
	}
	if want := []string{wire.DrawDomainOpen, "", "", ""}; !slices.Equal(domains, want) {
		t.Errorf("draw domains of the sessions created: %q, want %q", domains, want)
	}
}

// With Discard, a session the adapter drops — closed, replaced by a new
// seed_session on the same cookie, or idle — is stopped, then its log
// deleted; without it, nothing is deleted.
func TestDiscardDeletesDroppedSessions(t *testing.T) {
	for _, discard := range []bool{false, true} {
		ops := newFake()
		ops.finishing = map[string]int{"s1": 2} // refused twice, then deleted
		h := mustHarness(t, ops, nemogym.Config{IdleTimeout: time.Minute, Discard: discard})
		closed, replaced, idle := h.client(), h.client(), h.client()
		h.seed(closed, "bob")   // s1
		h.seed(replaced, "bob") // s2
		h.seed(idle, "carol")   // s3
		if code, body, _ := h.post(closed, "close", `{}`); code != http.StatusOK {
			t.Fatalf("close: %d %s", code, body)
		}
		h.seed(replaced, "carol") // s4 replaces s2
		h.clock.add(2 * time.Minute)
		h.post(replaced, "observe", ``) // s4 is not idle
		if n := h.srv.Sweep(); n != 1 {
			t.Fatalf("swept %d sessions, want s3", n)
		}
		ops.mu.Lock()
		deleted, stopped := slices.Clone(ops.deleted), slices.Clone(ops.stopped)
		ops.mu.Unlock()
		want := []string{"s1", "s2", "s3"}
		if !discard {
			want = nil
		}
		if !slices.Equal(stopped, []string{"s1", "s2", "s3"}) || !slices.Equal(deleted, want) {
			t.Errorf("discard %v: stopped %v, deleted %v; want s1–s3 stopped, %v deleted", discard, stopped, deleted, want)
		}
	}
}
