// Package llm plays a member's seat with a language model behind any
// OpenAI-compatible endpoint, speaking chat completions (POST
// BaseURL/chat/completions, the default) or the Responses API (POST
// BaseURL/responses, Options.API = APIResponses).
//
// Each turn the agent sends the conversation so far — a system prompt that
// explains the job and the rules, then for every turn the observation as a
// user message, the model's tool calls, and one tool message per call saying
// whether the engine accepted it — together with the actions as tools
// (the seat's world's, agents.ToolDefsFor, for an agent a session's seats
// got from Agent.In; every action's, agents.ToolDefs, for Decide), and
// turns the tool calls of the answer into actions with
// agents.ActionFromOfferedToolCall. A tool call that does not parse (an
// unknown tool, one the seat was not offered too, or bad arguments) becomes an action of type InvalidAction carrying the reason,
// which the engine refuses and records like any malformed action; it never
// stops the session. An HTTP error or a timeout is returned by Decide: the
// host then sends no actions and the engine records an empty turn.
//
// Over the Responses API the same conversation is sent as input items: the
// system prompt as instructions, each observation as a user message, the
// model's tool calls as function_call items and what the engine made of
// them as function_call_output items (matched by call_id), with the
// actions as function tools ({type: "function", name, description,
// parameters}). The kept history is replayed whole every turn, with store
// false, instead of chaining previous_response_id; a response that failed,
// was cancelled or carries an error is an error like an HTTP error.
//
//	a, err := llm.New(llm.Options{BaseURL: "http://localhost:8000/v1", Model: "qwen2.5-7b-instruct", APIKey: key})
//	r, err := llm.New(llm.Options{BaseURL: "https://api.openai.com/v1", API: llm.APIResponses, Model: "gpt-4.1-mini", APIKey: key})
//	res, err := app.Run(ctx, app.RunOptions{World: "startup", Agents: "greedy", Seats: map[string]agents.Agent{"bob": a}})
//
// One Agent may play several seats, in several sessions at once: it keeps
// one conversation per (session, member), trimmed to the last MaxHistory
// turns. A session resumed or forked gives a new Agent its seats' past
// turns (Recall, from the log: the observations and the recorded actions
// as its tool calls, numbered by the agent; the model's text is not in the
// log), so the model's conversation goes on. The seats a session gets from
// Agent.In are agents.Keepers: a checkpoint keeps each one's conversation
// as the model was sent it (its text and the endpoint's call IDs too), and
// a fork or resume from it takes that back and is shown only the turns
// since. It is an edge package: it
// does I/O and is not deterministic; the event log records what it did, so
// a session it played replays exactly.
package llm
