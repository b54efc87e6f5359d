package httpgw

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// The operations below are the gateway's session and seat operations, as
// Go calls. The /v1 handlers are thin wrappers over them, and so are the
// other protocols' adapters (OpenEnv, MCP, NeMo Gym): every one of them
// answers turns, reports rewards and keeps seats apart through this code.
//
// Operator operations (Create, Fork, Control, Step, Score, Events) trust
// their caller to have checked the operator token (IsOperator). Seat
// operations (Observe, Act, Answer) are authorised by the seat's token
// alone: a token reaches only its own seat.

// Error is an operation's refusal. Status is the HTTP status naming its
// kind: 400 a bad request, 401 an unknown token, 403 a token outside its
// reach, 404 an unknown session, 409 a conflict (no turn waiting, a stale
// turn, another step running, the session has ended), 413 too large, 503
// no capacity (the server already runs its --max-sessions sessions) or the
// gateway is closing, 502 or 504 the server failed or did not answer.
type Error struct {
	Status int
	Msg    string
	// Code, when set, says what kind of refusal it is (Delete's: the
	// wire.DeleteReply codes).
	Code string
}

func (e *Error) Error() string { return e.Msg }

func errorf(status int, format string, args ...any) *Error {
	return &Error{Status: status, Msg: fmt.Sprintf(format, args...)}
}

// natsErr is the refusal for a failed NATS request.
func natsErr(err error, format string, args ...any) *Error {
	return &Error{Status: natsStatus(err), Msg: fmt.Sprintf(format, args...) + ": " + err.Error()}
}

