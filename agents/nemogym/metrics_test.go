package nemogym_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents/nemogym"
)

// The routes that hold no session: /aggregate_metrics answers the
// statistics NeMo Gym's RewardProfiler makes of the replies it is sent
// (per task and over all; a usage's counts and true fields count; the
// sample standard deviation; a task of one rollout gets 0 where no field
// has two values), takes no cookie, and refuses a body that is not the
// request with 422; /reverify_mode answers "unsupported".
func TestAggregateMetrics(t *testing.T) {
	s := nemogym.New(newFake(), nemogym.Config{})
	defer s.Close()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	post := func(body string) (int, map[string]any) {
		t.Helper()
		resp, err := http.Post(srv.URL+"/nemo/aggregate_metrics", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	code, out := post(`{"verify_responses": [
		{"_ng_task_index": 0, "_ng_rollout_index": 1, "reward": 3, "task_id": "x", "corpsim": {"status": "finished"}},
		{"_ng_task_index": 0, "_ng_rollout_index": 0, "reward": 1, "response": {"usage": {"output_tokens": 4}}},
		{"_ng_task_index": 2, "_ng_rollout_index": 0, "reward": 8, "resolved": true}]}`)
	if code != http.StatusOK {
		t.Fatalf("aggregate_metrics: %d %v", code, out)
	}
	agent := out["agent_metrics"].(map[string]any)
	want := map[string]float64{
		"mean/reward": 4, "max/reward": 8, "min/reward": 1, "median/reward": 3, "std/reward": math.Sqrt(13),
		"mean/output_tokens": 4, "max/output_tokens": 4, "min/output_tokens": 4, "median/output_tokens": 4,
		"mean/resolved": 1, "max/resolved": 1, "min/resolved": 1, "median/resolved": 1,
	}
	if len(agent) != len(want) {
		t.Errorf("agent_metrics %v; want the keys of %v", agent, want)
	}
	for k, w := range want {
		if g, ok := agent[k].(float64); !ok || math.Abs(g-w) > 1e-12 {
			t.Errorf("agent_metrics[%s] = %v, want %g", k, agent[k], w)
		}
	}
	if key := out["key_metrics"].(map[string]any); len(key) != 3 || key["mean/reward"] != 4.0 {
		t.Errorf("key_metrics %v; want the three means", key)
	}
	groups := out["group_level_metrics"].([]any)
	if len(groups) != 2 {
		t.Fatalf("group_level_metrics %v; want tasks 0 and 2", groups)
	}
	g0, g2 := groups[0].(map[string]any), groups[1].(map[string]any)
	if g0["_ng_task_index"] != 0.0 || g0["mean/reward"] != 2.0 || g0["std/reward"] != math.Sqrt2 || g0["num_rollouts"] != 2.0 {
		t.Errorf("task 0: %v", g0)
	}
	if infos := g0["rollout_infos"].([]any); len(infos) != 2 || infos[0].(map[string]any)["rollout_id"] != "0:0" {
		t.Errorf("task 0's rollout_infos %v; want 0:0 first", infos)
	}
	if g2["_ng_task_index"] != 2.0 || g2["std/reward"] != 0.0 || g2["std/resolved"] != 0.0 || g2["mean/resolved"] != 1.0 {
		t.Errorf("task 2 (one rollout): %v; want std 0", g2)
	}
	if code, out := post(`{"verify_responses": []}`); code != http.StatusOK || len(out["agent_metrics"].(map[string]any)) != 0 {
		t.Errorf("no replies: %d %v", code, out)
	}
	// Values at the float64 limit: what overflows is left out, not a 500.
	if code, out := post(`{"verify_responses": [{"reward": 1e308}, {"reward": 1e308}, {"reward": -1e308}]}`); code != http.StatusOK ||
		out["agent_metrics"].(map[string]any)["max/reward"] != 1e308 {
		t.Errorf("rewards at the float64 limit: %d %v", code, out)
	}
	// A usage's count is merged over the reply's field of that name.
	if _, out := post(`{"verify_responses": [{"output_tokens": 1, "response": {"usage": {"output_tokens": 9}}}]}`); out["agent_metrics"].(map[string]any)["mean/output_tokens"] != 9.0 {
		t.Errorf("a usage's count under a field of the same name: %v; want the usage's 9", out)
	}
	// The mean is pandas' (a sum over a count); a key given twice counts
	// once, the last, as Python reads it.
	if _, out := post(`{"verify_responses": [{"reward": 0}, {"reward": 1, "response": {"usage": {"n": 5}}, "response": {"usage": {"m": 1}}}, {"reward": 0}]}`); out["agent_metrics"].(map[string]any)["mean/reward"] != 1.0/3 ||
		out["agent_metrics"].(map[string]any)["mean/n"] != nil {
		t.Errorf("rewards 0, 1, 0 and a response given twice: %v; want the mean 1/3 and the last response's usage", out["agent_metrics"])
	}
	// The bounds: what a stranger may send is read as a stream, to a point.
	if code, out := post(`{"verify_responses": [{"x": ` + strings.Repeat("[", 100000) + `}]}`); code != http.StatusUnprocessableEntity || !strings.Contains(fmt.Sprint(out), "nested") {
		t.Errorf("values nested 100,000 deep: %d %v; want 422", code, out)
	}
	var many strings.Builder
	many.WriteString(`{"verify_responses": [{`)
	for i := range nemogym.MaxAggregateFields + 1 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `"f%d": 1`, i)
	}
	many.WriteString(`}]}`)
	if code, out := post(many.String()); code != http.StatusUnprocessableEntity || !strings.Contains(fmt.Sprint(out), "distinct numeric fields") {
		t.Errorf("%d distinct fields: %d %v; want 422", nemogym.MaxAggregateFields+1, code, out)
	}
	empties := `{"verify_responses": [{}` + strings.Repeat(`,{}`, nemogym.MaxAggregateReplies) + `]}`
	if code, out := post(empties); code != http.StatusUnprocessableEntity || !strings.Contains(fmt.Sprint(out), "verify responses") {
		t.Errorf("%d replies: %d %v; want 422", nemogym.MaxAggregateReplies+1, code, out)
	}
	// The values of all the replies together are bounded too (a reply of
	// many short fields took 24 bytes a value once read: 150,000 replies
	// of 256 fields took 2 GB).
	few := nemogym.New(newFake(), nemogym.Config{MaxAggregateValues: 1000})
	defer few.Close()
	fewSrv := httptest.NewServer(few.Handler())
	defer fewSrv.Close()
	wide := func(replies int) string {
		var b strings.Builder
		b.WriteString(`{"verify_responses": [`)
		for r := range replies {
			if r > 0 {
				b.WriteString(",")
			}
			b.WriteString("{")
			for i := range 10 {
				if i > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, `"f%d": 1`, i)
			}
			b.WriteString("}")
		}
		b.WriteString(`]}`)
		return b.String()
	}
	for _, tc := range []struct {
		body string
		want int
	}{{wide(101), http.StatusUnprocessableEntity}, {wide(100), http.StatusOK}} {
		resp, err := http.Post(fewSrv.URL+"/nemo/aggregate_metrics", "application/json", strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want || (tc.want != http.StatusOK && !strings.Contains(string(b), "more than 1000 numeric values")) {
			t.Errorf("a body of %d bytes against a bound of 1,000 values: %d %s; want %d", len(tc.body), resp.StatusCode, b, tc.want)
		}
	}
	if code, _ := post(`{"verify_responses": 3}`); code != http.StatusUnprocessableEntity {
		t.Errorf("a body that is not the request: %d, want 422", code)
	}
	resp, err := http.Get(srv.URL + "/nemo/reverify_mode")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(b)) != `"unsupported"` {
		t.Errorf("reverify_mode: %d %s", resp.StatusCode, b)
	}
}

