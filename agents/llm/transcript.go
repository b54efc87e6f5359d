package llm

import (
	"encoding/json"
	"fmt"

	"github.com/corpsim/corpsim/org"
)

// The three texts of a conversation besides the model's own answers. The
// Agent builds its messages with them, and trajectory exports (sim/export,
// corpsim export) use them too, so that training data reads exactly like
// what a seat played by this agent is sent.

// SystemPrompt is the system message that opens member o.Member's
// conversation: the job, how observations read, the costs and the rubric.
func SystemPrompt(o org.Observation) string { return systemPrompt(o) }

// ObservationMessage is the user message of a turn: observation o as JSON,
// with how to read and answer it.
func ObservationMessage(o org.Observation) (string, error) {
	obs, err := json.Marshal(o)
	if err != nil {
		return "", fmt.Errorf("llm: observation: %w", err)
	}
	return fmt.Sprintf(
		"Turn %d. Your observation (JSON; times are milliseconds since the world's start, effort and spent are milliseconds of working time):\n%s\n"+
			"Act now by calling tools, in the order the actions should happen. A work or wait action ends your turn.", o.Turn, obs), nil
}

// ToolResult is the tool message answering the tool call that became action
// a: "accepted", or, when the engine refused it (rej not nil), the kind,
// rule and reason. An InvalidAction (a call that did not parse) is reported
// with why it did not.
func ToolResult(a org.Action, rej *org.RejectedView) string {
	switch {
	case a.Type == InvalidAction:
		return "refused: malformed tool call: " + a.Text
	case rej == nil:
		return "accepted"
	}
	why := rej.Kind
	if rej.Rule != "" {
		why += ", rule " + rej.Rule
	}
	return fmt.Sprintf("refused (%s): %s", why, rej.Reason)
}
