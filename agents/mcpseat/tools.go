package mcpseat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/httpgw"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/org"
)

// ObserveTool is the name of the tool that waits for the seat's turn.
const ObserveTool = "observe"

// ObservationURI is the resource holding the seat's observation now.
const ObservationURI = "corpsim://seat/observation"

// Instructions tells a client what the server is for (the initialize and
// server/discover results carry it).
const Instructions = "This server is one seat of a corpsim session: you play one member of a simulated company. " +
	"Call observe: it waits until you are asked to decide and returns your observation (what you hold, can take, must approve, your inbox), " +
	"whose \"turn\" is the turn you answer. Answer it with one action tool (claim, work, complete, handoff, request_approval, approve, reject, " +
	"escalate, message, wait): the call answers that turn and ends it, and the engine checks the action against the company's rules — " +
	"a refusal shows in your next observation's \"rejected\". Then call observe again. Once the session has ended observe returns " +
	"{\"done\": true}. The resource " + ObservationURI + " holds your observation without waiting."

// actSuffix ends every action tool's description.
const actSuffix = " This call answers your waiting turn with this one action and ends the turn (call observe first to see the turn; " +
	"if none waits yet, the call waits for one a while). The result says which turn was answered; the engine's verdict on the action, " +
	"a refusal included, is in your next observation (\"rejected\")."

// Tools returns the tools of a seat whose world is not known as MCP tool
// definitions: every action of agents.ToolDefs (the actions of `corpsim
// tools`, with their JSON Schemas as inputSchema), then observe.
func Tools() []*mcp.Tool { return ToolsOf(agents.ToolDefs()) }

// ToolsOf returns the MCP tools of a seat offered the actions defs (its
// world's, agents.ToolDefsFor: `corpsim tools --world`), then observe.
func ToolsOf(defs []agents.Tool) []*mcp.Tool {
	var out []*mcp.Tool
	no := false
	for _, d := range defs {
		schema, err := json.Marshal(d.Function.Parameters)
		if err != nil {
			panic("mcpseat: a tool schema does not encode: " + err.Error())
		}
		out = append(out, &mcp.Tool{Name: d.Function.Name, Description: d.Function.Description + actSuffix,
			InputSchema: json.RawMessage(schema),
			Annotations: &mcp.ToolAnnotations{DestructiveHint: &no, OpenWorldHint: &no}})
	}
	out = append(out, &mcp.Tool{Name: ObserveTool, Title: "Observe",
		Description: "Wait until it is your turn to decide and return your observation as structured content (and as JSON text): " +
			"its \"turn\" is the turn your next action answers, \"done\" is false. If no turn comes within \"wait\" seconds it returns " +
			"{\"done\": false, \"turn\": 0}: call it again. Once the session has ended it returns {\"done\": true, \"status\": …} " +
			"(finished, interrupted or stopped). It does not use up your turn: calling it twice returns the same turn.",
		InputSchema: json.RawMessage(observeSchema),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: &no}})
	return out
}

const observeSchema = `{"type":"object","properties":{"wait":{"type":"number","minimum":0,"maximum":50,` +
	`"description":"How many seconds to wait for your turn at most (default 30, at most 50)."}},"required":[],"additionalProperties":false}`

func (s *Server) newMCPServer(tools []*mcp.Tool) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "corpsim", Title: "corpsim seat", Version: wire.Version}, &mcp.ServerOptions{
		Instructions: Instructions,
		Logger:       newSlog(s.log.Named("sdk")),
		// Tools and the resource never change; no logging, no subscriptions.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}, Resources: &mcp.ResourceCapabilities{}},
		SetCacheable: cacheable,
	})
	for _, t := range tools {
		if t.Name == ObserveTool {
			srv.AddTool(t, s.observe)
		} else {
			srv.AddTool(t, s.action(t.Name))
		}
	}
	srv.AddResource(&mcp.Resource{URI: ObservationURI, Name: "observation", Title: "Your observation",
		MIMEType: "application/json",
		Description: "Your observation now, without waiting: the waiting turn's (as observe returns it), " +
			"{\"done\": false, \"turn\": 0} while none waits, or {\"done\": true, …} once the session has ended."}, s.readObservation)
	srv.AddReceivingMiddleware(s.countErrors)
	return srv
}

