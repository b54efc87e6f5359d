package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/corpsim/corpsim/agents"
)

// The Responses API (POST BaseURL/responses). The agent replays the whole
// kept conversation as input items every turn, with store false, rather
// than chaining previous_response_id: the history stays trimmed to
// MaxHistory turns, nothing is kept at the endpoint, and an endpoint that
// restarts (or one that stores nothing, as many compatible servers) loses
// nothing. The system prompt is the request's instructions.

// responsesTool is a function tool in the Responses shape: the function's
// fields at the top level, not under "function".
type responsesTool struct {
	Type        string            `json:"type"` // always "function"
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Parameters  agents.ToolSchema `json:"parameters"`
	// Strict is false: strict mode would make every argument required,
	// and most tools have optional ones.
	Strict bool `json:"strict"`
}

// responsesTools returns defs as Responses function tools, in their order.
func responsesTools(defs []agents.Tool) json.RawMessage {
	tools := make([]responsesTool, len(defs))
	for i, d := range defs {
		tools[i] = responsesTool{Type: "function", Name: d.Function.Name, Description: d.Function.Description, Parameters: d.Function.Parameters}
	}
	b, err := json.Marshal(tools)
	if err != nil {
		panic("llm: tools do not encode: " + err.Error())
	}
	return b
}

// responsesRequest is a Responses create request.
type responsesRequest struct {
	Model        string          `json:"model"`
	Instructions string          `json:"instructions,omitempty"`
	Input        []any           `json:"input"`
	Tools        json.RawMessage `json:"tools"`
	ToolChoice   string          `json:"tool_choice"`
	Temperature  *float64        `json:"temperature,omitempty"`
	Store        bool            `json:"store"`
}

// The input items the agent sends.
type (
	// messageItem is a user or assistant message with text content.
	messageItem struct {
		Type    string `json:"type"` // "message"
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	// functionCallItem replays a tool call the model made. It carries no
	// item id: with store false an id would name an item the endpoint
	// does not have.
	functionCallItem struct {
		Type      string `json:"type"` // "function_call"
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	// functionCallOutputItem answers a tool call: what the engine made of it.
	functionCallOutputItem struct {
		Type   string `json:"type"` // "function_call_output"
		CallID string `json:"call_id"`
		Output string `json:"output"`
	}
)

// responsesResponse is what is read of a Responses answer.
type responsesResponse struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	// Output is nil when the answer has no "output" at all.
	Output []struct {
		Type      string          `json:"type"`
		ID        string          `json:"id"`
		CallID    string          `json:"call_id"`
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Content   []struct {
			Type    string `json:"type"`
			Text    string `json:"text"`
			Refusal string `json:"refusal"`
		} `json:"content"`
	} `json:"output"`
	Error             *apiError `json:"error"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
}

// inputItems renders the conversation as Responses input items: per past
// turn the observation, the model's text (when it wrote any), its tool
// calls and their outputs; then the new observation.
func inputItems(history []turn, user message) []any {
	var items []any
	msg := func(m message) {
		if m.Content != nil && *m.Content != "" {
			items = append(items, messageItem{Type: "message", Role: m.Role, Content: *m.Content})
		}
	}
	for _, h := range history {
		msg(h.user)
		if h.assistant == nil {
			continue
		}
		msg(*h.assistant)
		for _, tc := range h.assistant.ToolCalls {
			items = append(items, functionCallItem{Type: "function_call", CallID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		for _, r := range h.results {
			items = append(items, functionCallOutputItem{Type: "function_call_output", CallID: r.ToolCallID, Output: *r.Content})
		}
	}
	msg(user)
	return items
}

// askResponses asks a Responses endpoint. An answer whose status says it
// failed, or that carries an error or no output, is an error; function_call
// items become the turn's tool calls, the text of message items its
// content, and other items (reasoning) are not kept.
func (a *Agent) askResponses(ctx context.Context, tools json.RawMessage, system message, history []turn, user message) (answer, error) {
	req := responsesRequest{Model: a.opts.Model, Input: inputItems(history, user), Tools: tools, ToolChoice: "auto",
		Temperature: a.opts.Temperature}
	if system.Content != nil {
		req.Instructions = *system.Content
	}
	data, err := a.post(ctx, req)
	if err != nil {
		return answer{}, err
	}
	var resp responsesResponse
	if err := json.Unmarshal(data, &resp); err != nil {
		return answer{}, fmt.Errorf("llm: POST %s: the answer is not a response: %v", a.endpoint, err)
	}
	if resp.Error != nil {
		return answer{}, fmt.Errorf("llm: POST %s: response %s: %s", a.endpoint, resp.Status, resp.Error.Message)
	}
	switch resp.Status {
	case "", "completed", "incomplete":
		// An incomplete response (max_output_tokens, a content filter)
		// keeps the items it finished; a call cut short fails to parse
		// and is refused like any malformed call.
	default:
		return answer{}, fmt.Errorf("llm: POST %s: response %s is %q, not completed", a.endpoint, resp.ID, resp.Status)
	}
	if resp.Output == nil {
		return answer{}, fmt.Errorf("llm: %s answered with no output", a.endpoint)
	}
	var ans answer
	var texts []string
	for _, it := range resp.Output {
		switch it.Type {
		case "function_call":
			id := it.CallID
			if id == "" {
				id = it.ID
			}
			ans.calls = append(ans.calls, rawCall{id: id, name: it.Name, arguments: argumentsOf(it.Arguments)})
		case "message":
			for _, c := range it.Content {
				switch {
				case c.Type == "output_text" && c.Text != "":
					texts = append(texts, c.Text)
				case c.Type == "refusal" && c.Refusal != "":
					texts = append(texts, c.Refusal)
				}
			}
		}
	}
	if len(texts) > 0 {
		ans.content = text(strings.Join(texts, "\n"))
	}
	return ans, nil
}
