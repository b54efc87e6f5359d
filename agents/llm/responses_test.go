package llm_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/llm"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim/app"
)

// respRequest is what the fake Responses endpoint reads of a request: the
// raw JSON of every tool and input item too, to check what keys they carry.
type respRequest struct {
	Model        string            `json:"model"`
	Instructions string            `json:"instructions"`
	Input        []json.RawMessage `json:"input"`
	Tools        []json.RawMessage `json:"tools"`
	ToolChoice   string            `json:"tool_choice"`
	Temperature  *float64          `json:"temperature"`
	Store        *bool             `json:"store"`
	Previous     string            `json:"previous_response_id"`
}

// respItem is one input item, as the fake reads it.
type respItem struct {
	Type      string  `json:"type"`
	Role      string  `json:"role"`
	Content   *string `json:"content"`
	CallID    string  `json:"call_id"`
	Name      string  `json:"name"`
	Arguments *string `json:"arguments"`
	Output    *string `json:"output"`
}

func (r respRequest) items(tb testing.TB) []respItem {
	tb.Helper()
	out := make([]respItem, len(r.Input))
	for i, raw := range r.Input {
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&out[i]); err != nil {
			tb.Errorf("input item %d (%s): %v", i, raw, err)
		}
	}
	return out
}

// asChat reads a Responses request as the chat conversation it carries, so
// that the chat tests' players (script, sensible) can answer it.
func (r respRequest) asChat(tb testing.TB) chatRequest {
	c := chatRequest{Model: r.Model, ToolChoice: r.ToolChoice, Temperature: r.Temperature}
	sys := r.Instructions
	c.Messages = append(c.Messages, chatMessage{Role: "system", Content: &sys})
	for _, it := range r.items(tb) {
		switch it.Type {
		case "message":
			c.Messages = append(c.Messages, chatMessage{Role: it.Role, Content: it.Content})
		case "function_call_output":
			c.Messages = append(c.Messages, chatMessage{Role: "tool", ToolCallID: it.CallID, Content: it.Output})
		}
	}
	return c
}

// respFake is an OpenAI Responses endpoint. It answers with the calls of
// answer as function_call items (after a reasoning item and a text
// message), or, when raw is set, with raw's status and body as they are.
type respFake struct {
	t      testing.TB
	mu     sync.Mutex
	reqs   []respRequest
	auth   []string
	answer func(chatRequest) (int, []call)
	raw    func(n int) (int, string)
}