// cacheable sets the cache hints of results (2026-07-28): a seat's tools
// are its world's and do not change while the server runs, the other
// lists are the same for every seat; the observation is the seat's alone
// and stale at once.
func cacheable(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	switch req.(type) {
	case *mcp.ReadResourceRequest:
		c.TTLMs, c.CacheScope = 0, "private"
	case *mcp.ListToolsRequest:
		c.TTLMs, c.CacheScope = int(time.Hour/time.Millisecond), "private"
	default:
		c.TTLMs, c.CacheScope = int(time.Hour/time.Millisecond), "public"
	}
}

// countErrors records the JSON-RPC errors the server answers (an unknown
// tool or method, bad params).
func (s *Server) countErrors(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil {
			code := int64(jsonrpc.CodeInternalError)
			var werr *jsonrpc.Error
			if errors.As(err, &werr) {
				code = werr.Code
			}
			s.rec.Failed(strconv.FormatInt(code, 10))
		}
		return res, err
	}
}

// callContext is ctx, also ended by Close.
func (s *Server) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

func seatOfCall(extra *mcp.RequestExtra) (*seat, error) {
	var st *seat
	if extra != nil {
		st = seatOfInfo(extra.TokenInfo)
	}
	if st == nil {
		return nil, errors.New("mcpseat: the request carries no seat token")
	}
	return st, nil
}

// actResult is an action call's structured content.
type actResult struct {
	Session   string     `json:"session"`
	Member    string     `json:"member"`
	Turn      uint64     `json:"turn"`      // the turn answered (or waiting, when refused)
	Forwarded bool       `json:"forwarded"` // the action went to the engine as the turn's answer
	Action    org.Action `json:"action"`
	Warnings  []string   `json:"warnings,omitempty"`
	Error     string     `json:"error,omitempty"`
	Status    int        `json:"status,omitempty"` // a refusal's kind, as an HTTP status (409: no turn waiting, or the session ended)
}

// action is the handler of one action tool: it turns the call into an
// action and answers the seat's turn with it.
func (s *Server) action(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		st, err := seatOfCall(req.Extra)
		if err != nil {
			return nil, err
		}
		act, err := agents.ActionFromToolCall(name, req.Params.Arguments)
		if err != nil {
			s.rec.Failed(toolCode(http.StatusBadRequest))
			return toolError(actResult{Session: st.session, Member: st.member, Action: org.Action{Type: name}, Status: http.StatusBadRequest},
				fmt.Sprintf("%v; nothing was sent: your turn, if one waits, still waits", err)), nil
		}
		ctx, cancel := s.callContext(ctx)
		defer cancel()
		reply, err := s.ops.Answer(ctx, st.token, []org.Action{act}, s.cfg.ActWait)
		res := actResult{Session: reply.Session, Member: reply.Member, Turn: reply.Turn, Forwarded: reply.Forwarded,
			Action: act, Warnings: reply.Warnings}
		if res.Session == "" {
			res.Session, res.Member = st.session, st.member
		}
		if err != nil {
			code := httpgw.StatusOf(err)
			s.rec.Failed(toolCode(code))
			res.Error, res.Status = err.Error(), code
			if reply.Forwarded {
				s.rec.Stepped()
			}
			return toolError(res, err.Error()), nil
		}
		s.rec.Stepped()
		return structured(res), nil
	}
}

// toolCode names a tool error for Recorder.Failed.
func toolCode(status int) string { return "tool_error_" + strconv.Itoa(status) }

// observeArgs are observe's arguments.
type observeArgs struct {
	Wait *float64 `json:"wait"`
}

