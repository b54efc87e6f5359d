package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// InvalidAction is the type of the action a malformed tool call becomes; its
// Text says what was wrong. The engine knows no such action type, so it
// refuses it as malformed and records it.
const InvalidAction = "invalid"

// DefaultMaxHistory is how many turns of conversation are kept when
// Options.MaxHistory is 0. Observations of large worlds run to tens of
// kilobytes, so a long history fills a model's context quickly.
const DefaultMaxHistory = 4

// maxResponseBytes bounds what is read of an endpoint's answer; a longer
// answer is an error saying so.
const maxResponseBytes = 8 << 20

// ErrBadOptions is wrapped by the errors of Options.Validate.
var ErrBadOptions = errors.New("llm: bad options")

// The APIs an Agent speaks (Options.API).
const (
	// APIChat is OpenAI's chat completions: POST BaseURL/chat/completions.
	APIChat = "chat"
	// APIResponses is OpenAI's Responses API: POST BaseURL/responses.
	APIResponses = "responses"
)

// Options configure an Agent. The zero value of every field but Model
// means its default.
type Options struct {
	// BaseURL is the endpoint's base, such as "https://api.openai.com/v1";
	// the agent POSTs to BaseURL + "/chat/completions", or BaseURL +
	// "/responses" when API is APIResponses.
	BaseURL string
	// API is the API spoken: APIChat (the default when empty) or
	// APIResponses.
	API string
	// Model is the model name sent with every request (required).
	Model string
	// APIKey, when set, is sent as "Authorization: Bearer <APIKey>".
	APIKey string
	// MaxHistory is how many past turns (observation, tool calls, results)
	// are sent besides the system prompt and the current observation; 0
	// means DefaultMaxHistory, a negative number none.
	MaxHistory int
	// Temperature is sent when not nil; nil leaves it to the endpoint.
	Temperature *float64
	// HTTPClient makes the requests; nil means a client of its own with no
	// timeout (the context of each Decide bounds each request).
	HTTPClient *http.Client
	// Logger receives a line per request; nil means silent.
	Logger hclog.Logger
}

// Validate reports what is wrong with o, if anything.
func (o Options) Validate() error {
	if strings.TrimSpace(o.Model) == "" {
		return fmt.Errorf("%w: no model", ErrBadOptions)
	}
	if o.BaseURL == "" {
		return fmt.Errorf("%w: no base URL (e.g. https://api.openai.com/v1)", ErrBadOptions)
	}
	u, err := url.Parse(o.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: base URL %q is not an http(s) URL", ErrBadOptions, o.BaseURL)
	}
	switch o.API {
	case "", APIChat, APIResponses:
	default:
		return fmt.Errorf("%w: API %q is neither %q nor %q", ErrBadOptions, o.API, APIChat, APIResponses)
	}
	return nil
}

// Agent is an agents.Agent backed by a chat-completions or Responses
// endpoint. It is safe
// for concurrent use by several seats; each (session, member) has its own
// conversation, and a member's turns come one at a time.
type Agent struct {
	opts     Options
	client   *http.Client
	endpoint string
	tools    json.RawMessage // every action's tool, for seats of no known world
	logger   hclog.Logger

	mu    sync.Mutex
	convs map[string]*conversation // session/member -> conversation
}

var _ agents.Agent = (*Agent)(nil)

// New makes an Agent from validated options.
func New(o Options) (*Agent, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.MaxHistory == 0 {
		o.MaxHistory = DefaultMaxHistory
	}
	client := o.HTTPClient
	if client == nil {
		client = &http.Client{}
	}
	logger := o.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	a := &Agent{opts: o, client: client, logger: logger, convs: map[string]*conversation{}}
	base := strings.TrimRight(o.BaseURL, "/")
	if o.API == APIResponses {
		a.endpoint = base + "/responses"
	} else {
		a.opts.API = APIChat
		a.endpoint = base + "/chat/completions"
	}
	a.tools = json.RawMessage(agents.Tools())
	if a.opts.API == APIResponses {
		a.tools = responsesTools(agents.ToolDefs())
	}
	return a, nil
}

// In returns the agent for member's seat of session, of world w: the same
// model, client and conversations, offering the model w's tools
// (agents.ToolDefsFor, as `corpsim tools --world` lists them: the record
// tools only in a world with systems, naming its record types and fields,
// schedule_meeting only where members keep calendars, message describing
// its cases' decisions). Decide itself offers every action's tool. The
// seat is an agents.Keeper: a checkpoint keeps the member's conversation
// (KeepMemory), and a fork from it takes the conversation back
// (TakeMemory).
func (a *Agent) In(w *worlds.World, session, member string) agents.Agent {
	defs := agents.ToolDefsFor(w)
	tools := agents.ToolsJSONFor(w) // chat completions' shape, kept by world
	if a.opts.API == APIResponses {
		tools = responsesTools(defs)
	}
	return &seat{Agent: a, tools: tools, names: agents.ToolNames(defs), session: session, member: member}
}