func (f *respFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		http.Error(w, "not found: "+r.URL.Path, http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req respRequest
	if err := json.Unmarshal(body, &req); err != nil {
		f.t.Errorf("request body is not JSON: %v", err)
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	n := len(f.reqs)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if f.raw != nil {
		status, b := f.raw(n)
		w.WriteHeader(status)
		io.WriteString(w, b)
		return
	}
	status, calls := f.answer(req.asChat(f.t))
	if status != http.StatusOK {
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"scripted failure %d","type":"server_error","code":null}}`, status)
		return
	}
	output := []any{
		map[string]any{"type": "reasoning", "id": fmt.Sprintf("rs_%d", n), "summary": []any{}},
		map[string]any{"type": "message", "id": fmt.Sprintf("msg_%d", n), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": fmt.Sprintf("thinking about turn %d", n), "annotations": []any{}}}},
	}
	for i, c := range calls {
		output = append(output, map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d_%d", n, i),
			"call_id": c.id, "name": c.name, "arguments": c.arguments, "status": "completed"})
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"id": fmt.Sprintf("resp_%d", n), "object": "response",
		"status": "completed", "model": req.Model, "output": output, "error": nil, "incomplete_details": nil})
}

func (f *respFake) requests() []respRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

func mustServeResponses(tb testing.TB, f *respFake) *httptest.Server {
	tb.Helper()
	f.t = tb
	srv := httptest.NewServer(f)
	tb.Cleanup(srv.Close)
	return srv
}

func responsesAgent(tb testing.TB, srv *httptest.Server, o llm.Options) *llm.Agent {
	o.BaseURL, o.API = srv.URL+"/v1", llm.APIResponses
	if o.Model == "" {
		o.Model = "m"
	}
	return mustAgent(tb, o)
}

func TestResponsesRequestShape(t *testing.T) {
	f := &respFake{answer: script(
		[]call{{"c1", "claim", `{"task":"api"}`}, {"c2", "work", `{"task":"api","for":"2h"}`}},
		[]call{{"c3", "work", `{"task":"api"}`}},
	)}
	srv := mustServeResponses(t, f)
	temp := 0.3
	a := responsesAgent(t, srv, llm.Options{Model: "test-model", APIKey: "sk-test", Temperature: &temp})
	for turn := uint64(1); turn <= 3; turn++ {
		o := obs(turn)
		if turn == 2 {
			o.Rejected = []org.RejectedView{{Action: org.Action{Type: org.ActWork, Task: "api", For: "2h"}, Kind: "state", Reason: "task \"api\" is being worked on"}}
		}
		acts, err := a.Decide(context.Background(), o)
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		if turn == 1 && (len(acts) != 2 || acts[0] != (org.Action{Type: "claim", Task: "api"}) || acts[1] != (org.Action{Type: "work", Task: "api", For: "2h"})) {
			t.Fatalf("turn 1: actions %+v, want claim api then work api for 2h", acts)
		}
	}
	reqs := f.requests()
	if len(reqs) != 3 {
		t.Fatalf("got %d requests, want 3", len(reqs))
	}
	for i, r := range reqs {
		if r.Model != "test-model" || r.ToolChoice != "auto" || r.Temperature == nil || *r.Temperature != 0.3 || f.auth[i] != "Bearer sk-test" {
			t.Errorf("request %d: model %q, tool_choice %q, temperature %v, auth %q", i, r.Model, r.ToolChoice, r.Temperature, f.auth[i])
		}
		if r.Store == nil || *r.Store || r.Previous != "" {
			t.Errorf("request %d: store %v, previous_response_id %q; want store false and the input replayed", i, r.Store, r.Previous)
		}
		if !strings.Contains(r.Instructions, "You are bob, an engineer in team product") {
			t.Errorf("request %d: instructions are not bob's system prompt: %.60q", i, r.Instructions)
		}
		if len(r.Tools) != len(org.ActionTypes) {
			t.Fatalf("request %d: %d tools, want %d", i, len(r.Tools), len(org.ActionTypes))
		}
		for j, raw := range r.Tools {
			var tool map[string]json.RawMessage
			if err := json.Unmarshal(raw, &tool); err != nil {
				t.Fatal(err)
			}
			var name string
			_ = json.Unmarshal(tool["name"], &name)
			if string(tool["type"]) != `"function"` || name != org.ActionTypes[j] || tool["description"] == nil ||
				!strings.HasPrefix(string(tool["parameters"]), `{"type":"object"`) || string(tool["strict"]) != "false" || tool["function"] != nil {
				t.Errorf("request %d: tool %d is not a Responses function tool for %s: %s", i, j, org.ActionTypes[j], raw)
			}
		}
	}
	type want struct{ typ, role, callID, name, has string }
	check := func(n int, wants []want) {
		t.Helper()
		items := reqs[n].items(t)
		if len(items) != len(wants) {
			t.Fatalf("request %d has %d input items, want %d: %s", n, len(items), len(wants), reqs[n].Input)
		}
		for i, w := range wants {
			it := items[i]
			var text string
			switch {
			case it.Content != nil:
				text = *it.Content
			case it.Output != nil:
				text = *it.Output
			case it.Arguments != nil:
				text = *it.Arguments
			}
			if it.Type != w.typ || it.Role != w.role || it.CallID != w.callID || it.Name != w.name || !strings.Contains(text, w.has) {
				t.Errorf("request %d item %d: %+v (%q); want %+v", n, i, it, text, w)
			}
		}
	}
	check(0, []want{{"message", "user", "", "", "Turn 1."}})
	check(1, []want{
		{"message", "user", "", "", "Turn 1."},
		{"message", "assistant", "", "", "thinking about turn 1"},
		{"function_call", "", "c1", "claim", `{"task":"api"}`},
		{"function_call", "", "c2", "work", `"for":"2h"`},
		{"function_call_output", "", "c1", "", "accepted"},
		{"function_call_output", "", "c2", "", "refused (state)"},
		{"message", "user", "", "", "Turn 2."},
	})
	if n := len(reqs[2].items(t)); n != 7+4 {
		t.Errorf("request 3 has %d input items, want 11 (7, then the assistant text, one call, its output, turn 3)", n)
	}
	// No item carries the endpoint's item ids (fc_…, msg_…): with store
	// false the endpoint could not resolve them.
	for _, raw := range reqs[2].Input {
		if strings.Contains(string(raw), `"id"`) {
			t.Errorf("an input item carries an id: %s", raw)
		}
	}
}

func TestResponsesOutputBecomesActions(t *testing.T) {
	tests := []struct {
		name   string
		output string
		want   []org.Action
		bad    []string // substrings of the InvalidAction texts, by position ("" = valid)
		ids    []string // the call_id each call is answered with next turn
	}{
		{"calls among other items", `[{"type":"reasoning","id":"rs_1","summary":[]},
			{"type":"function_call","id":"fc_1","call_id":"call_a","name":"claim","arguments":"{\"task\":\"api\"}","status":"completed"},
			{"type":"message","id":"m1","role":"assistant","content":[{"type":"output_text","text":"on it"}]},
			{"type":"function_call","id":"fc_2","call_id":"call_b","name":"message","arguments":"{\"to\":\"frank\",\"text\":\"hi\"}"}]`,
			[]org.Action{{Type: "claim", Task: "api"}, {Type: "message", To: "frank", Text: "hi"}}, nil, []string{"call_a", "call_b"}},
		{"arguments as an object", `[{"type":"function_call","call_id":"c","name":"wait","arguments":{"until":5000}}]`,
			[]org.Action{{Type: "wait", Until: 5000}}, nil, []string{"c"}},
		{"no call_id: the item id, else one made up", `[{"type":"function_call","id":"fc_9","name":"wait","arguments":"{}"},{"type":"function_call","name":"wait","arguments":""}]`,
			[]org.Action{{Type: "wait"}, {Type: "wait"}}, nil, []string{"fc_9", "call_1_2"}},
		{"malformed arguments", `[{"type":"function_call","call_id":"c","name":"claim","arguments":"{\"task\":"}]`, nil, []string{"not a JSON object"}, []string{"c"}},
		{"unknown tool", `[{"type":"function_call","call_id":"c","name":"fly","arguments":"{}"}]`, nil, []string{`unknown tool "fly"`}, []string{"c"}},
		{"no name", `[{"type":"function_call","call_id":"c","arguments":"{}"}]`, nil, []string{`unknown tool ""`}, []string{"c"}},
		{"only text", `[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"nothing to do"}]}]`, nil, nil, nil},
		{"empty output", `[]`, nil, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &respFake{raw: func(n int) (int, string) {
				if n > 1 {
					return http.StatusOK, `{"id":"r2","status":"completed","output":[]}`
				}
				return http.StatusOK, `{"id":"r1","object":"response","status":"completed","output":` + tc.output + `}`
			}}
			a := responsesAgent(t, mustServeResponses(t, f), llm.Options{})
			got, err := a.Decide(context.Background(), obs(1))
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			if n := max(len(tc.want), len(tc.bad)); len(got) != n {
				t.Fatalf("got %d actions, want %d: %+v", len(got), n, got)
			}
			for i, act := range got {
				if i < len(tc.bad) && tc.bad[i] != "" {
					if act.Type != llm.InvalidAction || !strings.Contains(act.Text, tc.bad[i]) {
						t.Errorf("action %d: got %+v, want an %q action saying %q", i, act, llm.InvalidAction, tc.bad[i])
					}
					continue
				}
				if act != tc.want[i] {
					t.Errorf("action %d: got %+v, want %+v", i, act, tc.want[i])
				}
			}
			// The next turn answers every call, by its call_id.
			if _, err := a.Decide(context.Background(), obs(2)); err != nil {
				t.Fatal(err)
			}
			var outputs []string
			for _, it := range f.requests()[1].items(t) {
				if it.Type == "function_call_output" {
					outputs = append(outputs, it.CallID)
				}
			}
			if !slices.Equal(outputs, tc.ids) {
				t.Errorf("the next turn answers the calls %v, want %v", outputs, tc.ids)
			}
		})
	}
}

func TestResponsesMalformedAnswersAreErrors(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   string
	}{
		{"HTTP error", http.StatusTooManyRequests, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`, "429 Too Many Requests: Rate limit reached"},
		{"HTTP error without JSON", http.StatusBadGateway, `upstream gone`, "502 Bad Gateway: upstream gone"},
		{"not JSON", http.StatusOK, `<html>hello</html>`, "the answer is not a response"},
		{"output not a list", http.StatusOK, `{"id":"r","status":"completed","output":{"type":"function_call"}}`, "the answer is not a response"},
		{"failed", http.StatusOK, `{"id":"r","status":"failed","output":[],"error":{"code":"server_error","message":"the model crashed"}}`, "response failed: the model crashed"},
		{"cancelled", http.StatusOK, `{"id":"r9","status":"cancelled","output":[]}`, `response r9 is "cancelled"`},
		{"still in progress", http.StatusOK, `{"id":"r9","status":"in_progress","output":[]}`, `"in_progress", not completed`},
		{"no output", http.StatusOK, `{"id":"r","status":"completed"}`, "answered with no output"},
		{"a chat completion", http.StatusOK, `{"choices":[{"message":{"role":"assistant","content":"hi"}}]}`, "answered with no output"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &respFake{raw: func(n int) (int, string) {
				if n > 1 {
					return http.StatusOK, `{"id":"r2","status":"completed","output":[{"type":"function_call","call_id":"w","name":"wait","arguments":"{}"}]}`
				}
				return tc.status, tc.body
			}}
			a := responsesAgent(t, mustServeResponses(t, f), llm.Options{})
			acts, err := a.Decide(context.Background(), obs(1))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, %v; want an error saying %q", acts, err, tc.want)
			}
			// The failed turn is not kept: the next request holds only the new observation.
			if _, err := a.Decide(context.Background(), obs(2)); err != nil {
				t.Fatal(err)
			}
			if items := f.requests()[1].items(t); len(items) != 1 || !strings.Contains(*items[0].Content, "Turn 2.") {
				t.Errorf("after a failed turn the next request has %d items, want the observation of turn 2 alone", len(items))
			}
		})
	}
}