// StatusOf is the HTTP status of an operation's outcome: 200 for nil, an
// *Error's Status, 500 for any other error.
func StatusOf(err error) int {
	if err == nil {
		return http.StatusOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return http.StatusInternalServerError
}

// checkID refuses a session ID no session can have before it reaches a
// NATS subject ("a.b.c" would be three subject tokens).
func checkID(id string) error {
	if err := events.ValidSessionID(id); err != nil {
		return errorf(http.StatusBadRequest, "%s", strings.TrimPrefix(err.Error(), "events: "))
	}
	return nil
}

// decodeStrict decodes one JSON value into v, refusing unknown fields and
// trailing data; an empty body leaves v as it is when emptyOK.
func decodeStrict(body []byte, v any, emptyOK bool) error {
	if len(bytes.TrimSpace(body)) == 0 {
		if emptyOK {
			return nil
		}
		return errorf(http.StatusBadRequest, "the request needs a JSON body")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errorf(http.StatusBadRequest, "malformed request: %s", describeJSON(err))
	}
	// Anything but the end after the value, a closing bracket included
	// (which dec.More would take for the end of an enclosing one).
	if _, err := dec.Token(); err != io.EOF {
		return errorf(http.StatusBadRequest, "malformed request: trailing data after the JSON object")
	}
	return nil
}

// describeJSON says what encoding/json found wrong with a request body in
// the body's terms (JSON kinds, field names, byte offsets) rather than the
// Go types it was decoded into.
func describeJSON(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field == "":
		return fmt.Sprintf("the body is a JSON %s; expected an object", typeErr.Value)
	case errors.As(err, &typeErr):
		// The field's path, without the Go structs embedded on the way
		// (CreateRequest.world): JSON keys here are lower case.
		var path []string
		for _, k := range strings.Split(typeErr.Field, ".") {
			if k != "" && (k[0] < 'A' || k[0] > 'Z') {
				path = append(path, k)
			}
		}
		return fmt.Sprintf("field %q is a JSON %s; expected %s", strings.Join(path, "."), typeErr.Value, jsonKind(typeErr.Type))
	case errors.As(err, &syntaxErr):
		return fmt.Sprintf("not JSON at byte %d: %s", syntaxErr.Offset, strings.TrimPrefix(err.Error(), "json: "))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "the JSON ends early"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// jsonKind names what JSON a value of type t is read from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number in range"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

// DecodeCreate decodes a create request strictly, as POST /v1/sessions
// does: unknown fields and trailing data are refused, and so is an explicit
// "load": 0 (an omitted load is 1, which wire.CreateRequest.Load cannot
// tell apart; other loads are checked by the server). Its errors are
// *Error with Status 400.
func DecodeCreate(data []byte) (wire.CreateRequest, error) {
	var req struct {
		wire.CreateRequest
		Load *float64 `json:"load,omitempty"`
	}
	if err := decodeStrict(data, &req, false); err != nil {
		return wire.CreateRequest{}, err
	}
	if req.Load != nil {
		if *req.Load == 0 {
			return wire.CreateRequest{}, errorf(http.StatusBadRequest, "%v", worlds.CheckLoad(0, 0))
		}
		req.CreateRequest.Load = *req.Load
	}
	return req.CreateRequest, nil
}

// IsOperator reports whether tok is the server's operator token.
func (g *Gateway) IsOperator(tok string) bool { return g.isOperator(tok) }

// SeatOf names the seat a seat token belongs to; ok is false for a token
// the gateway does not know (or no longer: its session ended more than
// Config.Retain ago).
func (g *Gateway) SeatOf(tok string) (session, member string, ok bool) {
	st := g.seatFor(tok)
	if st == nil {
		return "", "", false
	}
	return st.session.id, st.member, true
}

// SeatTools returns the tools of the world of the session a seat token
// reaches (wire.CreateReply.Tools: `corpsim tools --world` as compact
// JSON), or nil for an unknown token or a session whose server sent none.
func (g *Gateway) SeatTools(tok string) json.RawMessage {
	st := g.seatFor(tok)
	if st == nil {
		return nil
	}
	return st.session.tools
}

// ForkRequest is the body of fork and reset.
type ForkRequest struct {
	At          uint64 `json:"at"`
	Seed        uint64 `json:"seed,omitempty"`   // 0: the parent's
	Agents      string `json:"agents,omitempty"` // "": the parent's (the spec it was created with, or its stored seats)
	Wait        bool   `json:"wait,omitempty"`
	TurnTimeout string `json:"turn_timeout,omitempty"`
}

// Fork makes a session that replays parent up to event f.At (1: a reset)
// and goes on from there, as Create does.
func (g *Gateway) Fork(ctx context.Context, parent string, f ForkRequest) (wire.CreateReply, error) {
	if err := checkID(parent); err != nil {
		return wire.CreateReply{}, err
	}
	if f.At == 0 {
		return wire.CreateReply{}, errorf(http.StatusBadRequest, `fork needs "at": the event to fork at (1 or more; 1 is a reset)`)
	}
	if f.Agents == "" {
		p := g.session(parent)
		if p == nil {
			// One it holds no record of may be in no log at all (deleted,
			// mistyped): a server that says so makes it a 404, not a
			// request to mend. (No answer at all says nothing: a
			// cluster's workers serve no history.)
			var resp wire.HistoryResponse
			if err := g.request(ctx, wire.HistorySubject(parent), wire.HistoryRequest{From: 1, Limit: 1}, &resp, historyTimeout); err == nil && resp.NoSession {
				return wire.CreateReply{}, errorf(http.StatusNotFound, "no session %s: the server's log does not hold it", parent)
			}
		}
		if p != nil && p.agents != "" {
			f.Agents = p.agents
		} // else the server takes the parent's agents from its metadata
	}
	return g.Create(ctx, wire.CreateRequest{Parent: parent, ForkSeq: f.At, Seed: f.Seed, Agents: f.Agents, Wait: f.Wait, TurnTimeout: f.TurnTimeout})
}

// Create makes a session on the server, follows its feed and joins its
// remote seats, then starts it unless req.Wait. The reply carries the
// seats' tokens (the gateway's own for seats the server gave none).
func (g *Gateway) Create(ctx context.Context, req wire.CreateRequest) (wire.CreateReply, error) {
	turnWait := g.cfg.TurnWait
	if req.TurnTimeout != "" {
		d, err := time.ParseDuration(req.TurnTimeout)
		if err != nil || d <= 0 {
			return wire.CreateReply{}, errorf(http.StatusBadRequest, "turn_timeout %q is not a positive duration", req.TurnTimeout)
		}
		turnWait = d
	}
	start := !req.Wait
	sent := req
	sent.Wait = true // started below, once the feed is followed and the seats have joined
	sent.Via = wire.ViaHTTP
	var reply wire.CreateReply
	if err := g.request(ctx, wire.CreateSubject, sent, &reply, createTimeout); err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return reply, errorf(http.StatusServiceUnavailable, "create: no server takes sessions (every one is full or shutting down)")
		}
		return reply, natsErr(err, "create")
	}
	if reply.Error != "" {
		if strings.Contains(reply.Error, "too many sessions") {
			return wire.CreateReply{}, errorf(http.StatusServiceUnavailable, "%s", reply.Error)
		}
		if req.Parent != "" && strings.Contains(reply.Error, events.ErrNoSession.Error()) {
			return wire.CreateReply{}, errorf(http.StatusNotFound, "%s", reply.Error) // a fork or reset of a session no log has
		}
		return wire.CreateReply{}, errorf(http.StatusBadRequest, "%s", reply.Error)
	}
	s := newSession(g, reply, req, turnWait)
	fail := func(code int, err error) (wire.CreateReply, error) {
		s.log.Error("session abandoned", "error", err)
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), controlTimeout)
		defer cancel()
		_, _ = g.control(sctx, s.id, wire.OpStop)
		s.finish(statusStopped)
		g.forget(s)
		return wire.CreateReply{}, errorf(code, "session %s: %v (it was stopped)", s.id, err)
	}
	if err := s.follow(); err != nil {
		return fail(http.StatusBadGateway, err)
	}
	if err := s.join(ctx, reply.Seats); err != nil {
		return fail(http.StatusBadGateway, err)
	}
	if !g.register(s) {
		return fail(http.StatusServiceUnavailable, errors.New("the gateway is closing"))
	}
	if start {
		if _, err := g.control(ctx, s.id, wire.OpStart); err != nil {
			return fail(natsStatus(err), fmt.Errorf("start: %w", err))
		}
		if s.parent != "" {
			s.learnPrefix(ctx)
		}
	}
	s.log.Info("session created", "parent", s.parent, "fork_seq", s.forkSeq, "remote_seats", len(s.seats), "started", start)
	return s.credentials(reply), nil
}