// seat is an Agent playing one member of one session: its turns offer
// that session's world's tools.
type seat struct {
	*Agent
	tools           json.RawMessage
	names           []string // of tools: a call of another is unknown
	session, member string
}

var _ agents.Keeper = (*seat)(nil)

// keptVersion is the version of kept's shape: a change of it (or of the
// message and action types it holds) is a new version, and a memory of
// another is refused.
const keptVersion = 1

// kept is a member's conversation written down (seat.KeepMemory), in
// version keptVersion of its shape.
type kept struct {
	V       int        `json:"v"`
	Session string     `json:"session"` // where it was kept: its observations name it
	System  message    `json:"system"`
	Turns   []keptTurn `json:"turns"`
	Sent    []keptCall `json:"sent,omitempty"`
	N       int        `json:"n"`
}

type keptTurn struct {
	User      message   `json:"user"`
	Assistant *message  `json:"assistant,omitempty"`
	Results   []message `json:"results,omitempty"`
}

type keptCall struct {
	ID      string     `json:"id"`
	Action  org.Action `json:"action"`
	Invalid string     `json:"invalid,omitempty"`
	Dropped string     `json:"dropped,omitempty"`
}

// KeepMemory implements agents.Keeper: the member's conversation as the
// model is sent it (the system prompt, the turns kept, what the model said
// and called, with its own call IDs and text, and the calls whose results
// the next observation tells); null before its first turn.
func (s *seat) KeepMemory() ([]byte, error) {
	s.mu.Lock()
	c := s.convs[s.session+"/"+s.member]
	s.mu.Unlock()
	if c == nil {
		return []byte("null"), nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := kept{V: keptVersion, Session: s.session, System: c.system, Turns: make([]keptTurn, len(c.turns)), N: c.n}
	for i, t := range c.turns {
		k.Turns[i] = keptTurn{User: t.user, Assistant: t.assistant, Results: t.results}
	}
	for _, sc := range c.sent {
		k.Sent = append(k.Sent, keptCall{ID: sc.id, Action: sc.action, Invalid: sc.invalid, Dropped: sc.dropped})
	}
	return json.Marshal(&k)
}

// TakeMemory implements agents.Keeper: the member's conversation becomes
// the one KeepMemory wrote, its observations naming this seat's session
// instead of the one it was kept in (a fork's parent).
func (s *seat) TakeMemory(memory []byte) error {
	var k *kept
	if err := json.Unmarshal(memory, &k); err != nil {
		return fmt.Errorf("llm: %s's memory: %w", s.member, err)
	}
	if k != nil && k.V != keptVersion {
		return fmt.Errorf("llm: %s's memory is of version %d, this agent takes %d", s.member, k.V, keptVersion)
	}
	key := s.session + "/" + s.member
	if k == nil {
		s.mu.Lock()
		delete(s.convs, key)
		s.mu.Unlock()
		return nil
	}
	rename := func(m message) message {
		if m.Content != nil && k.Session != "" && k.Session != s.session {
			m.Content = text(strings.ReplaceAll(*m.Content, `"session":"`+k.Session+`"`, `"session":"`+s.session+`"`))
		}
		return m
	}
	c := &conversation{system: k.System, n: k.N, turns: make([]turn, len(k.Turns))}
	for i, t := range k.Turns {
		c.turns[i] = turn{user: rename(t.User), assistant: t.Assistant, results: t.Results}
	}
	for _, sc := range k.Sent {
		c.sent = append(c.sent, sentCall{id: sc.ID, action: sc.Action, invalid: sc.Invalid, dropped: sc.Dropped})
	}
	s.mu.Lock()
	s.convs[key] = c
	s.mu.Unlock()
	return nil
}

// Decide implements agents.Agent with the seat's world's tools.
func (s *seat) Decide(ctx context.Context, o org.Observation) ([]org.Action, error) {
	return s.decide(ctx, s.tools, s.names, o)
}

// Name says what plays the seat, for session metadata: "llm/" and the model.
func (a *Agent) Name() string { return "llm/" + a.opts.Model }

// Forget drops the conversations of session: call it when the session is
// over, so that an Agent playing many sessions does not keep them all.
func (a *Agent) Forget(session string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for key := range a.convs {
		if strings.HasPrefix(key, session+"/") {
			delete(a.convs, key)
		}
	}
}

// conversation is one member's exchange with the model.
type conversation struct {
	mu     sync.Mutex
	system message
	turns  []turn
	// sent are the actions of the last answered turn, one per tool call of
	// its assistant message, waiting for the next observation to tell
	// which were refused.
	sent []sentCall
	n    int // turns asked, for tool call IDs the endpoint did not give
}

// turn is one observation and what came of it.
type turn struct {
	user      message
	assistant *message
	results   []message
}

// sentCall is a tool call and the action it became.
type sentCall struct {
	id      string
	action  org.Action
	invalid string // why it did not parse, if it did not
	dropped string // why it was not sent, if it was not
}

// message is a chat message in the OpenAI format.
type message struct {
	Role       string     `json:"role"`
	Content    *string    `json:"content"`
	ToolCalls  []toolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

type toolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function functionCall `json:"function"`
}

type functionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

func text(s string) *string { return &s }

func (a *Agent) conversation(o org.Observation) *conversation {
	a.mu.Lock()
	defer a.mu.Unlock()
	key := o.Session + "/" + o.Member
	c := a.convs[key]
	if c == nil {
		c = &conversation{system: message{Role: "system", Content: text(systemPrompt(o))}}
		a.convs[key] = c
	}
	return c
}

// Decide implements agents.Agent: it asks the model what member o.Member
// does now. An HTTP error, an error answer or a timeout is returned as an
// error; malformed tool calls become InvalidAction actions.
func (a *Agent) Decide(ctx context.Context, o org.Observation) ([]org.Action, error) {
	return a.decide(ctx, a.tools, nil, o)
}

// decide asks the model about o offering tools, those named names (nil:
// every action's).
func (a *Agent) decide(ctx context.Context, tools json.RawMessage, names []string, o org.Observation) ([]org.Action, error) {
	acts, err := a.take(o, names, func(system message, history []turn, user message) (answer, error) {
		return a.ask(ctx, tools, system, history, user)
	})
	if err != nil {
		return nil, err // the turn is not kept: the next observation supersedes it
	}
	a.logger.Debug("llm turn", "member", o.Member, "turn", o.Turn, "actions", len(acts))
	return acts, nil
}

// Remembers says that the agent keeps the last turns of each member's
// conversation (Options.MaxHistory; none when negative): a session
// resumed, forked or taken over gives it its members' past turns (Recall)
// rather than opening the model's conversation anew.
func (a *Agent) Remembers() bool { return a.opts.MaxHistory > 0 }

// Recall takes a past turn of o.Member into its conversation as if the
// model had answered it with recorded, asking no model: the observation as
// the user's message, the recorded actions as the assistant's tool calls,
// and their results as the next observation tells them, as Decide keeps a
// turn. What the model wrote besides its tool calls is not in the log, and
// an action recorded as invalid (a call that did not parse) cannot be said
// as the call it came from: both are left out.
func (a *Agent) Recall(o org.Observation, recorded []org.Action) error {
	_, err := a.take(o, nil, func(message, []turn, message) (answer, error) {
		var ans answer
		for _, act := range recorded {
			if name, args, err := agents.ToolCallFromAction(act); err == nil {
				ans.calls = append(ans.calls, rawCall{name: name, arguments: string(args)})
			}
		}
		return ans, nil
	})
	return err
}

// take is one turn of o.Member's conversation: it tells the model the
// results of the last turn's calls (report), gets the answer to o given
// the system prompt and the history kept before it, and keeps the turn (at
// most MaxHistory turns before it). It returns the actions the answer's
// tool calls become (a call of a tool not among offered, unless nil, is an
// unknown tool); their results wait for the next observation. When get
// fails the turn is not kept.
func (a *Agent) take(o org.Observation, offered []string, get func(system message, history []turn, user message) (answer, error)) ([]org.Action, error) {
	c := a.conversation(o)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.report(o.Rejected)
	user, err := ObservationMessage(o)
	if err != nil {
		return nil, err
	}
	c.n++
	t := turn{user: message{Role: "user", Content: text(user)}}
	history := c.turns
	if a.opts.MaxHistory < 0 {
		history = nil
	} else if len(history) > a.opts.MaxHistory {
		history = history[len(history)-a.opts.MaxHistory:]
	}
	ans, err := get(c.system, history, t.user)
	if err != nil {
		return nil, err
	}
	return c.answered(t, ans, a.opts.MaxHistory, offered), nil
}

// answered keeps turn t with the model's answer ans (at most maxHistory
// turns before it) and returns the actions its tool calls become (a call
// of a tool not among offered, unless nil, is an unknown tool); their
// results wait for the next observation (report).
func (c *conversation) answered(t turn, ans answer, maxHistory int, offered []string) []org.Action {
	asst := message{Role: "assistant", Content: ans.content}
	acts := []org.Action{}
	for i, tc := range ans.calls {
		id := tc.id
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", c.n, i+1)
		}
		asst.ToolCalls = append(asst.ToolCalls, toolCall{ID: id, Type: "function", Function: functionCall{Name: tc.name, Arguments: tc.arguments}})
		s := sentCall{id: id}
		if len(acts) >= org.MaxActions {
			s.dropped = fmt.Sprintf("not sent: at most %d actions per turn", org.MaxActions)
		} else {
			act, err := agents.ActionFromOfferedToolCall(offered, tc.name, []byte(tc.arguments))
			if err != nil {
				s.invalid = err.Error()
				act = org.Action{Type: InvalidAction, Text: err.Error()}
			}
			s.action = act
			acts = append(acts, act)
		}
		c.sent = append(c.sent, s)
	}
	if asst.Content == nil && len(asst.ToolCalls) == 0 {
		asst.Content = text("")
	}
	t.assistant = &asst
	c.turns = append(c.turns, t)
	if keep := max(maxHistory, 0) + 1; len(c.turns) > keep {
		c.turns = append([]turn(nil), c.turns[len(c.turns)-keep:]...)
	}
	return acts
}

