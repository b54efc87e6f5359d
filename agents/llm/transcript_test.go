package llm_test

import (
	"context"
	"testing"

	"github.com/corpsim/corpsim/agents/llm"
	"github.com/corpsim/corpsim/org"
)

// The agent's messages are the transcript helpers' texts, so exports built
// with them read exactly like what the agent sends.
func TestAgentSendsTheTranscriptTexts(t *testing.T) {
	f, srv := mustServe(t, script(
		[]call{{"c1", "claim", `{"task":"api"}`}, {"c2", "work", `{"task":7}`}, {"c3", "wait", `{}`}},
		[]call{{"c4", "wait", `{}`}},
	))
	a := mustAgent(t, llm.Options{BaseURL: srv.URL + "/v1", Model: "m"})
	first := obs(1)
	acts, err := a.Decide(context.Background(), first)
	if err != nil {
		t.Fatal(err)
	}
	rej := org.RejectedView{Action: acts[0], Kind: "policy", Rule: "role-required", Reason: "bob is not a designer"}
	second := obs(2)
	second.Rejected = []org.RejectedView{rej, {Action: acts[1], Kind: "malformed", Reason: `unknown action type "invalid"`}}
	if _, err := a.Decide(context.Background(), second); err != nil {
		t.Fatal(err)
	}
	msgs := f.requests()[1].Messages
	u1, err := llm.ObservationMessage(first)
	if err != nil {
		t.Fatal(err)
	}
	u2, _ := llm.ObservationMessage(second)
	want := []struct{ role, id, text string }{
		{"system", "", llm.SystemPrompt(first)},
		{"user", "", u1},
		{"assistant", "", ""},
		{"tool", "c1", llm.ToolResult(acts[0], &rej)},
		{"tool", "c2", llm.ToolResult(acts[1], nil)},
		{"tool", "c3", llm.ToolResult(acts[2], nil)},
		{"user", "", u2},
	}
	if len(msgs) != len(want) {
		t.Fatalf("got %d messages, want %d", len(msgs), len(want))
	}
	for i, w := range want {
		if m := msgs[i]; m.Role != w.role || m.ToolCallID != w.id || (w.role != "assistant" && m.text() != w.text) {
			t.Errorf("message %d: got %s %q %q, want %s %q %q", i, m.Role, m.ToolCallID, m.text(), w.role, w.id, w.text)
		}
	}
	if got, want := llm.ToolResult(acts[0], &rej), "refused (policy, rule role-required): bob is not a designer"; got != want {
		t.Errorf("refusal: got %q, want %q", got, want)
	}
	if got := llm.ToolResult(acts[1], nil); got != `refused: malformed tool call: argument "task" of work must be a string, got 7` {
		t.Errorf("malformed call: got %q", got)
	}
	if got := llm.ToolResult(acts[2], nil); got != "accepted" {
		t.Errorf("accepted call: got %q", got)
	}
}
