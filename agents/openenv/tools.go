package openenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/httpgw"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// Tool calling: OpenEnv's MCPToolClient (openenv.core.mcp_client) plays an
// environment by steps whose data is a ListToolsAction,
// {"type":"list_tools"}, or a CallToolAction, {"type":"call_tool",
// "tool_name":…, "arguments":{…}}, and reads the observations back as a
// ListToolsObservation ("tools") or a CallToolObservation ("tool_name",
// "result", "error"). The frame type "mcp" carries MCP's own JSON-RPC
// (tools/list, tools/call) over the same connection. Both are the same
// tools: the episode's world's actions (`corpsim tools --world`), each
// call answering one seat's turn with one action.

// OpenEnv's ToolErrorType values (openenv.core.env_server.mcp_types).
const (
	toolNotFound   = "tool_not_found"
	toolInvalid    = "invalid_args"
	toolExecution  = "execution_error"
	jsonrpcVersion = "2.0"
)

// JSON-RPC 2.0 error codes.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcMethodNotFound = -32601
	rpcInvalidParams  = -32602
	rpcServerError    = -32000
)

// observeTool is the tool that shows the turn waiting now without
// answering it, as corpsim's MCP server's observe does: a tool-calling
// client sees reset's observation as a list of tools, so it observes next.
const observeTool = "observe"

var observeDef = agents.Tool{Type: "function", Function: agents.ToolFunction{
	Name: observeTool,
	Description: "See the turn you are asked to decide now, without answering it: your observation (what you hold, can take, " +
		"must approve, your inbox). Call it first after reset. When no turn waits, it waits for the next one. Then answer the " +
		"turn with one action's tool; its result is your next observation.",
	Parameters: agents.ToolSchema{Type: "object", Properties: map[string]agents.ToolProperty{}, Required: []string{}},
}}

// listed are the tools list_tools and tools/list show: the world's, then observe.
func (e *episode) listed() []agents.Tool { return append(slices.Clip(e.toolsOf()), observeDef) }

// toolAction is a step's data that names an OpenEnv tool action.
type toolAction struct {
	Type      string          `json:"type"` // list_tools or call_tool
	ToolName  string          `json:"tool_name"`
	Arguments json.RawMessage `json:"arguments"`
	// Member names the seat whose turn a call answers; needed only when
	// several of the connection's seats are asked at once.
	Member   string         `json:"member"`
	Metadata map[string]any `json:"metadata"`
}

// isToolAction reports whether a step's data is an object with a "type"
// key (corpsim's own step data has none).
func isToolAction(data []byte) bool {
	d := bytes.TrimSpace(data)
	if len(d) == 0 || d[0] != '{' {
		return false
	}
	var probe struct {
		Type json.RawMessage `json:"type"`
	}
	return json.Unmarshal(d, &probe) == nil && len(probe.Type) > 0
}

func parseToolAction(data []byte) (toolAction, error) {
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimSpace(data)))
	dec.DisallowUnknownFields()
	var a toolAction
	if err := dec.Decode(&a); err != nil {
		return a, validation(`step data: %v (a tool action is {"type": "list_tools"} or {"type": "call_tool", "tool_name": …, "arguments": {…}})`, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return a, validation("step data: trailing data after the JSON object")
	}
	switch a.Type {
	case "list_tools":
		if a.ToolName != "" || len(a.Arguments) > 0 || a.Member != "" {
			return a, validation(`step data: list_tools takes no "tool_name", "arguments" or "member"`)
		}
	case "call_tool":
		if a.ToolName == "" {
			return a, validation(`step data: call_tool needs "tool_name" (list_tools lists them)`)
		}
	default:
		return a, validation(`step data: unknown action type %q (want "list_tools", "call_tool", or no "type": {"actions": {member: [action, …]}})`, clip(a.Type))
	}
	return a, nil
}

// Reply observations of the tool actions.
type (
	// oeTool is OpenEnv's Tool: name, description, input_schema.
	oeTool struct {
		Name        string            `json:"name"`
		Description string            `json:"description"`
		InputSchema agents.ToolSchema `json:"input_schema"`
	}
	// mcpTool is MCP's Tool, as tools/list lists it.
	mcpTool struct {
		Name        string            `json:"name"`
		Description string            `json:"description"`
		InputSchema agents.ToolSchema `json:"inputSchema"`
	}
	// toolFrame is the observation frame of a tool action.
	toolFrame[O any] struct {
		Type string      `json:"type"` // "observation"
		Data toolData[O] `json:"data"`
	}
	toolData[O any] struct {
		Observation O       `json:"observation"`
		Reward      float64 `json:"reward"`
		Done        bool    `json:"done"`
	}
	// toolsObservation is OpenEnv's ListToolsObservation.
	toolsObservation struct {
		Tools     []oeTool `json:"tools"`
		EpisodeID *string  `json:"episode_id"`
	}
	// callObservation is OpenEnv's CallToolObservation: the result is the
	// observation that followed the call (the seats asked next, the end).
	callObservation struct {
		ToolName string       `json:"tool_name"`
		Result   *observation `json:"result"`
		Error    *toolError   `json:"error"`
	}
	toolError struct {
		Type    string `json:"error_type"`
		Message string `json:"message"`
	}
)

