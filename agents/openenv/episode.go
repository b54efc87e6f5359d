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
	"time"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/httpgw"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/org"
)

// Error codes of OpenEnv's WebSocket protocol (WSErrorCode).
const (
	CodeInvalidJSON     = "INVALID_JSON"
	CodeUnknownType     = "UNKNOWN_TYPE"
	CodeValidation      = "VALIDATION_ERROR"
	CodeExecution       = "EXECUTION_ERROR"
	CodeCapacityReached = "CAPACITY_REACHED"
	CodeSession         = "SESSION_ERROR"
)

// Ops are the gateway operations the adapter uses; *httpgw.Gateway
// implements them.
type Ops interface {
	IsOperator(token string) bool
	SeatOf(token string) (session, member string, ok bool)
	Create(ctx context.Context, req wire.CreateRequest) (wire.CreateReply, error)
	Step(ctx context.Context, id string, req httpgw.StepRequest, wait time.Duration) (httpgw.StepReply, error)
	Control(ctx context.Context, id string, op wire.ControlOp) (wire.ControlReply, error)
}

var _ Ops = (*httpgw.Gateway)(nil)

// protoError is a refusal answered as an error frame (or, on the stateless
// routes, an HTTP status).
type protoError struct {
	code   string
	status int // the HTTP status of the stateless routes
	msg    string
}

func (e *protoError) Error() string { return e.code + ": " + e.msg }

func errorf(code string, status int, format string, args ...any) *protoError {
	return &protoError{code: code, status: status, msg: fmt.Sprintf(format, args...)}
}

func validation(format string, args ...any) *protoError {
	return errorf(CodeValidation, http.StatusUnprocessableEntity, format, args...)
}

// opError maps an operation's error to a protocol error; capacity is
// CAPACITY_REACHED only where a session is being created.
func opError(what string, err error, creating bool) *protoError {
	st := httpgw.StatusOf(err)
	var msg string
	var ge *httpgw.Error
	if errors.As(err, &ge) {
		msg = ge.Msg
	} else {
		msg = err.Error()
	}
	msg = what + ": " + msg
	switch {
	case st == http.StatusBadRequest || st == http.StatusRequestEntityTooLarge:
		return &protoError{code: CodeValidation, status: st, msg: msg}
	case st == http.StatusServiceUnavailable && creating:
		return &protoError{code: CodeCapacityReached, status: st, msg: msg}
	case st == http.StatusNotFound || st == http.StatusConflict || st == http.StatusServiceUnavailable ||
		st == http.StatusUnauthorized || st == http.StatusForbidden:
		return &protoError{code: CodeSession, status: st, msg: msg}
	case st == http.StatusGatewayTimeout:
		return &protoError{code: CodeExecution, status: st, msg: msg}
	}
	return &protoError{code: CodeExecution, status: http.StatusBadGateway, msg: msg}
}

// inFrame is a client's frame: {"type": …, "data": …}.
type inFrame struct {
	Type json.RawMessage `json:"type"`
	Data json.RawMessage `json:"data"`
}

// Reply frames.
type (
	obsFrame struct {
		Type string  `json:"type"` // "observation"
		Data obsData `json:"data"`
	}
	obsData struct {
		Observation observation `json:"observation"`
		Reward      float64     `json:"reward"`
		Done        bool        `json:"done"`
	}
	// observation is what an observation reply shows.
	observation struct {
		Seats     map[string]json.RawMessage `json:"seats"` // member -> org.Observation, the turns waiting now
		EpisodeID string                     `json:"episode_id"`
		Status    string                     `json:"status,omitempty"` // once done
		Score     *float64                   `json:"score,omitempty"`  // once done
		Warnings  []string                   `json:"warnings,omitempty"`
		// Tools, in reset's observation, are the world's actions as tool
		// definitions (wire.CreateReply.Tools: `corpsim tools --world`).
		Tools json.RawMessage `json:"tools,omitempty"`
	}
	stateFrame struct {
		Type string `json:"type"` // "state"
		Data state  `json:"data"`
	}
	state struct {
		EpisodeID *string  `json:"episode_id"`
		StepCount int      `json:"step_count"`
		Done      bool     `json:"done"`
		Status    string   `json:"status,omitempty"`
		World     string   `json:"world,omitempty"`
		Seed      uint64   `json:"seed"`
		Seats     []string `json:"seats"`
	}
	errFrame struct {
		Type string  `json:"type"` // "error"
		Data errData `json:"data"`
	}
	errData struct {
		Message string `json:"message"`
		Code    string `json:"code"`
	}
)

