package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents/llm"
	"github.com/corpsim/corpsim/org"
)

// chatRequest is what the fake endpoint reads of a request.
type chatRequest struct {
	Model       string           `json:"model"`
	Messages    []chatMessage    `json:"messages"`
	Tools       []map[string]any `json:"tools"`
	ToolChoice  string           `json:"tool_choice"`
	Temperature *float64         `json:"temperature"`
}

type chatMessage struct {
	Role       string  `json:"role"`
	Content    *string `json:"content"`
	ToolCallID string  `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

func (m chatMessage) text() string {
	if m.Content == nil {
		return ""
	}
	return *m.Content
}

// call is a scripted tool call: arguments is sent as the JSON string OpenAI sends.
type call struct {
	id, name, arguments string
}

// fake is an OpenAI-compatible endpoint: it records every request and
// answers with the tool calls its answer function returns.
type fake struct {
	t      testing.TB
	mu     sync.Mutex
	reqs   []chatRequest
	auth   []string
	answer func(req chatRequest) (status int, calls []call)
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		f.t.Errorf("request body is not JSON: %v", err)
		http.Error(w, "bad json", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.mu.Unlock()
	status, calls := f.answer(req)
	if status != http.StatusOK {
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"scripted failure %d"}}`, status)
		return
	}
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type tc struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	var tcs []tc
	for _, c := range calls {
		tcs = append(tcs, tc{ID: c.id, Type: "function", Function: fn{Name: c.name, Arguments: c.arguments}})
	}
	out := map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "choices": []any{map[string]any{
		"index": 0, "finish_reason": "tool_calls",
		"message": map[string]any{"role": "assistant", "content": nil, "tool_calls": tcs}}}}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func (f *fake) requests() []chatRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

func mustServe(tb testing.TB, answer func(chatRequest) (int, []call)) (*fake, *httptest.Server) {
	tb.Helper()
	f := &fake{t: tb, answer: answer}
	srv := httptest.NewServer(f)
	tb.Cleanup(srv.Close)
	return f, srv
}

func mustAgent(tb testing.TB, o llm.Options) *llm.Agent {
	tb.Helper()
	a, err := llm.New(o)
	if err != nil {
		tb.Fatalf("llm.New: %v", err)
	}
	return a
}

func obs(turn uint64) org.Observation {
	return org.Observation{Session: "s1", Member: "bob", Role: "engineer", Team: "product", Turn: turn,
		Available: []org.TaskView{{ID: "api", Kind: org.KindTask, Status: org.StatusOpen, Effort: 3 * 8 * 3600000, Value: 30}}}
}

func script(turns ...[]call) func(chatRequest) (int, []call) {
	var mu sync.Mutex
	i := 0
	return func(chatRequest) (int, []call) {
		mu.Lock()
		defer mu.Unlock()
		if i >= len(turns) {
			return http.StatusOK, []call{{"w", "wait", `{}`}}
		}
		i++
		return http.StatusOK, turns[i-1]
	}
}

