package tests

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/corpsim/corpsim/sim/analyze"
	"github.com/corpsim/corpsim/sim/app"
)

// TestRunWithLLMSeat: `corpsim run --agents greedy,bob=llm` plays bob with
// the llm agent against an OpenAI-compatible endpoint (a local fake that
// always asks to wait); the session finishes and records bob's turns.
func TestRunWithLLMSeat(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer test-key" {
			http.Error(w, "bad request "+r.URL.Path, http.StatusBadRequest)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{
			"role": "assistant", "content": "",
			"tool_calls": []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "wait", "arguments": "{}"}}},
		}}}})
	}))
	defer srv.Close()
	t.Setenv("TEST_LLM_KEY", "test-key")
	out, errs, code := runCLI(t, "run", "--ephemeral", "--json", "--agents", "greedy,bob=llm",
		"--llm-base-url", srv.URL+"/v1", "--llm-model", "fake", "--llm-key-env", "TEST_LLM_KEY")
	if code != 0 {
		t.Fatalf("run exited %d: %s", code, errs)
	}
	var res struct {
		Agents map[string]string   `json:"agents"`
		Score  struct{ Turns int } `json:"score"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Agents["bob"] != "llm" || calls.Load() == 0 {
		t.Fatalf("bob played by %q after %d calls to the endpoint", res.Agents["bob"], calls.Load())
	}
	_, errs, code = runCLI(t, "run", "--ephemeral", "--agents", "bob=llm,greedy")
	if code != 2 {
		t.Fatalf("llm without --llm-model: exit %d (%s), want 2", code, errs)
	}
}

// TestRunWithUnreachableLLMFails: `corpsim run --agents llm` against a
// closed local port records every failed turn (turn.failed, turn_errors),
// ends the session "agents_failed" and exits 1; `eval` reports the seeds as
// giving no result and exits 1.
func TestRunWithUnreachableLLMFails(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/v1"
	l.Close()
	out, errs, code := runCLI(t, "run", "--ephemeral", "--json", "--agents", "llm", "--llm-base-url", url, "--llm-model", "m")
	if code != 1 {
		t.Fatalf("run exited %d, want 1: %s", code, errs)
	}
	var res struct {
		Ended   string `json:"ended"`
		Failure string `json:"failure"`
		Score   struct {
			TurnErrors int `json:"turn_errors"`
			Turns      int `json:"turns"`
		} `json:"score"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if res.Ended != "agents_failed" || res.Score.TurnErrors == 0 || res.Score.Turns != 0 || !strings.Contains(res.Failure, "connection refused") {
		t.Fatalf("result %+v; want ended agents_failed with turn errors naming the refused connection", res)
	}
	if !strings.Contains(errs, "agents failed every turn") {
		t.Errorf("stderr does not say the session failed: %s", errs)
	}
	out, errs, code = runCLI(t, "eval", "--seeds", "2", "--agents", "llm", "--llm-base-url", url, "--llm-model", "m")
	if code != 1 || !strings.Contains(errs, "no seed gave a result") {
		t.Fatalf("eval exited %d (%s; %s), want 1 saying no seed gave a result", code, errs, out)
	}
	// Only bob's seat failing, the others pass every goal: eval gives the
	// seeds' results, and says per seed how many turns failed.
	out, errs, code = runCLI(t, "eval", "--seeds", "2", "--agents", "greedy,bob=llm", "--llm-base-url", url, "--llm-model", "m", "--json")
	var ev app.EvalResult
	if err := json.Unmarshal([]byte(out), &ev); code != 0 || err != nil {
		t.Fatalf("eval with bob's llm unreachable: exit %d, %v: %s %s", code, err, out, errs)
	}
	if len(ev.TurnErrors) != 2 || ev.TurnErrors[0] == 0 || ev.TurnErrors[1] == 0 || len(ev.Timeouts) != 2 {
		t.Errorf("eval's turn errors %v, timeouts %v; want bob's failed turns in each of the 2 seeds", ev.TurnErrors, ev.Timeouts)
	}
	out, _, _ = runCLI(t, "eval", "--seeds", "2", "--agents", "greedy,bob=llm", "--llm-base-url", url, "--llm-model", "m")
	if want := fmt.Sprintf("%d failed (their agent's backend), 0 timed out, in seeds 1, 2", ev.TurnErrors[0]+ev.TurnErrors[1]); !strings.Contains(out, want) {
		t.Errorf("eval's table does not say %q:\n%s", want, out)
	}
}