// fakeMCP is an MCPServer that records the seats it closes.
type fakeMCP struct {
	mu     sync.Mutex
	closed []string
	// entered, when set, gets a value as a request arrives, which then
	// waits for hold: an MCP session it opens is opened after whatever the
	// test does meanwhile.
	entered, hold chan struct{}
}

func (f *fakeMCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if f.entered != nil {
		f.entered <- struct{}{}
		<-f.hold
	}
	w.Header().Set("X-Bearer", r.Header.Get("Authorization"))
	w.WriteHeader(http.StatusNoContent)
}

func (f *fakeMCP) closes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.closed)
}

func (f *fakeMCP) CloseSeat(session, member string) {
	f.mu.Lock()
	f.closed = append(f.closed, session+"/"+member)
	f.mu.Unlock()
}

// With an MCP server, seed_session's reply offers /nemo/mcp with a token
// of its own (not the cookie), which reaches the MCP server under the
// seat's token; a session dropped as idle has its seat's MCP sessions
// closed, and its token reaches nothing any more.
func TestMCPSessionsEndWithTheirSession(t *testing.T) {
	ops, mcp := newFake(), &fakeMCP{}
	h := mustHarness(t, ops, nemogym.Config{IdleTimeout: time.Minute, MCP: mcp})
	c := h.client()
	code, body, _ := h.post(c, "seed_session", `{"member":"bob"}`)
	var seeded struct {
		MCP struct {
			URLPath string            `json:"url_path"`
			Headers map[string]string `json:"headers"`
		} `json:"mcp"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &seeded) != nil || seeded.MCP.URLPath != "/mcp" {
		t.Fatalf("seed_session: %d %s", code, body)
	}
	tok := seeded.MCP.Headers[nemogym.MCPTokenHeader]
	mcpPost := func() *http.Response {
		req, _ := http.NewRequest(http.MethodPost, h.http.URL+"/nemo/mcp", strings.NewReader(`{}`))
		req.Header.Set(nemogym.MCPTokenHeader, tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := mcpPost(); resp.StatusCode != http.StatusNoContent || !strings.HasPrefix(resp.Header.Get("X-Bearer"), "Bearer ") {
		t.Fatalf("/nemo/mcp: %d, bearer %q; want the MCP server's answer under the seat's token", resp.StatusCode, resp.Header.Get("X-Bearer"))
	}
	for _, ck := range c.Jar.Cookies(mustURL(t, h.http.URL)) {
		if ck.Value == tok {
			t.Fatal("the MCP token is the cookie")
		}
	}
	h.clock.add(2 * time.Minute)
	if n := h.srv.Sweep(); n != 1 {
		t.Fatalf("swept %d", n)
	}
	mcp.mu.Lock()
	closed := slices.Clone(mcp.closed)
	mcp.mu.Unlock()
	if len(closed) != 1 || !strings.HasSuffix(closed[0], "/bob") {
		t.Fatalf("MCP seats closed %v; want bob's", closed)
	}
	if resp := mcpPost(); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/nemo/mcp after the session was dropped: %d, want 401", resp.StatusCode)
	}
}

// An MCP request under way while its NeMo Gym session is closed may open
// an MCP session after the close has closed the seat's: the seat's MCP
// sessions are closed again once that request has returned.
func TestMCPRequestRacingClose(t *testing.T) {
	ops := newFake()
	mcp := &fakeMCP{entered: make(chan struct{}), hold: make(chan struct{})}
	h := mustHarness(t, ops, nemogym.Config{IdleTimeout: time.Minute, MCP: mcp})
	c := h.client()
	code, body, _ := h.post(c, "seed_session", `{"member":"bob"}`)
	var seeded struct {
		MCP struct {
			Headers map[string]string `json:"headers"`
		} `json:"mcp"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &seeded) != nil {
		t.Fatalf("seed_session: %d %s", code, body)
	}
	done := make(chan int)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, h.http.URL+"/nemo/mcp", strings.NewReader(`{}`))
		req.Header.Set(nemogym.MCPTokenHeader, seeded.MCP.Headers[nemogym.MCPTokenHeader])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	<-mcp.entered // the request is in the MCP server
	if code, body, _ := h.post(c, "close", `{}`); code != http.StatusOK {
		t.Fatalf("close: %d %s", code, body)
	}
	if got := mcp.closes(); len(got) != 1 {
		t.Fatalf("the close closed the seat's MCP sessions %d times, want once", len(got))
	}
	close(mcp.hold) // the request opens its MCP session now, after the close
	if code := <-done; code != http.StatusNoContent {
		t.Fatalf("the racing request: %d", code)
	}
	if got := mcp.closes(); len(got) != 2 || got[1] != got[0] {
		t.Fatalf("the seat's MCP sessions were closed %v; want again once the racing request returned", got)
	}
}