// toolsOf returns the tools of the episode's world: the create reply's,
// before the first reset Config.DefaultWorld's, and without either every
// action's.
func (e *episode) toolsOf() []agents.Tool {
	if e.tools != nil {
		return e.tools
	}
	if len(e.rawTools) > 0 {
		var defs []agents.Tool
		if err := json.Unmarshal(e.rawTools, &defs); err == nil {
			e.tools = defs
			return defs
		}
		e.srv.log.Warn("the session's tools do not decode: listing every action's", "session", e.session)
	}
	if e.session == "" {
		if defs := e.srv.defaultTools(); defs != nil {
			return defs
		}
	}
	e.tools = agents.ToolDefs()
	return e.tools
}

// defaultTools are Config.DefaultWorld's tools (nil without one).
func (s *Server) defaultTools() []agents.Tool {
	s.defaultOnce.Do(func() {
		if s.cfg.DefaultWorld == "" {
			return
		}
		w, err := worlds.Shipped(s.cfg.DefaultWorld)
		if err != nil {
			s.log.Warn("the default world does not load: listing every action's tools", "world", s.cfg.DefaultWorld, "error", err)
			return
		}
		s.defaults = agents.ToolDefsFor(w)
	})
	return s.defaults
}

// toolStep answers a step whose data is a tool action.
func (e *episode) toolStep(ctx context.Context, data []byte) (any, error) {
	a, err := parseToolAction(data)
	if err != nil {
		return nil, err
	}
	if a.Type == "list_tools" {
		// Like OpenEnv's, it needs no reset, and it is no step.
		defs := e.listed()
		obs := toolsObservation{Tools: make([]oeTool, len(defs))}
		for i, d := range defs {
			obs.Tools[i] = oeTool{Name: d.Function.Name, Description: d.Function.Description, InputSchema: d.Function.Parameters}
		}
		if e.session != "" {
			id := e.session
			obs.EpisodeID = &id
		}
		// No reward: MCPToolClient.list_tools drops it (pending waits
		// for the next call or step).
		return toolFrame[toolsObservation]{Type: "observation", Data: toolData[toolsObservation]{Observation: obs, Done: e.done}}, nil
	}
	obs, reward, terr, err := e.call(ctx, a.ToolName, a.Arguments, a.Member)
	if err != nil {
		return nil, err
	}
	out := toolFrame[callObservation]{Type: "observation", Data: toolData[callObservation]{Observation: callObservation{ToolName: a.ToolName, Error: terr}}}
	if terr == nil {
		out.Data.Observation.Result = &obs.Data.Observation
		out.Data.Reward, out.Data.Done = reward, obs.Data.Done
	}
	out.Data.Done = out.Data.Done || e.done
	return out, nil
}