func TestResponsesHistoryIsTrimmed(t *testing.T) {
	f := &respFake{answer: script()}
	a := responsesAgent(t, mustServeResponses(t, f), llm.Options{MaxHistory: 2})
	for turn := uint64(1); turn <= 5; turn++ {
		if _, err := a.Decide(context.Background(), obs(turn)); err != nil {
			t.Fatal(err)
		}
	}
	items := f.requests()[4].items(t)
	// 2 past turns (observation, text, call, output) + the current observation.
	if len(items) != 2*4+1 || !strings.Contains(*items[0].Content, "Turn 3.") {
		t.Fatalf("request 5 has %d items starting %+v, want 9 starting with turn 3", len(items), items[0])
	}
}

func TestOptionsValidateAPI(t *testing.T) {
	for _, api := range []string{"", llm.APIChat, llm.APIResponses} {
		if err := (llm.Options{BaseURL: "http://x/v1", Model: "m", API: api}).Validate(); err != nil {
			t.Errorf("API %q: %v", api, err)
		}
	}
	if err := (llm.Options{BaseURL: "http://x/v1", Model: "m", API: "completions"}).Validate(); err == nil || !strings.Contains(err.Error(), `API "completions"`) {
		t.Errorf("API completions: got %v, want it refused", err)
	}
}

