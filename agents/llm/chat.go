package llm

import (
	"context"
	"encoding/json"
	"fmt"
)

// chatRequest is a chat-completions request.
type chatRequest struct {
	Model       string          `json:"model"`
	Messages    []message       `json:"messages"`
	Tools       json.RawMessage `json:"tools"`
	ToolChoice  string          `json:"tool_choice"`
	Temperature *float64        `json:"temperature,omitempty"`
}

// chatResponse is what is read of a chat completion.
type chatResponse struct {
	Choices []struct {
		Message struct {
			Content   *string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
	} `json:"choices"`
	Error *apiError `json:"error"`
}

// askChat asks a chat-completions endpoint: the system message, the
// history's messages and the new observation as messages.
func (a *Agent) askChat(ctx context.Context, tools json.RawMessage, system message, history []turn, user message) (answer, error) {
	msgs := []message{system}
	for _, h := range history {
		msgs = append(msgs, h.user)
		if h.assistant != nil {
			msgs = append(msgs, *h.assistant)
			msgs = append(msgs, h.results...)
		}
	}
	msgs = append(msgs, user)
	data, err := a.post(ctx, chatRequest{Model: a.opts.Model, Messages: msgs, Tools: tools, ToolChoice: "auto", Temperature: a.opts.Temperature})
	if err != nil {
		return answer{}, err
	}
	var resp chatResponse
	if err := json.Unmarshal(data, &resp); err != nil {
		return answer{}, fmt.Errorf("llm: POST %s: the answer is not a chat completion: %v", a.endpoint, err)
	}
	if resp.Error != nil {
		return answer{}, fmt.Errorf("llm: POST %s: %s", a.endpoint, resp.Error.Message)
	}
	if len(resp.Choices) == 0 {
		return answer{}, fmt.Errorf("llm: %s answered with no choices", a.endpoint)
	}
	m := resp.Choices[0].Message
	ans := answer{content: m.Content}
	for _, tc := range m.ToolCalls {
		ans.calls = append(ans.calls, rawCall{id: tc.ID, name: tc.Function.Name, arguments: argumentsOf(tc.Function.Arguments)})
	}
	return ans, nil
}