// endedReply answers an operation on an ended session: its status and a
// stop (done already) as recorded; a start or a pause, which cannot
// happen any more, with 409 naming how it ended.
func endedReply(r wire.ControlReply, op wire.ControlOp) (wire.ControlReply, error) {
	if op == wire.OpStart || op == wire.OpPause {
		return r, errorf(http.StatusConflict, "session %s has ended (%s): it cannot be %s", r.Session, r.Status, map[wire.ControlOp]string{wire.OpStart: "started", wire.OpPause: "paused"}[op])
	}
	return r, nil
}

// Control sends a control operation (start, pause, stop, status) to a
// session; for an ended session the gateway created it answers from its
// record.
func (g *Gateway) Control(ctx context.Context, id string, op wire.ControlOp) (wire.ControlReply, error) {
	if err := checkID(id); err != nil {
		return wire.ControlReply{}, err
	}
	switch op {
	case wire.OpStart, wire.OpPause, wire.OpStop, wire.OpStatus:
	default:
		return wire.ControlReply{}, errorf(http.StatusBadRequest, "unknown op %q (expected start, pause, stop or status)", op)
	}
	s := g.session(id)
	if s != nil && s.hasEnded() {
		// Its feed brought session.ended (or the gateway saw it stop): the
		// server is letting go of its control subject, and a request sent
		// just as it does may be dropped unanswered rather than refused.
		return endedReply(s.controlReply(), op)
	}
	reply, err := g.control(ctx, id, op)
	if errors.Is(err, nats.ErrNoResponders) && s != nil {
		s.probe(ctx)
		if !s.hasEnded() {
			// It answers again (a worker took it over, it resumed):
			// the operation never reached it.
			return reply, errorf(http.StatusServiceUnavailable, "session %s did not answer %s while it moved (a hand-off, a resume): ask again", id, op)
		}
		return endedReply(s.controlReply(), op)
	}
	if errors.Is(err, nats.ErrNoResponders) {
		if op == wire.OpStatus {
			// An ended session the gateway holds no record of (it ran
			// before a restart): its stored log says where it stands. (A
			// stop is not answered so: a session whose log has no end may
			// be resumed by its server later, which the stop did not stop.)
			if st, err := g.storedScore(ctx, id); err == nil {
				return endedReply(wire.ControlReply{Session: id, Status: st.Status, Events: st.Events, Time: st.Time, Score: st.Score}, op)
			}
		}
		return reply, errorf(http.StatusNotFound, "no running session %s answers %s: it has ended, or there is none (GET /v1/sessions lists them)", id, op)
	}
	if err != nil {
		return reply, natsErr(err, "control %s", op)
	}
	if s != nil {
		switch op {
		case wire.OpStop:
			status := reply.Status // the server's word: interrupted
			if status == "" {
				status = statusStopped
			}
			s.finish(status)
		case wire.OpStart:
			if s.hasPrefix() {
				s.learnPrefix(ctx)
			}
		}
	}
	return reply, nil
}

// controlReply describes an ended session from the gateway's record.
func (s *session) controlReply() wire.ControlReply {
	s.mu.Lock()
	defer s.mu.Unlock()
	score, _ := s.scoreLocked()
	r := wire.ControlReply{Session: s.id, Status: s.status, Events: s.last, Score: score}
	if r.Status == "" {
		r.Status = "created" // waiting for start
	}
	if n := len(s.own); n > 0 {
		r.Time = s.own[n-1].Time
	}
	return r
}