// A session with a seat played over the Responses API: the calls become
// actions the engine applies (bob delivers work), and a call to a tool
// that does not exist is recorded refused.
func TestSessionWithAResponsesSeat(t *testing.T) {
	f := &respFake{}
	f.answer = sensible(t)
	srv := mustServeResponses(t, f)
	bob := responsesAgent(t, srv, llm.Options{Model: "fake", MaxHistory: 4})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	log := memlog.New()
	res, err := app.Run(ctx, app.RunOptions{World: "startup", Seed: 3, Agents: "greedy", Log: log,
		TurnTimeout: 20 * time.Second, Seats: map[string]agents.Agent{"bob": bob}})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	malformed := 0
	for ev, err := range log.Read(ctx, res.Session, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type != payload.EvActionRejected || ev.Actor != "bob" {
			continue
		}
		var p payload.ActionRejected
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if p.Action.Type == llm.InvalidAction && strings.Contains(p.Action.Text, `unknown tool "take_a_nap"`) {
			malformed++
		}
	}
	if malformed != 1 {
		t.Errorf("the log records %d refused take_a_nap calls of bob, want 1", malformed)
	}
	var delivered float64
	for _, m := range res.Score.Members {
		if m.Member == "bob" {
			delivered = m.Delivered
		}
	}
	if delivered <= 0 || res.Score.Violations != 0 || res.Ended != "complete" {
		t.Errorf("bob delivered %g, %d violations, ended %q; want work delivered, none, complete", delivered, res.Score.Violations, res.Ended)
	}
	t.Logf("team score %.2f, bob delivered %.2f over %d requests", res.Score.TeamScore, delivered, len(f.requests()))
}