// argumentsOf returns a tool call's arguments as the JSON text they hold:
// OpenAI sends a string containing JSON; some servers send the object.
func argumentsOf(raw json.RawMessage) string {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s
	}
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	return string(raw)
}

// report answers the tool calls of the last turn with tool messages: which
// actions were accepted and which refused, and why, from the refusals the
// engine reported since.
func (c *conversation) report(rejected []org.RejectedView) {
	if len(c.turns) == 0 || len(c.sent) == 0 {
		c.sent = nil
		return
	}
	last := &c.turns[len(c.turns)-1]
	// The actions the reply carried, in order: a call not sent is none.
	var acts []org.Action
	for _, s := range c.sent {
		if s.dropped == "" {
			acts = append(acts, s.action)
		}
	}
	refusals := agents.MatchRefusals(acts, rejected)
	k := 0
	for _, s := range c.sent {
		result := s.dropped
		if s.dropped == "" {
			result = ToolResult(s.action, refusals[k]) // s.action is an InvalidAction when s.invalid is set
			k++
		}
		last.results = append(last.results, message{Role: "tool", ToolCallID: s.id, Content: text(result)})
	}
	c.sent = nil
}

// answer is what an endpoint answered, whichever its API: the model's text
// and its tool calls, in order.
type answer struct {
	content *string
	calls   []rawCall
}