// EventsReply is the body of GET events.
type EventsReply struct {
	Session string         `json:"session"`
	Events  []events.Event `json:"events"`
	Last    uint64         `json:"last"`           // the session's last seq known
	Next    uint64         `json:"next,omitempty"` // from for the next page; 0 when this page reaches Last
	Source  string         `json:"source"`         // "server" (a running session's log) or "gateway" (its record of the feed)
	// Complete is false when the record misses events (a fork's prefix the gateway could not learn, events lost from the feed).
	Complete bool `json:"complete"`
}

// Events returns up to limit (at most wire.MaxHistoryPage) of a session's
// stored events from seq from on: a running session's from the server,
// an ended one's from the gateway's record.
func (g *Gateway) Events(ctx context.Context, id string, from uint64, limit int) (EventsReply, error) {
	if err := checkID(id); err != nil {
		return EventsReply{}, err
	}
	from, limit = max(from, 1), min(max(limit, 1), wire.MaxHistoryPage)
	s := g.session(id)
	if s != nil && s.hasEnded() {
		// As Control: the server is letting go of the session's subjects.
		if page, ok := s.eventsPage(from, limit); ok {
			return page, nil
		}
	}
	resp, err := g.history(ctx, id, from, limit)
	if err == nil {
		out := EventsReply{Session: id, Events: resp.Events, Last: resp.Last, Source: "server", Complete: true}
		if out.Events == nil {
			out.Events = []events.Event{}
		}
		if n := len(resp.Events); n > 0 && resp.Events[n-1].Seq < resp.Last {
			out.Next = resp.Events[n-1].Seq + 1
		}
		return out, nil
	}
	if !errors.Is(err, nats.ErrNoResponders) || s == nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return EventsReply{}, errorf(http.StatusNotFound, "session %s is not running and the gateway holds no record of it", id)
		}
		return EventsReply{}, natsErr(err, "events")
	}
	page, ok := s.eventsPage(from, limit)
	if !ok {
		return EventsReply{}, errorf(http.StatusGone, "events of session %s before %d are no longer held by the gateway (it keeps the last %d) and no server serves its log: read them with corpsim log %s on the server's data",
			id, page.Next, g.cfg.RecordEvents, id)
	}
	return page, nil
}

// eventsPage serves events from the gateway's record. It reports false,
// with the first seq the record holds as Next, when the record no longer
// holds the event at from (see Config.RecordEvents).
func (s *session) eventsPage(from uint64, limit int) (EventsReply, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.trimmed && len(s.own) > 0 && from < s.own[0].Seq {
		return EventsReply{Next: s.own[0].Seq}, false
	}
	out := EventsReply{Session: s.id, Events: []events.Event{}, Last: s.last, Source: "gateway",
		Complete: !s.gaps && s.prefixKnown && (s.prefix != nil || s.forkSeq == 0)}
	for _, list := range [][]events.Event{s.prefix, s.own} {
		for _, e := range list {
			if e.Seq < from {
				continue
			}
			if len(out.Events) == limit {
				out.Next = e.Seq
				return out, true
			}
			out.Events = append(out.Events, e)
		}
	}
	return out, true
}

// ScoreReply is the body of GET score.
type ScoreReply struct {
	Session string `json:"session"`
	Status  string `json:"status"` // the server's while it runs; then finished or stopped
	Events  uint64 `json:"events"`
	Time    int64  `json:"time"`
	// Score is the team score by the reward events recorded so far — the
	// final team score once the session has finished. For a session the
	// gateway did not create it is the server's control status score.
	Score    float64 `json:"score"`
	Complete bool    `json:"complete"` // no reward is missing from Score
	Source   string  `json:"source"`   // "gateway" or "server"
}

// ListReply is the answer of GET /v1/sessions.
type ListReply struct {
	Sessions []events.SessionMeta `json:"sessions"`
	// Damaged says, when the server's store could not read the metadata
	// of some sessions, what is damaged: the list is not whole.
	Damaged string `json:"damaged,omitempty"`
}