// call answers one seat's turn with the action a tool call makes. A step
// answers every turn the last observation showed, so when several seats
// were asked the calls are kept, by seat, until each has one: a call
// before then returns the seats still waiting, with no reward and no step;
// the last sends them together and returns the observation that followed
// and its reward (with the episode's pending rewards). A call names its
// seat with member, or takes the first one still waiting. A call that
// cannot be an action — an unknown tool, bad arguments, a seat not asked
// or answered already — is a tool error and sends nothing. An episode that
// is missing or has ended is a protocol error, as for any step (observe
// still shows the end, and the rewards not reported yet).
func (e *episode) call(ctx context.Context, name string, args json.RawMessage, member string) (obsFrame, float64, *toolError, error) {
	if e.session == "" {
		return obsFrame{}, 0, nil, errorf(CodeSession, http.StatusConflict, "no episode on this connection: send reset first")
	}
	if bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
		args = nil
	}
	if name == observeTool {
		return e.observeCall(ctx, args)
	}
	if e.done {
		return obsFrame{}, 0, nil, errorf(CodeSession, http.StatusConflict, "episode %s has ended (%s): send reset for another", e.session, e.status)
	}
	offered := agents.ToolNames(e.listed())
	if !slices.Contains(offered, name) {
		return obsFrame{}, 0, &toolError{toolNotFound, fmt.Sprintf("unknown tool %q (tools: %s)", clip(name), strings.Join(offered, ", "))}, nil
	}
	act, err := agents.ActionFromToolCall(name, args)
	if err != nil {
		return obsFrame{}, 0, &toolError{toolInvalid, err.Error()}, nil
	}
	if member != "" && !slices.Contains(e.seats, member) {
		return obsFrame{}, 0, &toolError{toolInvalid, fmt.Sprintf("%q is not a seat of this episode (seats: %s)", clip(member), strings.Join(e.seats, ", "))}, nil
	}
	asked := e.asked()
	waiting := e.waiting()
	var req httpgw.StepRequest
	switch {
	case len(asked) == 0 && act.Type == org.ActWait:
		// No turn waits (the last step's wait ran out): wait answers
		// nothing and waits for the next turn.
	case len(asked) == 0:
		return obsFrame{}, 0, &toolError{toolExecution, "no turn of this connection's seats waits now (the last observation asked none), so nothing was done: call wait or observe to wait for the next"}, nil
	case member != "" && !slices.Contains(asked, member):
		return obsFrame{}, 0, &toolError{toolInvalid, fmt.Sprintf("%s is not asked to decide now (asked: %s)", member, strings.Join(asked, ", "))}, nil
	case member != "" && !slices.Contains(waiting, member):
		return obsFrame{}, 0, &toolError{toolInvalid, fmt.Sprintf("%s's turn has its call already; the step goes once %s have theirs", member, strings.Join(waiting, ", "))}, nil
	default:
		if member == "" {
			member = waiting[0]
		}
		if e.queued == nil {
			e.queued = map[string][]org.Action{}
		}
		e.queued[member] = []org.Action{act}
		if len(e.queued) < len(asked) {
			return e.waitingFrame(), 0, nil, nil
		}
		req.Actions = maps.Clone(e.queued)
	}
	sr, err := e.srv.ops.Step(ctx, e.session, req, e.srv.cfg.StepWait)
	if err != nil {
		// Nothing was sent: the earlier calls stay kept, this one is answered by the error.
		delete(e.queued, member)
		return obsFrame{}, 0, nil, e.stepFailed(err)
	}
	e.queued = nil
	e.steps++
	e.srv.rec.Stepped()
	obs := e.observe(sr)
	reward := obs.Data.Reward + e.pending
	e.pending = 0
	e.last = obs
	e.last.Data.Reward = 0 // reported now
	return obs, reward, nil, nil
}

// asked returns the seats the last observation asked to decide, in order:
// looked at only by the tool calls, not at every step.
func (e *episode) asked() []string { return slices.Sorted(maps.Keys(e.last.Data.Observation.Seats)) }

// waiting returns the asked seats whose turn has no call yet, in order.
func (e *episode) waiting() []string {
	asked := e.asked()
	out := make([]string, 0, len(asked))
	for _, m := range asked {
		if _, ok := e.queued[m]; !ok {
			out = append(out, m)
		}
	}
	return out
}

// waitingFrame is the last observation with the seats whose turn has a
// call left out, and no reward.
func (e *episode) waitingFrame() obsFrame {
	f := e.last
	f.Data.Reward = 0
	if len(e.queued) > 0 {
		seats := make(map[string]json.RawMessage, len(f.Data.Observation.Seats))
		for _, m := range e.waiting() {
			seats[m] = f.Data.Observation.Seats[m]
		}
		f.Data.Observation.Seats = seats
	}
	return f
}

// observeCall answers observe: the seats waiting now again (reward: what
// no observation reported yet), or, when none was asked, the next turns.
// After the end it shows the end.
func (e *episode) observeCall(ctx context.Context, args json.RawMessage) (obsFrame, float64, *toolError, error) {
	if a := bytes.TrimSpace(args); len(a) > 0 {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(a, &m); err != nil || len(m) > 0 {
			return obsFrame{}, 0, &toolError{toolInvalid, "observe takes no arguments"}, nil
		}
	}
	if len(e.last.Data.Observation.Seats) == 0 && !e.done {
		sr, err := e.srv.ops.Step(ctx, e.session, httpgw.StepRequest{}, e.srv.cfg.StepWait)
		if err != nil {
			return obsFrame{}, 0, nil, e.stepFailed(err)
		}
		e.steps++
		e.srv.rec.Stepped()
		e.last = e.observe(sr)
	}
	reward := e.last.Data.Reward + e.pending
	e.last.Data.Reward, e.pending = 0, 0 // reported now
	return e.waitingFrame(), reward, nil, nil
}

// end notes an end the gateway did not report (a stop, a session gone):
// no turn waits any more, and observe shows the end.
func (e *episode) end(status string) {
	e.done, e.status, e.queued = true, status, nil
	e.last.Type, e.last.Data.Done = "observation", true
	e.last.Data.Observation.Seats = map[string]json.RawMessage{}
	e.last.Data.Observation.EpisodeID, e.last.Data.Observation.Status = e.session, status
}