func TestRequestCarriesModelToolsKeyAndGrowingHistory(t *testing.T) {
	f, srv := mustServe(t, script(
		[]call{{"c1", "claim", `{"task":"api"}`}, {"c2", "work", `{"task":"api","for":"2h"}`}},
		[]call{{"c3", "work", `{"task":"api"}`}},
		[]call{{"c4", "wait", `{}`}},
	))
	temp := 0.2
	a := mustAgent(t, llm.Options{BaseURL: srv.URL + "/v1", Model: "test-model", APIKey: "sk-test", Temperature: &temp})
	ctx := context.Background()
	for turn := uint64(1); turn <= 3; turn++ {
		o := obs(turn)
		if turn == 2 {
			// The engine refused the work of turn 1.
			o.Rejected = []org.RejectedView{{Action: org.Action{Type: org.ActWork, Task: "api", For: "2h"}, Kind: "state", Reason: "task \"api\" is being worked on until 7200000"}}
		}
		if _, err := a.Decide(ctx, o); err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
	}
	reqs := f.requests()
	if len(reqs) != 3 {
		t.Fatalf("got %d requests, want 3", len(reqs))
	}
	for i, r := range reqs {
		if r.Model != "test-model" {
			t.Errorf("request %d: model %q, want test-model", i, r.Model)
		}
		if len(r.Tools) != len(org.ActionTypes) {
			t.Errorf("request %d: %d tools, want %d", i, len(r.Tools), len(org.ActionTypes))
		}
		if r.ToolChoice != "auto" {
			t.Errorf("request %d: tool_choice %q, want auto", i, r.ToolChoice)
		}
		if r.Temperature == nil || *r.Temperature != 0.2 {
			t.Errorf("request %d: temperature %v, want 0.2", i, r.Temperature)
		}
		if f.auth[i] != "Bearer sk-test" {
			t.Errorf("request %d: Authorization %q, want Bearer sk-test", i, f.auth[i])
		}
		if r.Messages[0].Role != "system" || !strings.Contains(r.Messages[0].text(), "You are bob") {
			t.Errorf("request %d: first message is not the system prompt for bob: %+v", i, r.Messages[0])
		}
	}
	// system, user; then + assistant, 2 tool results, user; then + assistant, 1 tool result, user.
	for i, want := range []int{2, 6, 9} {
		if got := len(reqs[i].Messages); got != want {
			t.Errorf("request %d has %d messages, want %d", i, got, want)
		}
	}
	second := reqs[1].Messages
	if second[2].Role != "assistant" || len(second[2].ToolCalls) != 2 || second[2].ToolCalls[0].ID != "c1" {
		t.Fatalf("second request: message 2 is not the assistant's two tool calls: %+v", second[2])
	}
	if m := second[3]; m.Role != "tool" || m.ToolCallID != "c1" || m.text() != "accepted" {
		t.Errorf("result of claim: got %q (%s, %s), want accepted for c1", m.text(), m.Role, m.ToolCallID)
	}
	if m := second[4]; m.Role != "tool" || m.ToolCallID != "c2" || !strings.Contains(m.text(), "refused (state)") || !strings.Contains(m.text(), "being worked on") {
		t.Errorf("result of work: got %q for %s, want the refusal for c2", m.text(), m.ToolCallID)
	}
	if m := second[5]; m.Role != "user" || !strings.Contains(m.text(), `"turn":2`) {
		t.Errorf("last message is not the observation of turn 2: %q", m.text())
	}
}

func TestToolCallsBecomeActions(t *testing.T) {
	tests := []struct {
		name  string
		calls []call
		want  []org.Action
		bad   []string // substrings of the InvalidAction texts, by position ("" = valid)
	}{
		{"valid", []call{{"a", "claim", `{"task":"api"}`}, {"b", "request_approval", `{"task":"api"}`}, {"c", "work", `{"task":"api","for":"1h"}`}},
			[]org.Action{{Type: "claim", Task: "api"}, {Type: "request_approval", Task: "api"}, {Type: "work", Task: "api", For: "1h"}}, nil},
		{"approve and message", []call{{"a", "approve", `{"request":"r1"}`}, {"b", "message", `{"to":"frank","text":"hi","reply_to":"m3"}`}, {"c", "wait", `{"until":5000}`}},
			[]org.Action{{Type: "approve", Request: "r1"}, {Type: "message", To: "frank", Text: "hi", ReplyTo: "m3"}, {Type: "wait", Until: 5000}}, nil},
		{"malformed arguments", []call{{"a", "claim", `{"task":`}}, nil, []string{"not a JSON object"}},
		{"unknown tool", []call{{"a", "fly", `{}`}}, nil, []string{`unknown tool "fly"`}},
		{"unknown argument", []call{{"a", "claim", `{"task":"api","urgent":true}`}}, nil, []string{`no argument "urgent"`}},
		{"missing argument", []call{{"a", "reject", `{"request":"r1"}`}}, nil, []string{`needs the argument "reason"`}},
		{"one bad among good", []call{{"a", "claim", `{"task":"api"}`}, {"b", "work", `{"task":7}`}},
			[]org.Action{{Type: "claim", Task: "api"}, {}}, []string{"", "must be a string"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, srv := mustServe(t, script(tc.calls))
			a := mustAgent(t, llm.Options{BaseURL: srv.URL + "/v1", Model: "m"})
			got, err := a.Decide(context.Background(), obs(1))
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			if len(got) != len(tc.calls) {
				t.Fatalf("got %d actions, want %d: %+v", len(got), len(tc.calls), got)
			}
			for i, act := range got {
				bad := ""
				if i < len(tc.bad) {
					bad = tc.bad[i]
				}
				if bad != "" {
					if act.Type != llm.InvalidAction || !strings.Contains(act.Text, bad) {
						t.Errorf("action %d: got %+v, want an %q action saying %q", i, act, llm.InvalidAction, bad)
					}
					continue
				}
				if act != tc.want[i] {
					t.Errorf("action %d: got %+v, want %+v", i, act, tc.want[i])
				}
			}
		})
	}
}