// List returns the metadata of the sessions the server behind the gateway
// lists (wire.ListSubject: those of its store, and those it runs, a paused
// one as wire.StatusPaused), those of the given status only if status is
// not empty.
func (g *Gateway) List(ctx context.Context, status string) (ListReply, error) {
	switch events.Status(status) {
	case "", events.StatusRunning, events.StatusFinished, events.StatusInterrupted, events.StatusFailed, wire.StatusPaused:
	default:
		return ListReply{}, errorf(http.StatusBadRequest, "status=%q: want running, paused, finished, interrupted or failed", status)
	}
	ctx, cancel := context.WithTimeout(ctx, controlTimeout)
	defer cancel()
	msg, err := g.op.RequestWithContext(ctx, wire.ListSubject, []byte("{}"))
	if err != nil {
		return ListReply{}, natsErr(err, "list sessions")
	}
	var metas []events.SessionMeta
	if err := json.Unmarshal(msg.Data, &metas); err != nil {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(msg.Data, &e) == nil && e.Error != "" {
			return ListReply{}, errorf(http.StatusServiceUnavailable, "list sessions: %s", e.Error)
		}
		return ListReply{}, errorf(http.StatusBadGateway, "list sessions: bad reply: %v", err)
	}
	out := ListReply{Sessions: make([]events.SessionMeta, 0, len(metas)), Damaged: msg.Header.Get(wire.DamagedHeader)}
	for _, m := range metas {
		if status == "" || m.Status == events.Status(status) {
			out.Sessions = append(out.Sessions, m)
		}
	}
	return out, nil
}

// Delete asks the server to delete sessions that are not running
// (wire.DeleteSubject): with forks, every fork under them first. It
// returns what was deleted, also beside an error partway; the gateway
// forgets the sessions deleted. A session named that the server does not
// hold is a 404, one running or with forks not named a 409.
func (g *Gateway) Delete(ctx context.Context, ids []string, forks bool) ([]wire.Deleted, error) {
	for _, id := range ids {
		if err := checkID(id); err != nil {
			return nil, err
		}
	}
	var reply wire.DeleteReply
	if err := g.request(ctx, wire.DeleteSubject, wire.DeleteRequest{Sessions: ids, Forks: forks}, &reply, controlTimeout); err != nil {
		return nil, natsErr(err, "delete sessions")
	}
	g.mu.Lock()
	for _, d := range reply.Deleted {
		if s := g.sessions[d.Session]; s != nil {
			g.dropLocked(d.Session, s)
		}
	}
	g.pruneEndedLocked()
	g.mu.Unlock()
	if reply.Error == "" {
		return reply.Deleted, nil
	}
	status := http.StatusInternalServerError
	switch reply.Code {
	case wire.DeleteNoSession:
		status = http.StatusNotFound
	case wire.DeleteRunning, wire.DeleteRefused:
		status = http.StatusConflict
	}
	e := errorf(status, "%s", reply.Error)
	e.Code = reply.Code
	return reply.Deleted, e
}

