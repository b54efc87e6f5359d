package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/worlds"
)

// responsesGreedy is an OpenAI Responses endpoint (POST /v1/responses)
// that plays greedy: it reads the observation out of the last input item,
// a user message, and answers with greedy's actions as function_call
// items. It counts the requests and the function_call_output items that
// said "accepted", and refuses requests that are not in the Responses
// shape.
type responsesGreedy struct {
	t        testing.TB
	mu       sync.Mutex
	requests int
	accepted int
	fail     bool // answer every request 500
}

// startupTools is how many tools a seat of startup is offered (the
// sessions' world): its actions as `corpsim tools --world startup` lists them.
func startupTools(t testing.TB) int {
	w, err := worlds.Shipped("startup")
	if err != nil {
		t.Fatal(err)
	}
	return len(agents.ToolDefsFor(w))
}

func (f *responsesGreedy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model        string `json:"model"`
		Instructions string `json:"instructions"`
		Input        []struct {
			Type    string `json:"type"`
			Role    string `json:"role"`
			Content string `json:"content"`
			Output  string `json:"output"`
		} `json:"input"`
		Tools []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tools"`
		Messages json.RawMessage `json:"messages"`
	}
	if r.URL.Path != "/v1/responses" || r.Header.Get("Authorization") != "Bearer test-key" {
		http.Error(w, "bad request "+r.URL.Path, http.StatusBadRequest)
		return
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Input) == 0 || req.Messages != nil ||
		len(req.Tools) != startupTools(f.t) || req.Tools[0].Type != "function" || req.Tools[0].Name == "" || req.Instructions == "" {
		f.t.Errorf("a request not in the Responses shape, or not offering startup's %d tools (%d; %v)", startupTools(f.t), len(req.Tools), err)
		http.Error(w, "not a Responses request", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests++
	for _, it := range req.Input {
		if it.Type == "function_call_output" && it.Output == "accepted" {
			f.accepted++
		}
	}
	fail := f.fail
	f.mu.Unlock()
	if fail {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"error":{"message":"scripted outage","type":"server_error"}}`)
		return
	}
	last := req.Input[len(req.Input)-1]
	lines := strings.Split(last.Content, "\n")
	var o org.Observation
	if last.Type != "message" || last.Role != "user" || len(lines) < 2 || json.Unmarshal([]byte(lines[1]), &o) != nil {
		f.t.Errorf("the last input item is not an observation: %.200q", last.Content)
		http.Error(w, "no observation", http.StatusBadRequest)
		return
	}
	acts, _ := (&agents.Greedy{}).Decide(r.Context(), o)
	output := []any{map[string]any{"type": "reasoning", "id": "rs_1", "summary": []any{}}}
	for i, a := range acts {
		name, args, err := agents.ToolCallFromAction(a)
		if err != nil {
			f.t.Errorf("greedy's %+v: %v", a, err)
		}
		output = append(output, map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d_%d", o.Turn, i),
			"call_id": fmt.Sprintf("call_%d_%d", o.Turn, i), "name": name, "arguments": string(args), "status": "completed"})
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"id": fmt.Sprintf("resp_%d", o.Turn), "object": "response",
		"status": "completed", "model": req.Model, "output": output, "error": nil})
}

func (f *responsesGreedy) counts() (requests, accepted int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests, f.accepted
}

// TestRunWithResponsesSeat: `corpsim run --agents greedy,bob=llm --llm-api
// responses` plays bob over the Responses API against an endpoint that
// plays greedy. Bob's function calls are applied: the session ends in the
// state, and with the score, of an all-greedy run of the same seed, and the
// agent reported them accepted. --llm-api takes chat or responses only, and
// an endpoint that fails every call fails the session with recorded turn
// errors, as for chat.
func TestRunWithResponsesSeat(t *testing.T) {
	f := &responsesGreedy{t: t}
	srv := httptest.NewServer(f)
	defer srv.Close()
	t.Setenv("TEST_LLM_KEY", "test-key")
	llmArgs := []string{"--llm-api", "responses", "--llm-base-url", srv.URL + "/v1", "--llm-model", "fake", "--llm-key-env", "TEST_LLM_KEY"}
	res := cliResult(t, append([]string{"run", "--ephemeral", "--seed", "4", "--agents", "greedy,bob=llm"}, llmArgs...)...)
	ref := cliResult(t, "run", "--ephemeral", "--seed", "4", "--agents", "greedy")
	requests, accepted := f.counts()
	if res.Agents["bob"] != "llm" || requests < 5 || accepted == 0 {
		t.Fatalf("bob played by %q; the endpoint was asked %d times and told of %d accepted calls", res.Agents["bob"], requests, accepted)
	}
	if res.StateHash != ref.StateHash || res.Score.TeamScore != ref.Score.TeamScore || res.Events != ref.Events {
		t.Errorf("bob over the Responses API: state %s, score %.2f, %d events; greedy: %s, %.2f, %d",
			res.StateHash, res.Score.TeamScore, res.Events, ref.StateHash, ref.Score.TeamScore, ref.Events)
	}

	if _, errs, code := runCLI(t, "run", "--ephemeral", "--agents", "greedy,bob=llm", "--llm-api", "completions", "--llm-model", "m"); code != 2 || !strings.Contains(errs, "--llm-api") {
		t.Errorf("--llm-api completions: exit %d (%s), want 2 naming the flag", code, errs)
	}

	f.mu.Lock()
	f.fail = true
	f.mu.Unlock()
	out, errs, code := runCLI(t, append([]string{"run", "--ephemeral", "--json", "--agents", "llm"}, llmArgs...)...)
	var failed struct {
		Ended   string `json:"ended"`
		Failure string `json:"failure"`
		Score   struct {
			TurnErrors int `json:"turn_errors"`
			Turns      int `json:"turns"`
		} `json:"score"`
	}
	if code != 1 || json.Unmarshal([]byte(out), &failed) != nil {
		t.Fatalf("run against a failing endpoint exited %d, want 1: %s%s", code, out, errs)
	}
	if failed.Ended != "agents_failed" || failed.Score.TurnErrors == 0 || failed.Score.Turns != 0 || !strings.Contains(failed.Failure, "scripted outage") {
		t.Fatalf("result %+v; want ended agents_failed with turn errors naming the endpoint's message", failed)
	}
}

// TestServeWithResponsesSeat: `corpsim serve --llm-api responses` plays the
// seats a create request gives to llm over the Responses API; bob's calls
// land in the session's log (his claims and work), which ends in the state
// of an all-greedy run of the same seed.
func TestServeWithResponsesSeat(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real corpsim")
	}
	f := &responsesGreedy{t: t}
	srv := httptest.NewServer(f)
	defer srv.Close()
	t.Setenv("TEST_LLM_KEY", "test-key")
	data := filepath.Join(t.TempDir(), "data")
	sp := startServe(t, data, "--llm-api", "responses", "--llm-base-url", srv.URL+"/v1", "--llm-model", "fake", "--llm-key-env", "TEST_LLM_KEY")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	made, err := sp.op.Create(ctx, wire.CreateRequest{World: "startup", Seed: 4, Agents: "greedy,bob=llm"})
	if err != nil {
		t.Fatal(err)
	}
	sp.waitFor(t, made.Session, "the end", 2*time.Minute, func(st wire.ControlReply) bool { return st.Status == "finished" })
	sp.stop(t, 20*time.Second)

	l := mustOpenStore(t, data)
	var claims, work int
	for _, ev := range readAll(t, l, made.Session) {
		switch {
		case ev.Actor == "bob" && ev.Type == payload.EvTaskClaimed:
			claims++
		case ev.Actor == "bob" && ev.Type == payload.EvWorkStarted:
			work++
		case ev.Type == payload.EvTurnFailed:
			t.Errorf("a turn failed: %s", ev.Payload)
		}
	}
	l.Close()
	if requests, accepted := f.counts(); claims == 0 || work == 0 || accepted == 0 {
		t.Fatalf("the log holds %d claims and %d work of bob; the endpoint was asked %d times, told of %d accepted calls", claims, work, requests, accepted)
	}
	out, errs, code := runCLI(t, "replay", made.Session, "--data", data, "--json")
	var rep app.ReplayResult
	if code != 0 || json.Unmarshal([]byte(out), &rep) != nil || !rep.Match {
		t.Fatalf("replay exited %d: %s%s", code, out, errs)
	}
	ref := cliResult(t, "run", "--ephemeral", "--seed", "4", "--agents", "greedy")
	if rep.Replayed != ref.StateHash {
		t.Errorf("the served session ends in state %s, an all-greedy run in %s", rep.Replayed, ref.StateHash)
	}
}