// resetKeys are the fields a reset's data may hold: OpenEnv's seed and
// episode_id, and those of a create request a controller chooses.
var resetKeys = []string{"agents", "episode_id", "join_timeout", "load", "seed", "source", "turn_timeout", "world"}

// parseReset turns a reset's data into a create request; prev is the
// connection's previous one (nil: none), replayed when data names no world;
// with neither, world (Config.DefaultWorld, if set) is played.
func parseReset(data []byte, prev *wire.CreateRequest, world string) (wire.CreateRequest, error) {
	fields := map[string]json.RawMessage{}
	if d := bytes.TrimSpace(data); len(d) > 0 && !bytes.Equal(d, []byte("null")) {
		if err := json.Unmarshal(d, &fields); err != nil {
			return wire.CreateRequest{}, validation("reset data must be a JSON object: %v", err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if !slices.Contains(resetKeys, k) {
			return wire.CreateRequest{}, validation("reset data: unknown field %q (known: %s)", k, strings.Join(resetKeys, ", "))
		}
	}
	if id, ok := fields["episode_id"]; ok {
		var s *string
		if err := json.Unmarshal(id, &s); err != nil || (s != nil && len(*s) > 255) {
			return wire.CreateRequest{}, validation(`reset data: "episode_id" must be a string of at most 255 bytes`)
		}
		delete(fields, "episode_id") // the episode's ID is the session's
	}
	for _, k := range []string{"seed", "load", "agents", "world", "source", "turn_timeout", "join_timeout"} {
		if bytes.Equal(bytes.TrimSpace(fields[k]), []byte("null")) {
			delete(fields, k) // OpenEnv clients send "seed": null for "no seed"
		}
	}
	_, named := fields["world"]
	_, source := fields["source"]
	if !named && !source && prev != nil {
		// Replay the previous request, with what this one gives.
		base := map[string]json.RawMessage{}
		b, err := json.Marshal(prev)
		if err != nil {
			panic("openenv: a create request does not encode: " + err.Error())
		}
		if err := json.Unmarshal(b, &base); err != nil {
			panic("openenv: a create request does not decode: " + err.Error())
		}
		for _, k := range slices.Sorted(maps.Keys(base)) {
			if _, given := fields[k]; !given && slices.Contains(resetKeys, k) && string(base[k]) != `""` && string(base[k]) != "0" {
				fields[k] = base[k]
			}
		}
		named, source = prev.World != "", prev.Source != ""
	}
	if !named && !source && world != "" {
		// OpenEnv's generic clients reset with no arguments.
		b, _ := json.Marshal(world)
		fields["world"], named = b, true
	}
	if !named && !source {
		return wire.CreateRequest{}, validation(`reset needs "world" (a shipped world's name, as corpsim worlds lists them) or "source" (a world file's text); this server has no default world (corpsim serve --openenv-world)`)
	}
	if _, ok := fields["agents"]; !ok {
		fields["agents"] = json.RawMessage(`"remote"`) // every agent seat is the connection's
	}
	b, err := json.Marshal(fields)
	if err != nil {
		panic("openenv: reset fields do not encode: " + err.Error())
	}
	req, err := httpgw.DecodeCreate(b)
	if err != nil {
		return wire.CreateRequest{}, opError("reset", err, true)
	}
	return req, nil
}

// stepData is a step's data: the actions answering the turns shown.
type stepData struct {
	Actions map[string][]org.Action `json:"actions"`
	// Metadata is OpenEnv's Action.metadata, which Pydantic actions carry; ignored.
	Metadata map[string]any `json:"metadata,omitempty"`
}

func parseStep(data []byte) (httpgw.StepRequest, error) {
	d := bytes.TrimSpace(data)
	if len(d) == 0 || bytes.Equal(d, []byte("null")) {
		return httpgw.StepRequest{}, validation(`step needs "data": {"actions": {member: [action, …]}} ({} waits for every seat)`)
	}
	dec := json.NewDecoder(bytes.NewReader(d))
	dec.DisallowUnknownFields()
	var s stepData
	if err := dec.Decode(&s); err != nil {
		return httpgw.StepRequest{}, validation(`step data: %v (want {"actions": {member: [action, …]}})`, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return httpgw.StepRequest{}, validation("step data: trailing data after the JSON object")
	}
	for _, m := range slices.Sorted(maps.Keys(s.Actions)) {
		if n := len(s.Actions[m]); n > org.MaxActions {
			return httpgw.StepRequest{}, validation("step data: %s has %d actions; a turn takes at most %d", m, n, org.MaxActions)
		}
	}
	return httpgw.StepRequest{Actions: s.Actions}, nil
}

// episode is a connection's environment: its current session, if any. It
// is used by one goroutine at a time (the connection's).
type episode struct {
	srv     *Server
	session string             // "" before the first reset
	req     wire.CreateRequest // the current (or last) session's create request
	hasReq  bool
	seats   []string // the remote members
	steps   int
	done    bool
	status  string
	// pending is reward recorded before the first observation, or by
	// an "mcp" frame's tool call, reported with the next step.
	pending float64
	// rawTools are the world's tools as the create reply gave them;
	// tools, decoded once a tool action needs them (tools.go).
	rawTools json.RawMessage
	tools    []agents.Tool
	// last is the last observation shown, its reward reported (observe);
	// queued, the tool calls made of its turns so far (tools.go).
	last   obsFrame
	queued map[string][]org.Action
}

// handle answers one frame. quit is true for close.
func (e *episode) handle(ctx context.Context, msg []byte) (reply []byte, quit bool) {
	out, quit, err := e.dispatch(ctx, msg)
	if err != nil {
		var pe *protoError
		if !errors.As(err, &pe) {
			pe = &protoError{code: CodeExecution, msg: err.Error()}
		}
		e.srv.rec.Failed(pe.code)
		return encode(errFrame{Type: "error", Data: errData{Message: pe.msg, Code: pe.code}}), false
	}
	if out == nil {
		return nil, quit
	}
	return encode(out), quit
}

func (e *episode) dispatch(ctx context.Context, msg []byte) (any, bool, error) {
	// One pass: a map of the top-level fields (a frame has two).
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(msg, &fields); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return nil, false, errorf(CodeInvalidJSON, http.StatusBadRequest, "invalid JSON: %v", err)
		}
		return nil, false, validation(`invalid message: a message is a JSON object {"type": …, "data": …}`)
	}
	for _, k := range slices.Sorted(maps.Keys(fields)) {
		if k != "type" && k != "data" {
			return nil, false, validation(`invalid message: unknown field %q (a message is {"type": …, "data": …})`, clip(k))
		}
	}
	f := inFrame{Type: fields["type"], Data: fields["data"]}
	var typ string
	if err := json.Unmarshal(f.Type, &typ); err != nil || len(f.Type) == 0 {
		return nil, false, errorf(CodeUnknownType, http.StatusBadRequest, `unknown message type %s (want "reset", "step", "state", "mcp" or "close")`, orNone(f.Type))
	}
	switch typ {
	case "reset":
		out, err := e.reset(ctx, f.Data)
		return out, false, err
	case "step":
		out, err := e.step(ctx, f.Data)
		return out, false, err
	case "mcp":
		return e.mcp(ctx, f.Data), false, nil
	case "state":
		return stateFrame{Type: "state", Data: e.state()}, false, nil
	case "close":
		return nil, true, nil
	}
	return nil, false, errorf(CodeUnknownType, http.StatusBadRequest, `unknown message type %q (want "reset", "step", "state", "mcp" or "close")`, clip(typ))
}

func orNone(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "(none)"
	}
	return clip(string(raw))
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

func (e *episode) reset(ctx context.Context, data []byte) (any, error) {
	var prev *wire.CreateRequest
	if e.hasReq {
		prev = &e.req
	}
	req, err := parseReset(data, prev, e.srv.cfg.DefaultWorld)
	if err != nil {
		return nil, err
	}
	// The previous session is stopped while the next one is created and
	// shows its first observation (two sessions' syncs at once instead of
	// one after the other), and before the reset answers.
	stopping := e.stop(ctx)
	if stopping != nil {
		defer stopping()
	}
	// Made whole even if the connection ends meanwhile (ctx): a session
	// half made could be left held; once made, it is the episode's, and
	// stopped with it.
	cctx := context.WithoutCancel(ctx)
	reply, err := e.srv.create(cctx, req, false)
	if err != nil && stopping != nil && httpgw.StatusOf(err) == http.StatusServiceUnavailable {
		// At capacity: the stopped session's place is free once its stop
		// has returned (the retries wait for the server to let it go).
		stopping()
		reply, err = e.srv.create(cctx, req, true)
	}
	if err != nil {
		return nil, opError("reset", err, true)
	}
	*e = episode{srv: e.srv, session: reply.Session, req: req, hasReq: true, seats: slices.Sorted(maps.Keys(reply.Seats)), rawTools: reply.Tools}
	sr, err := e.srv.ops.Step(ctx, e.session, httpgw.StepRequest{}, e.srv.cfg.StepWait)
	if err != nil {
		return nil, opError("reset: the first observation", err, false)
	}
	obs := e.observe(sr)
	obs.Data.Observation.Tools = reply.Tools
	// Rewards before the first observation go with the first step,
	// unless there will be none.
	if !obs.Data.Done {
		e.pending, obs.Data.Reward = obs.Data.Reward, 0
	}
	e.last = obs
	e.last.Data.Observation.Tools, e.last.Data.Reward = nil, 0
	return obs, nil
}

// abandon stops the episode's session if it still runs, and returns once
// it has.
func (e *episode) abandon(ctx context.Context) {
	if stopping := e.stop(ctx); stopping != nil {
		stopping()
	}
}

// stop begins stopping the episode's session if it still runs, and
// returns a func that waits until it has (nil when none runs). The
// episode is over at once.
func (e *episode) stop(ctx context.Context) (wait func()) {
	if e.session == "" || e.done {
		return nil
	}
	srv, id, steps := e.srv, e.session, e.steps // e is reused for the next episode meanwhile
	e.end("stopped")
	done := make(chan struct{})
	go func() {
		defer close(done)
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
		defer cancel()
		if _, err := srv.ops.Control(sctx, id, wire.OpStop); err != nil {
			srv.log.Warn("could not stop an abandoned session", "session", id, "error", err)
			return
		}
		srv.log.Debug("session stopped: its connection left it", "session", id, "steps", steps)
	}()
	return func() { <-done }
}

func (e *episode) step(ctx context.Context, data []byte) (any, error) {
	req, err := parseStep(data)
	if err != nil && isToolAction(data) {
		// Not corpsim's step data, which has no "type": one of OpenEnv's
		// MCP actions (MCPToolClient; tools.go). Looked for only here, so
		// that a step costs no second parse.
		return e.toolStep(ctx, data)
	}
	if err != nil {
		return nil, err
	}
	if e.session == "" {
		return nil, errorf(CodeSession, http.StatusConflict, "no episode on this connection: send reset first")
	}
	if e.done {
		return nil, errorf(CodeSession, http.StatusConflict, "episode %s has ended (%s): send reset for another", e.session, e.status)
	}
	for _, m := range slices.Sorted(maps.Keys(e.queued)) {
		// Turns answered by tool calls go with the step, unless it answers them too.
		if _, ok := req.Actions[m]; !ok {
			if req.Actions == nil {
				req.Actions = map[string][]org.Action{}
			}
			req.Actions[m] = e.queued[m]
		}
	}
	sr, err := e.srv.ops.Step(ctx, e.session, req, e.srv.cfg.StepWait)
	if err != nil {
		return nil, e.stepFailed(err) // nothing was sent: the kept calls stay
	}
	e.queued = nil
	e.steps++
	e.srv.rec.Stepped()
	obs := e.observe(sr)
	obs.Data.Reward += e.pending
	e.pending = 0
	e.last = obs
	e.last.Data.Reward = 0
	return obs, nil
}

// observe turns a step reply into an observation frame and notes the end.
func (e *episode) observe(sr httpgw.StepReply) obsFrame {
	o := observation{Seats: sr.Observations, EpisodeID: e.session, Warnings: sr.Warnings}
	if o.Seats == nil {
		o.Seats = map[string]json.RawMessage{}
	}
	if sr.Done {
		e.done, e.status = true, sr.Status
		o.Status, o.Score = sr.Status, sr.Score
	}
	return obsFrame{Type: "observation", Data: obsData{Observation: o, Reward: sr.Rewards, Done: sr.Done}}
}

func (e *episode) state() state {
	s := state{StepCount: e.steps, Done: e.done, Status: e.status, Seats: e.seats}
	if s.Seats == nil {
		s.Seats = []string{}
	}
	if e.session != "" {
		id := e.session
		s.EpisodeID = &id
		s.World, s.Seed = e.req.World, e.req.Seed
		if s.World == "" && e.req.Source != "" {
			s.World = "(source)"
		}
	}
	return s
}

// appendObservation appends f's JSON: the bytes json.Marshal makes of it
// (TestAppendObservation checks this), without its cost: json.Marshal
// re-scans and compacts every seat's observation, which arrives compact
// from the engine's encoder, and that is most of an adapter's step.
func appendObservation(dst []byte, f *obsFrame) []byte {
	o := &f.Data.Observation
	dst = append(dst, `{"type":"observation","data":{"observation":{"seats":{`...)
	for i, m := range slices.Sorted(maps.Keys(o.Seats)) {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendValue(dst, m)
		dst = append(dst, ':')
		dst = append(dst, o.Seats[m]...)
	}
	dst = append(dst, `},"episode_id":`...)
	dst = appendValue(dst, o.EpisodeID)
	if o.Status != "" {
		dst = appendValue(append(dst, `,"status":`...), o.Status)
	}
	if o.Score != nil {
		dst = appendValue(append(dst, `,"score":`...), *o.Score)
	}
	if len(o.Warnings) > 0 {
		dst = appendValue(append(dst, `,"warnings":`...), o.Warnings)
	}
	if len(o.Tools) > 0 {
		dst = append(append(dst, `,"tools":`...), o.Tools...)
	}
	dst = appendValue(append(dst, `},"reward":`...), f.Data.Reward)
	dst = appendValue(append(dst, `,"done":`...), f.Data.Done)
	return append(dst, "}}"...)
}

// appendValue appends a small value's JSON.
func appendValue(dst []byte, v any) []byte { return append(dst, encode(v)...) }

func encode(v any) []byte {
	if f, ok := v.(obsFrame); ok {
		return appendObservation(nil, &f)
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic("openenv: a reply does not encode: " + err.Error())
	}
	return b
}