func (s *Server) observeWait(raw json.RawMessage) (time.Duration, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return s.cfg.ObserveWait, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var a observeArgs
	if err := dec.Decode(&a); err != nil {
		return 0, fmt.Errorf("arguments of observe: %v (it takes only \"wait\", a number of seconds)", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return 0, errors.New("arguments of observe have trailing data after the JSON object")
	}
	if a.Wait == nil {
		return s.cfg.ObserveWait, nil
	}
	w := *a.Wait
	if math.IsNaN(w) || w < 0 {
		return 0, fmt.Errorf("argument \"wait\" of observe must be a number of seconds, 0 or more, got %v", w)
	}
	if w >= s.cfg.MaxWait.Seconds() { // 1e30 seconds overflowed to a negative duration: no wait at all
		return s.cfg.MaxWait, nil
	}
	return time.Duration(w * float64(time.Second)), nil
}

func (s *Server) observe(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	st, err := seatOfCall(req.Extra)
	if err != nil {
		return nil, err
	}
	wait, err := s.observeWait(req.Params.Arguments)
	if err != nil {
		s.rec.Failed(toolCode(http.StatusBadRequest))
		return toolError(map[string]any{"error": err.Error(), "status": http.StatusBadRequest}, err.Error()), nil
	}
	ctx, cancel := s.callContext(ctx)
	defer cancel()
	obs, err := s.ops.Observe(ctx, st.token, wait)
	if err != nil {
		code := httpgw.StatusOf(err)
		s.rec.Failed(toolCode(code))
		return toolError(map[string]any{"error": err.Error(), "status": code}, err.Error()), nil
	}
	return structured(observation(obs)), nil
}

func (s *Server) readObservation(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	st, err := seatOfCall(req.Extra)
	if err != nil {
		return nil, err
	}
	ctx, cancel := s.callContext(ctx)
	defer cancel()
	obs, err := s.ops.Observe(ctx, st.token, 0)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(observation(obs))
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: ObservationURI, MIMEType: "application/json", Text: string(b)}}}, nil
}

// observation is what observe returns for obs: the waiting turn's
// observation with "done": false, {"done": true, "status": …} once the
// session has ended, or {"done": false, "turn": 0} while no turn waits.
func observation(obs httpgw.Observation) json.RawMessage {
	switch {
	case obs.Done:
		b, _ := json.Marshal(struct {
			Done    bool   `json:"done"`
			Status  string `json:"status"`
			Session string `json:"session"`
			Member  string `json:"member"`
		}{true, obs.Status, obs.Session, obs.Member})
		return b
	case obs.Turn != 0:
		body := bytes.TrimSpace(obs.Body)
		if len(body) > 2 && body[0] == '{' {
			return append([]byte(`{"done":false,`), body[1:]...)
		}
		b, _ := json.Marshal(struct {
			Done        bool            `json:"done"`
			Turn        uint64          `json:"turn"`
			Observation json.RawMessage `json:"observation"`
		}{false, obs.Turn, body})
		return b
	}
	b, _ := json.Marshal(struct {
		Done    bool   `json:"done"`
		Turn    uint64 `json:"turn"`
		Session string `json:"session"`
		Member  string `json:"member"`
	}{false, 0, obs.Session, obs.Member})
	return b
}

// structured is a successful result: v as structured content and, as the
// specification asks for clients without structured content, as JSON text.
func structured(v any) *mcp.CallToolResult {
	b, err := json.Marshal(v)
	if err != nil {
		return toolError(nil, "the result does not encode: "+err.Error())
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}
}

// toolError is a refused call: the sentence as text (what a model reads)
// and v, if any, as structured content.
func toolError(v any, msg string) *mcp.CallToolResult {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: msg}}, IsError: true}
	if v != nil {
		if b, err := json.Marshal(v); err == nil {
			res.StructuredContent = json.RawMessage(b)
		}
	}
	return res
}