// TestFailedTurnsCounted: a session in which bob's llm agent meets an
// endpoint that fails its first calls (500), so that some of bob's turns
// are turn.failed and the others are answered, finishes; export, trace,
// diff and report count bob's failed turns as the log records them
// (metrics: sim/server/metrics).
func TestFailedTurnsCounted(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			http.Error(w, "overloaded", http.StatusInternalServerError)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{
			"role": "assistant", "content": "",
			"tool_calls": []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "wait", "arguments": "{}"}}},
		}}}})
	}))
	defer srv.Close()
	data := t.TempDir()
	res := cliResult(t, "run", "--seed", "3", "--data", data, "--agents", "greedy,bob=llm", "--llm-base-url", srv.URL+"/v1", "--llm-model", "m")
	failed := 0
	for _, ev := range storedEvents(t, data, res.Session) {
		if ev.Type == "turn.failed" && ev.Actor == "bob" {
			failed++
		}
	}
	if failed == 0 || res.Score.TurnErrors != failed {
		t.Fatalf("precondition: %d turn.failed events of bob's, the scorecard counts %d", failed, res.Score.TurnErrors)
	}

	var tr struct {
		TurnErrors int `json:"turn_errors"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, "trace", res.Session, "--member", "bob", "--json", "--data", data)), &tr); err != nil || tr.TurnErrors != failed {
		t.Errorf("trace --member bob: turn_errors %d (%v), want %d", tr.TurnErrors, err, failed)
	}
	if out := mustCLI(t, "trace", res.Session, "--member", "bob", "--data", data); !strings.Contains(out, analyze.Plural(failed, "failed turn")) ||
		!strings.Contains(out, "bob's agent could not decide turn") {
		t.Errorf("trace --member bob does not count and show the failed turns:\n%s", out)
	}
	var d struct {
		Sides []struct {
			TurnErrors int `json:"turn_errors"`
		} `json:"sides"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, "diff", res.Session, res.Session, "--json", "--data", data)), &d); err != nil || len(d.Sides) != 2 || d.Sides[0].TurnErrors != failed {
		t.Errorf("diff: %+v (%v), want turn_errors %d on each side", d.Sides, err, failed)
	}
	found := false
	for _, line := range strings.Split(strings.TrimSpace(mustCLI(t, "export", res.Session, "--format", "sft", "--data", data)), "\n") {
		var ep struct {
			Member     string `json:"member"`
			Turns      int    `json:"turns"`
			TurnErrors int    `json:"turn_errors"`
		}
		if err := json.Unmarshal([]byte(line), &ep); err != nil {
			t.Fatalf("export: %v\n%s", err, line)
		}
		if ep.Member == "bob" {
			found = true
			if ep.TurnErrors != failed || ep.Turns == 0 {
				t.Errorf("export: bob's episode has %d turns and turn_errors %d; want some and %d", ep.Turns, ep.TurnErrors, failed)
			}
		}
	}
	if !found {
		t.Error("export has no episode of bob's")
	}
	html := filepath.Join(t.TempDir(), "r.html")
	mustCLI(t, "report", res.Session, "-o", html, "--data", data)
	if b := mustRead(t, html); !strings.Contains(string(b), fmt.Sprintf("<b>%d</b><span>failed turns</span>", failed)) {
		t.Error("the report does not show the failed turns")
	}
}