// stepFailed maps a failed step's error, noting a session that is gone.
func (e *episode) stepFailed(err error) error {
	if httpgw.StatusOf(err) == http.StatusNotFound {
		e.end("stopped")
	}
	return opError("step", err, false)
}

// rpcRequest is a JSON-RPC 2.0 request of an "mcp" frame.
type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	ID      json.RawMessage `json:"id"`
}

type (
	mcpFrame struct {
		Type string      `json:"type"` // "mcp"
		Data rpcResponse `json:"data"`
	}
	rpcResponse struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result,omitempty"`
		Error   *rpcError       `json:"error,omitempty"`
	}
	rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}
	// callResult is MCP's CallToolResult.
	callResult struct {
		Content           []textContent `json:"content"`
		StructuredContent any           `json:"structuredContent,omitempty"`
		IsError           bool          `json:"isError"`
	}
	textContent struct {
		Type string `json:"type"` // "text"
		Text string `json:"text"`
	}
)

// mcp answers an "mcp" frame: MCP's tools/list and tools/call as JSON-RPC
// 2.0 over the connection, as OpenEnv's server does. A call's reward is
// reported with the connection's next observation, so that the rewards of
// an episode still add up to its score.
func (e *episode) mcp(ctx context.Context, data []byte) any {
	var req rpcRequest
	out := mcpFrame{Type: "mcp", Data: rpcResponse{JSONRPC: jsonrpcVersion, ID: json.RawMessage("null")}}
	failAs := func(label string, code int, format string, args ...any) any {
		out.Data.Error = &rpcError{Code: code, Message: fmt.Sprintf(format, args...)}
		e.srv.rec.Failed(label)
		return out
	}
	fail := func(code int, format string, args ...any) any { return failAs(CodeValidation, code, format, args...) }
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimSpace(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return fail(rpcInvalidRequest, "invalid request: %v (want {\"jsonrpc\": \"2.0\", \"method\": …, \"params\": {…}, \"id\": …})", err)
	}
	out.Data.ID = rpcID(req.ID)
	if req.JSONRPC != jsonrpcVersion || req.Method == "" {
		return fail(rpcInvalidRequest, `invalid request: "jsonrpc" must be "2.0" and "method" given`)
	}
	switch req.Method {
	case "tools/list":
		defs := e.listed()
		tools := make([]mcpTool, len(defs))
		for i, d := range defs {
			tools[i] = mcpTool{Name: d.Function.Name, Description: d.Function.Description, InputSchema: d.Function.Parameters}
		}
		out.Data.Result = map[string]any{"tools": tools}
		return out
	case "tools/call":
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
			Member    string          `json:"member"`
		}
		if err := json.Unmarshal(orEmpty(req.Params), &p); err != nil || p.Name == "" {
			return fail(rpcInvalidParams, `invalid params: tools/call needs {"name": …, "arguments": {…}}`)
		}
		obs, reward, terr, err := e.call(ctx, p.Name, p.Arguments, p.Member)
		if err != nil {
			var pe *protoError
			if !errors.As(err, &pe) {
				pe = &protoError{code: CodeExecution, msg: err.Error()}
			}
			return failAs(pe.code, rpcServerError, "%s", pe.msg)
		}
		if terr != nil {
			out.Data.Result = callResult{Content: []textContent{{"text", terr.Message}}, IsError: true}
			return out
		}
		e.pending += reward // reported with the next observation frame
		text, _ := json.Marshal(obs.Data.Observation)
		out.Data.Result = callResult{Content: []textContent{{"text", string(text)}}, StructuredContent: obs.Data.Observation}
		return out
	}
	out.Data.Error = &rpcError{Code: rpcMethodNotFound, Message: fmt.Sprintf("method not found: %s (this server answers tools/list and tools/call)", clip(req.Method))}
	e.srv.rec.Failed(CodeUnknownType)
	return out
}

// rpcID is a request's id to answer with: a string or a number (of at
// most 256 bytes), else null.
func rpcID(raw json.RawMessage) json.RawMessage {
	id := bytes.TrimSpace(raw)
	if len(id) > 0 && len(id) <= 256 && (id[0] == '"' || id[0] == '-' || (id[0] >= '0' && id[0] <= '9')) {
		return id
	}
	return json.RawMessage("null")
}

func orEmpty(b json.RawMessage) []byte {
	if len(bytes.TrimSpace(b)) == 0 {
		return []byte("{}")
	}
	return b
}

// defaultToolsState is the Server's cache of Config.DefaultWorld's tools.
type defaultToolsState struct {
	defaultOnce sync.Once
	defaults    []agents.Tool
}