// Score reports a session's team score so far.
func (g *Gateway) Score(ctx context.Context, id string) (ScoreReply, error) {
	if err := checkID(id); err != nil {
		return ScoreReply{}, err
	}
	s := g.session(id)
	var st wire.ControlReply
	var err error
	if s != nil && s.hasEnded() {
		err = nats.ErrNoResponders // answered from the record, as Control does for an ended session
	} else {
		st, err = g.control(ctx, id, wire.OpStatus)
	}
	if err != nil && !(errors.Is(err, nats.ErrNoResponders) && s != nil) {
		if errors.Is(err, nats.ErrNoResponders) {
			// Not running, and not the gateway's (a session it ran before
			// a restart, or another gateway's): its stored log, if a
			// server serves it, holds every reward.
			return g.storedScore(ctx, id)
		}
		return ScoreReply{}, natsErr(err, "score")
	}
	if s == nil {
		return ScoreReply{Session: id, Status: st.Status, Events: st.Events, Time: st.Time,
			Score: st.Score, Complete: st.Error == "", Source: "server"}, nil
	}
	if err != nil {
		s.probe(ctx)
	} else if s.hasPrefix() {
		s.learnPrefix(ctx)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	score, complete := s.scoreLocked()
	out := ScoreReply{Session: id, Status: st.Status, Events: st.Events, Time: st.Time, Score: score, Complete: complete, Source: "gateway"}
	if s.ended || err != nil {
		out.Status, out.Events = s.status, s.last
		if n := len(s.own); n > 0 {
			out.Time = s.own[n-1].Time
		}
	}
	return out, nil
}

// maxStoredScore bounds the events the gateway reads to score a stored
// session (storedScore): beyond it, corpsim score on the server's data.
const maxStoredScore = 1_000_000

// storedScore is the score of a session no server runs and the gateway
// holds no record of, summed from the rewards of its stored log as the
// server's history serves it: "finished" when it ends with session.ended,
// else "interrupted" (the history does not tell a failed session from
// one stopped); 404 when no server serves its log, 422 past
// maxStoredScore events.
func (g *Gateway) storedScore(ctx context.Context, id string) (ScoreReply, error) {
	out := ScoreReply{Session: id, Status: string(events.StatusInterrupted), Complete: true, Source: "server"}
	for from := uint64(1); ; {
		resp, err := g.history(ctx, id, from, wire.MaxHistoryPage)
		if errors.Is(err, nats.ErrNoResponders) {
			return ScoreReply{}, errorf(http.StatusNotFound, "session %s is not running and the gateway holds no record of it", id)
		}
		if err != nil {
			return ScoreReply{}, natsErr(err, "score")
		}
		if resp.Last > maxStoredScore {
			return ScoreReply{}, errorf(http.StatusUnprocessableEntity, "session %s has %d events, more than the %d the gateway reads to score it: use corpsim score %s on the server's data", id, resp.Last, maxStoredScore, id)
		}
		for _, e := range resp.Events {
			out.Score += teamReward(e)
			out.Events, out.Time = e.Seq, e.Time
			if e.Type == payload.EvSessionEnded {
				out.Status = string(events.StatusFinished)
			}
		}
		n := len(resp.Events)
		if n == 0 || resp.Events[n-1].Seq >= resp.Last {
			return out, nil
		}
		from = resp.Events[n-1].Seq + 1
	}
}

// Observation is what Observe found for a seat.
type Observation struct {
	Session, Member string
	Turn            uint64          // the waiting turn; 0 when none waits
	Body            json.RawMessage // that turn's observation (org.Observation as JSON); nil when none waits
	Done            bool            // the session has ended
	Status          string          // once Done: finished, interrupted or stopped
}

// probeEvery is how long a waiter stays idle before it asks whether the
// session still runs.
const probeEvery = 2 * time.Second

// seatOf is the seat of a seat token, or a 401/403 refusal.
func (g *Gateway) seatOf(tok string) (*seat, error) {
	if tok != "" && g.isOperator(tok) {
		return nil, errorf(http.StatusForbidden, "the operator token does not reach a seat: use the seat's token, or step")
	}
	st := g.seatFor(tok)
	switch {
	case tok == "":
		return nil, errorf(http.StatusUnauthorized, "missing bearer token (Authorization: Bearer TOKEN)")
	case st == nil:
		return nil, errorf(http.StatusUnauthorized, "unknown or expired token")
	}
	return st, nil
}

// Observe waits up to wait for the seat's turn, or its session's end. When
// neither comes, the Observation has Turn 0, Body nil and Done false.
func (g *Gateway) Observe(ctx context.Context, tok string, wait time.Duration) (Observation, error) {
	st, err := g.seatOf(tok)
	if err != nil {
		return Observation{}, err
	}
	s := st.session
	out := Observation{Session: s.id, Member: st.member}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	probe := time.NewTicker(probeEvery)
	defer probe.Stop()
	for {
		s.mu.Lock()
		h := st.heldLocked(time.Now())
		ended, status, ch := s.ended, s.status, s.changed
		s.mu.Unlock()
		switch {
		case h != nil:
			out.Turn, out.Body = h.turn, h.obs
			return out, nil
		case ended:
			out.Done, out.Status = true, status
			return out, nil
		}
		select {
		case <-ch:
		case <-probe.C:
			s.probe(ctx)
		case <-deadline.C:
			return out, nil
		case <-ctx.Done():
			return out, errorf(http.StatusServiceUnavailable, "the request ended: %v", context.Cause(ctx))
		}
	}
}

// ActReply is the body of a successful act (and carries the errors of the others).
type ActReply struct {
	Session   string   `json:"session"`
	Member    string   `json:"member"`
	Turn      uint64   `json:"turn"`      // the turn answered (or waiting, on 409)
	Forwarded bool     `json:"forwarded"` // the body went to the engine as the turn's reply
	Error     string   `json:"error,omitempty"`
	Warnings  []string `json:"warnings,omitempty"`
}

// statedTurn finds the turn a reply that does not parse says it answers:
// the number after its first "turn" key, if there is one.
func statedTurn(body []byte) (uint64, bool) {
	i := bytes.Index(body, []byte(`"turn"`))
	if i < 0 {
		return 0, false
	}
	rest := bytes.TrimLeft(body[i+len(`"turn"`):], " \t\r\n")
	if len(rest) == 0 || rest[0] != ':' {
		return 0, false
	}
	rest = bytes.TrimLeft(rest[1:], " \t\r\n")
	n := 0
	for n < len(rest) && n < 40 && (rest[n] >= '0' && rest[n] <= '9' || rest[n] == '.' || rest[n] == 'e' || rest[n] == 'E' || rest[n] == '+' || rest[n] == '-') {
		n++
	}
	if n == 0 {
		return 0, false
	}
	if t, err := strconv.ParseUint(string(rest[:n]), 10, 64); err == nil {
		return t, true
	}
	// A whole number written as a float (1.0, 4e0) names a turn too: a
	// stale retry of turn 1 so written used up the waiting turn.
	f, err := strconv.ParseFloat(string(rest[:n]), 64)
	if err != nil || f < 1 || f != math.Trunc(f) || f > 1<<53 {
		return 0, false
	}
	return uint64(f), true
}

// errOr returns err's text, or what if err is nil.
func errOr(err error, what string) string {
	if err == nil {
		return what
	}
	return err.Error()
}

// Act forwards body, unchanged, as the reply to the seat's waiting turn,
// so the engine's own parser decides what is recorded (see the package
// documentation, "Answering turns"). The ActReply is filled on refusals
// too; the error is then an *Error with act's HTTP status, and
// ActReply.Forwarded says whether the turn was used up all the same (a
// malformed or oversized reply is forwarded for the engine to record).
// body may be up to org.MaxReplyBytes+1 bytes: a longer one is treated as
// oversized.
func (g *Gateway) Act(_ context.Context, tok string, body []byte) (ActReply, error) {
	st, err := g.seatOf(tok)
	if err != nil {
		return ActReply{Error: err.Error()}, err
	}
	s := st.session
	out := ActReply{Session: s.id, Member: st.member}
	refuse := func(status int, format string, args ...any) (ActReply, error) {
		out.Error = fmt.Sprintf(format, args...)
		return out, &Error{Status: status, Msg: out.Error}
	}
	tooBig := len(body) > org.MaxReplyBytes
	if tooBig {
		body = body[:org.MaxReplyBytes+1]
	}
	s.mu.Lock()
	h := st.heldLocked(time.Now())
	if s.ended {
		s.mu.Unlock()
		return refuse(http.StatusConflict, "session %s has ended (%s)", s.id, s.status)
	}
	var parsed org.Reply
	var perr error
	if !tooBig {
		parsed, perr = wire.ParseReply(body)
	}
	switch {
	case h == nil:
		s.mu.Unlock()
		if tooBig {
			return refuse(http.StatusRequestEntityTooLarge, "reply is over %d bytes, and no turn is waiting for %s", org.MaxReplyBytes, st.member)
		}
		return refuse(http.StatusConflict, "no turn is waiting for %s (observe first)", st.member)
	case !tooBig && perr == nil && parsed.Turn != h.turn:
		s.mu.Unlock()
		out.Turn = h.turn
		return refuse(http.StatusConflict, "reply answers turn %d, but turn %d is waiting: echo the observation's turn", parsed.Turn, h.turn)
	case tooBig || perr != nil:
		// A reply that does not parse is forwarded for the engine to
		// record malformed, using up the waiting turn; not when it says
		// it answers another (a client retrying a reply a cut connection
		// lost used up the next turn, and the next).
		if t, ok := statedTurn(body); ok && t != h.turn {
			s.mu.Unlock()
			out.Turn = h.turn
			return refuse(http.StatusConflict, "reply answers turn %d, but turn %d is waiting (the reply does not parse either: %v)", t, h.turn, errOr(perr, "over the size limit"))
		}
	}
	st.held = nil
	s.broadcastLocked()
	s.mu.Unlock()
	out.Turn = h.turn
	if err := h.msg.Respond(body); err != nil {
		st.log.Warn("reply not sent", "turn", h.turn, "error", err)
		return refuse(http.StatusBadGateway, "the reply could not be sent: %v", err)
	}
	out.Forwarded = true
	switch {
	case tooBig:
		st.log.Debug("oversized reply forwarded for the engine to reject", "turn", h.turn)
		return refuse(http.StatusRequestEntityTooLarge, "reply is over %d bytes; the engine records the turn as malformed", org.MaxReplyBytes)
	case perr != nil:
		st.log.Debug("malformed reply forwarded for the engine to reject", "turn", h.turn, "error", perr)
		return refuse(http.StatusBadRequest, "%s; the engine records the turn as malformed", perr.Error())
	}
	out.Warnings = checkActions(parsed.Actions)
	st.log.Trace("turn answered", "turn", h.turn, "actions", len(parsed.Actions))
	return out, nil
}

// Answer waits up to wait for the seat's turn and answers it with actions
// (an empty list: the member waits). It refuses with 409 when the session
// has ended or no turn came within wait.
func (g *Gateway) Answer(ctx context.Context, tok string, actions []org.Action, wait time.Duration) (ActReply, error) {
	obs, err := g.Observe(ctx, tok, wait)
	if err != nil {
		return ActReply{Session: obs.Session, Member: obs.Member, Error: err.Error()}, err
	}
	out := ActReply{Session: obs.Session, Member: obs.Member}
	switch {
	case obs.Done:
		out.Error = fmt.Sprintf("session %s has ended (%s)", obs.Session, obs.Status)
		return out, &Error{Status: http.StatusConflict, Msg: out.Error}
	case obs.Turn == 0:
		out.Error = fmt.Sprintf("no turn came for %s within %v", obs.Member, wait)
		return out, &Error{Status: http.StatusConflict, Msg: out.Error}
	}
	if actions == nil {
		actions = []org.Action{}
	}
	b, err := json.Marshal(org.Reply{Turn: obs.Turn, Actions: actions})
	if err != nil {
		return out, errorf(http.StatusBadRequest, "the actions do not encode: %v", err)
	}
	return g.Act(ctx, tok, b)
}

// checkActions warns about actions the engine will certainly refuse for
// their type alone.
func checkActions(acts []org.Action) []string {
	var out []string
	for i, a := range acts {
		if !org.KnownAction(a.Type) {
			out = append(out, fmt.Sprintf("actions[%d]: unknown action type %q (known: %s); the engine rejects it",
				i, a.Type, strings.Join(org.ActionTypes, ", ")))
		}
	}
	return out
}

// StepRequest is the body of step.
type StepRequest struct {
	// Actions answers the turns the previous step returned, by member;
	// a member without an entry waits ([]).
	Actions map[string][]org.Action `json:"actions"`
}

// StepReply is the body step returns.
type StepReply struct {
	Session      string                     `json:"session"`
	Observations map[string]json.RawMessage `json:"observations"`  // the turns now waiting, by member
	Rewards      float64                    `json:"rewards"`       // the team deltas of RewardEvents
	RewardEvents []events.Event             `json:"reward_events"` // reward events recorded since the previous step
	Done         bool                       `json:"done"`
	Status       string                     `json:"status,omitempty"` // once done: finished or stopped
	// Score is the final team score, once done.
	Score    *float64 `json:"score,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// Step is a Gym-style single controller for all the remote seats of a
// session the gateway created (see the package documentation, "Step"):
// it answers the turns the previous Step returned with req's actions,
// waits (at most wait) for the next turns, and returns their observations
// with the rewards recorded since the previous Step.
func (g *Gateway) Step(ctx context.Context, id string, req StepRequest, wait time.Duration) (StepReply, error) {
	if err := checkID(id); err != nil {
		return StepReply{}, err
	}
	s := g.session(id)
	if s == nil {
		return StepReply{}, errorf(http.StatusNotFound, "the gateway did not create session %s (or has forgotten it); step needs a session created through it", id)
	}
	for _, m := range slices.Sorted(maps.Keys(req.Actions)) {
		if s.seats[m] == nil {
			return StepReply{}, errorf(http.StatusBadRequest, "%s is not a remote seat of session %s (remote seats: %v)", m, s.id, slices.Sorted(maps.Keys(s.seats)))
		}
	}
	if !s.stepMu.TryLock() {
		return StepReply{}, errorf(http.StatusConflict, "another step of session %s is running", s.id)
	}
	defer s.stepMu.Unlock()
	out := StepReply{Session: s.id, Observations: map[string]json.RawMessage{}, RewardEvents: []events.Event{}}
	out.Warnings = s.answerShown(req.Actions)
	s.gather(ctx, time.Now().Add(wait))
	s.syncFeed(ctx)

	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	clear(s.shown)
	for _, m := range slices.Sorted(maps.Keys(s.seats)) {
		if h := s.seats[m].heldLocked(now); h != nil {
			out.Observations[m] = h.obs
			s.shown[m] = h.turn
		}
	}
	out.RewardEvents = append(out.RewardEvents, s.rewards...)
	out.Rewards = s.reward - s.stepped
	if s.unlisted > 0 {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d earlier reward events since the previous step are not listed (the gateway keeps the last %d); rewards includes them", s.unlisted, s.g.cfg.RecordEvents))
	}
	s.rewards, s.unlisted, s.stepped = nil, 0, s.reward
	if s.ended {
		out.Done, out.Status = true, s.status
		score, complete := s.scoreLocked()
		out.Score = &score
		if !complete {
			out.Warnings = append(out.Warnings, "the score misses rewards the gateway could not learn (a fork's prefix, or events lost from the feed)")
		}
	}
	return out, nil
}

// StepLimit is the largest step body the gateway reads for session id: a
// reply's worth per remote seat, and one more.
func (g *Gateway) StepLimit(id string) int64 {
	n := 0
	if s := g.session(id); s != nil {
		n = len(s.seats)
	}
	return int64(org.MaxReplyBytes) * int64(n+1)
}

// hasEnded reports whether the gateway's record says the session ended.
func (s *session) hasEnded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended
}