// rawCall is a tool call as the endpoint sent it; id may be empty.
type rawCall struct {
	id, name, arguments string
}

// ask sends the conversation (system prompt, history, the new observation)
// in the API the agent speaks and returns the answer.
func (a *Agent) ask(ctx context.Context, tools json.RawMessage, system message, history []turn, user message) (answer, error) {
	if a.opts.API == APIResponses {
		return a.askResponses(ctx, tools, system, history, user)
	}
	return a.askChat(ctx, tools, system, history, user)
}

// apiError is the error object OpenAI-compatible endpoints answer with.
type apiError struct {
	Code    any    `json:"code"`
	Message string `json:"message"`
}

// post sends body as JSON to the endpoint and returns the answer's bytes
// once its status is 2xx; otherwise an error with the status and the
// endpoint's message.
func (a *Agent) post(ctx context.Context, body any) ([]byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("llm: request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.endpoint, bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("llm: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if a.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+a.opts.APIKey)
	}
	res, err := a.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("llm: POST %s: %w", a.endpoint, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxResponseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("llm: POST %s: reading the answer: %w", a.endpoint, err)
	}
	over := len(data) > maxResponseBytes
	data = data[:min(len(data), maxResponseBytes)]
	if res.StatusCode/100 != 2 {
		msg := strings.TrimSpace(string(data))
		var e struct {
			Error *apiError `json:"error"`
		}
		if json.Unmarshal(data, &e) == nil && e.Error != nil && e.Error.Message != "" {
			msg = e.Error.Message
		}
		return nil, fmt.Errorf("llm: POST %s: %s: %s", a.endpoint, res.Status, clip(msg))
	}
	if over {
		// Cut short, it would be reported as JSON that ends too soon.
		return nil, fmt.Errorf("llm: POST %s: the answer is over %d bytes; the limit is %d MiB", a.endpoint, maxResponseBytes, maxResponseBytes>>20)
	}
	return data, nil
}

// clip shortens an endpoint's message for an error.
func clip(msg string) string {
	if len(msg) > 300 {
		return msg[:300] + "…"
	}
	return msg
}