func TestMalformedCallIsReportedBack(t *testing.T) {
	f, srv := mustServe(t, script([]call{{"x", "claim", `{"task":`}}, []call{{"y", "wait", `{}`}}))
	a := mustAgent(t, llm.Options{BaseURL: srv.URL + "/v1", Model: "m"})
	acts, err := a.Decide(context.Background(), obs(1))
	if err != nil {
		t.Fatal(err)
	}
	o := obs(2)
	o.Rejected = []org.RejectedView{{Action: acts[0], Kind: "malformed", Reason: `unknown action type "invalid"`}}
	if _, err := a.Decide(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	m := f.requests()[1].Messages[3]
	if m.Role != "tool" || m.ToolCallID != "x" || !strings.Contains(m.text(), "malformed tool call") || !strings.Contains(m.text(), "not a JSON object") {
		t.Errorf("got %s %q for %q, want the parse error for x", m.Role, m.text(), m.ToolCallID)
	}
}

func TestErrorsAreReturned(t *testing.T) {
	t.Run("500", func(t *testing.T) {
		_, srv := mustServe(t, func(chatRequest) (int, []call) { return http.StatusInternalServerError, nil })
		a := mustAgent(t, llm.Options{BaseURL: srv.URL + "/v1", Model: "m"})
		acts, err := a.Decide(context.Background(), obs(1))
		if err == nil || !strings.Contains(err.Error(), "500") || !strings.Contains(err.Error(), "scripted failure") {
			t.Fatalf("got %v, %v; want an error naming the 500 and its message", acts, err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		release := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}))
		t.Cleanup(srv.Close)
		t.Cleanup(func() { close(release) })
		a := mustAgent(t, llm.Options{BaseURL: srv.URL + "/v1", Model: "m"})
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := a.Decide(ctx, obs(1))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want an error wrapping context.DeadlineExceeded", err)
		}
	})
	t.Run("an answer over the size limit", func(t *testing.T) {
		// A well-formed completion whose text is larger than what the agent
		// reads (8 MiB): the error says so, not that the answer, cut short,
		// "is not a chat completion: unexpected end of JSON input".
		for _, api := range []string{llm.APIChat, llm.APIResponses} {
			t.Run(api, func(t *testing.T) {
				huge := strings.Repeat("x", 9<<20)
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					_, _ = io.Copy(io.Discard, r.Body)
					_ = json.NewEncoder(w).Encode(map[string]any{
						"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": huge}}},
						"status":  "completed", "output": []any{map[string]any{"type": "message", "content": []any{map[string]any{"type": "output_text", "text": huge}}}},
					})
				}))
				t.Cleanup(srv.Close)
				a := mustAgent(t, llm.Options{BaseURL: srv.URL + "/v1", Model: "m", API: api})
				_, err := a.Decide(context.Background(), obs(1))
				if err == nil || !strings.Contains(err.Error(), "the limit is 8 MiB") || strings.Contains(err.Error(), "JSON input") {
					t.Fatalf("got %v; want an error saying the answer is over the 8 MiB limit", err)
				}
			})
		}
	})
	t.Run("a failed turn is not kept", func(t *testing.T) {
		fail := true
		var mu sync.Mutex
		f, srv := mustServe(t, func(chatRequest) (int, []call) {
			mu.Lock()
			defer mu.Unlock()
			if fail {
				fail = false
				return http.StatusBadGateway, nil
			}
			return http.StatusOK, []call{{"w", "wait", `{}`}}
		})
		a := mustAgent(t, llm.Options{BaseURL: srv.URL + "/v1", Model: "m"})
		if _, err := a.Decide(context.Background(), obs(1)); err == nil {
			t.Fatal("got no error from a 502")
		}
		if _, err := a.Decide(context.Background(), obs(2)); err != nil {
			t.Fatal(err)
		}
		if n := len(f.requests()[1].Messages); n != 2 {
			t.Errorf("after a failed turn the next request has %d messages, want 2 (system, observation)", n)
		}
	})
}