// TestForkAndResumeAnLLMSession: `corpsim fork` and `corpsim resume` of a
// session with an llm seat play it with --llm-model (the session's own
// seats; before, the seat was left to nobody and each of its turns waited
// out its timeout), take its conversation from the latest checkpoint, and
// without --llm-model refuse at once (exit 2), naming the seat, with
// nothing stored.
func TestForkAndResumeAnLLMSession(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"message": map[string]any{
			"role": "assistant", "content": "",
			"tool_calls": []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "wait", "arguments": "{}"}}},
		}}}})
	}))
	defer srv.Close()
	data := filepath.Join(t.TempDir(), "data")
	llmFlags := []string{"--llm-base-url", srv.URL + "/v1", "--llm-model", "fake"}
	out, errs, code := runCLI(t, append([]string{"run", "--data", data, "--json", "--world", "support-desk", "--agents", "greedy,ana=llm",
		"--checkpoint-every", "500"}, llmFlags...)...)
	if code != 0 {
		t.Fatalf("run exited %d: %s", code, errs)
	}
	var parent struct {
		Session   string `json:"session"`
		Events    uint64 `json:"events"`
		StateHash string `json:"state_hash"`
	}
	if err := json.Unmarshal([]byte(out), &parent); err != nil {
		t.Fatal(err)
	}
	// Fork where one of ana's later turns began (the state it saw: the end
	// of a step), so that the fork plays on as the parent did.
	out, _, _ = runCLI(t, "log", parent.Session, "--data", data, "--type", "turn")
	var seen []uint64
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct {
			Actor   string `json:"actor"`
			Payload struct {
				Seen uint64 `json:"seen"`
			} `json:"payload"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err == nil && ev.Actor == "ana" {
			seen = append(seen, ev.Payload.Seen)
		}
	}
	if len(seen) < 20 {
		t.Fatalf("ana took %d turns", len(seen))
	}
	at := fmt.Sprint(seen[len(seen)-10])
	_, errs, code = runCLI(t, "fork", parent.Session, "--at", at, "--data", data, "--turn-timeout", "1s")
	if code != 2 || !strings.Contains(errs, "a fork of session "+parent.Session+" plays ana with the llm agent: give --llm-model") {
		t.Fatalf("fork without --llm-model: exit %d, %s; want 2 naming ana", code, errs)
	}
	out, _, _ = runCLI(t, "sessions", "--data", data, "--json")
	if n := strings.Count(out, `"id"`); n != 1 {
		t.Fatalf("%d sessions stored after the refused fork, want the parent alone: %s", n, out)
	}
	before := calls.Load()
	out, errs, code = runCLI(t, append([]string{"fork", parent.Session, "--at", at, "--data", data, "--json"}, llmFlags...)...)
	if code != 0 {
		t.Fatalf("fork exited %d: %s", code, errs)
	}
	var fork struct {
		Session   string `json:"session"`
		Events    uint64 `json:"events"`
		StateHash string `json:"state_hash"`
		Recalled  struct {
			Turns          int    `json:"turns"`
			FromCheckpoint uint64 `json:"from_checkpoint"`
		} `json:"recalled"`
	}
	if err := json.Unmarshal([]byte(out), &fork); err != nil {
		t.Fatal(err)
	}
	if fork.StateHash != parent.StateHash || fork.Events != parent.Events || calls.Load() == before {
		t.Fatalf("the fork: %+v after %d calls; want the parent's %d events and state, ana asked", fork, calls.Load()-before, parent.Events)
	}
	if fork.Recalled.FromCheckpoint == 0 {
		t.Errorf("the fork recalled %+v; want ana's conversation from a checkpoint", fork.Recalled)
	}
	out, errs, code = runCLI(t, "fork", parent.Session, "--at", at, "--data", data, "--create-only", "--json")
	if code != 0 {
		t.Fatalf("fork --create-only exited %d: %s", code, errs)
	}
	var created struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(out), &created); err != nil {
		t.Fatal(err)
	}
	if _, errs, code = runCLI(t, "resume", created.ID, "--data", data); code != 2 || !strings.Contains(errs, "session "+created.ID+" plays ana") {
		t.Fatalf("resume without --llm-model: exit %d, %s; want 2 naming ana", code, errs)
	}
	out, errs, code = runCLI(t, append([]string{"resume", created.ID, "--data", data, "--json"}, llmFlags...)...)
	if code != 0 || !strings.Contains(out, parent.StateHash) {
		t.Fatalf("resume exited %d: %s %s; want the parent's state hash", code, errs, out)
	}
	t.Logf("fork at %s: recalled %d turns since the checkpoint at %d", at, fork.Recalled.Turns, fork.Recalled.FromCheckpoint)
}
