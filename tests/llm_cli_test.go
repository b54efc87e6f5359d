package tests

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
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
}