func TestHistoryIsTrimmed(t *testing.T) {
	f, srv := mustServe(t, script())
	a := mustAgent(t, llm.Options{BaseURL: srv.URL + "/v1", Model: "m", MaxHistory: 2})
	for turn := uint64(1); turn <= 5; turn++ {
		if _, err := a.Decide(context.Background(), obs(turn)); err != nil {
			t.Fatal(err)
		}
	}
	reqs := f.requests()
	// system + 2 past turns (user, assistant, one tool result each) + the current observation.
	if got := len(reqs[4].Messages); got != 1+2*3+1 {
		t.Fatalf("request 5 has %d messages, want %d", got, 1+2*3+1)
	}
	if m := reqs[4].Messages[1]; !strings.Contains(m.text(), "Turn 3.") {
		t.Errorf("oldest kept turn: got %.40q, want turn 3", m.text())
	}
}

func TestConversationsAreKeptPerMember(t *testing.T) {
	f, srv := mustServe(t, script())
	a := mustAgent(t, llm.Options{BaseURL: srv.URL + "/v1", Model: "m"})
	bob, carol := obs(1), obs(1)
	carol.Member = "carol"
	for _, o := range []org.Observation{bob, carol} {
		if _, err := a.Decide(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	reqs := f.requests()
	if n := len(reqs[1].Messages); n != 2 || !strings.Contains(reqs[1].Messages[0].text(), "You are carol") {
		t.Errorf("carol's first request has %d messages (%.30q), want her own 2", n, reqs[1].Messages[0].text())
	}
}

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		o    llm.Options
		want string
	}{
		{"ok", llm.Options{BaseURL: "https://api.example.com/v1", Model: "m"}, ""},
		{"no model", llm.Options{BaseURL: "https://api.example.com/v1"}, "no model"},
		{"no url", llm.Options{Model: "m"}, "no base URL"},
		{"bad url", llm.Options{BaseURL: "ftp://x", Model: "m"}, "not an http(s) URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("got %v, want no error", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, llm.ErrBadOptions)):
				t.Fatalf("got %v, want an ErrBadOptions saying %q", err, tc.want)
			}
		})
	}
}

func TestForgetDropsASessionsConversations(t *testing.T) {
	f, srv := mustServe(t, script())
	a := mustAgent(t, llm.Options{BaseURL: srv.URL + "/v1", Model: "m"})
	ctx := context.Background()
	if _, err := a.Decide(ctx, obs(1)); err != nil {
		t.Fatal(err)
	}
	a.Forget("s1")
	if _, err := a.Decide(ctx, obs(2)); err != nil {
		t.Fatal(err)
	}
	if n := len(f.requests()[1].Messages); n != 2 {
		t.Fatalf("after Forget the next request has %d messages, want a fresh conversation of 2", n)
	}
}

func TestName(t *testing.T) {
	a := mustAgent(t, llm.Options{BaseURL: "http://127.0.0.1:1/v1", Model: "qwen2.5"})
	if got := a.Name(); got != "llm/qwen2.5" {
		t.Fatalf("got %q, want llm/qwen2.5", got)
	}
}

// Of two identical calls, the engine takes the first and refuses the
// second when the first ended the turn: the model is told so, not the
// other way round. Refusals carry no index, and the first unused match
// went to the first call: the model read that its wait was refused and
// its second accepted.
func TestIdenticalCallsAreToldApart(t *testing.T) {
	f, srv := mustServe(t, script([]call{{"a", "wait", `{}`}, {"b", "wait", `{}`}}))
	a := mustAgent(t, llm.Options{BaseURL: srv.URL + "/v1", Model: "m"})
	acts, err := a.Decide(context.Background(), obs(1))
	if err != nil {
		t.Fatal(err)
	}
	if len(acts) != 2 || acts[0] != acts[1] {
		t.Fatalf("actions %+v, want two identical waits", acts)
	}
	o := obs(2)
	o.Rejected = []org.RejectedView{{Action: acts[1], Kind: org.KindState, Reason: org.ReasonTurnEnded}}
	if _, err := a.Decide(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	results := map[string]string{}
	for _, m := range f.requests()[1].Messages {
		if m.Role == "tool" {
			results[m.ToolCallID] = m.text()
		}
	}
	if results["a"] != "accepted" || !strings.Contains(results["b"], org.ReasonTurnEnded) {
		t.Errorf("the model was told a: %q, b: %q; want a accepted and b refused, the turn having ended", results["a"], results["b"])
	}
}
