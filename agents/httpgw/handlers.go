package httpgw

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// decodeBody decodes a JSON request body strictly into v. An empty body
// leaves v as it is when emptyOK.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, limit int64, emptyOK bool) bool {
	orig := r.Body
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			refuseTooLarge(w, orig, limit)
		} else {
			writeError(w, http.StatusBadRequest, "reading the request body: %v", err)
		}
		return false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		if emptyOK {
			return true
		}
		writeError(w, http.StatusBadRequest, "the request needs a JSON body")
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		writeError(w, http.StatusBadRequest, "malformed request: %v", err)
		return false
	}
	if dec.More() {
		writeError(w, http.StatusBadRequest, "malformed request: trailing data after the JSON object")
		return false
	}
	return true
}

// drainLimit is how much more of an oversized body the gateway reads, and
// drainFor how long it spends, before it answers 413 and closes: a client
// that sends its whole body before it reads the answer (most do) then gets
// the 413 instead of a reset connection.
const (
	drainLimit = 64 << 20
	drainFor   = 10 * time.Second
)

// refuseTooLarge answers 413 for a body over limit, after reading (and
// dropping) a bounded rest of it; the connection is closed after the answer.
func refuseTooLarge(w http.ResponseWriter, body io.Reader, limit int64) {
	drain(w, body)
	writeError(w, http.StatusRequestEntityTooLarge, "request body is over this server's limit of %d bytes", limit)
}

// drain reads and drops the rest of an oversized body (at most drainLimit,
// for at most drainFor) and marks the connection to be closed after the
// answer.
func drain(w http.ResponseWriter, body io.Reader) {
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(drainFor))
	_, _ = io.CopyN(io.Discard, body, drainLimit)
	w.Header().Set("Connection", "close")
}

func (g *Gateway) handleCreate(w http.ResponseWriter, r *http.Request) {
	// An explicit "load": 0 is refused (an omitted load is 1), which
	// wire.CreateRequest.Load cannot tell apart; other loads are checked
	// by the server.
	var req struct {
		wire.CreateRequest
		Load *float64 `json:"load,omitempty"`
	}
	if !decodeBody(w, r, &req, g.cfg.MaxRequestBytes, false) {
		return
	}
	if req.Load != nil {
		if *req.Load == 0 {
			writeError(w, http.StatusBadRequest, "%v", worlds.CheckLoad(0, 0))
			return
		}
		req.CreateRequest.Load = *req.Load
	}
	g.create(w, r, req.CreateRequest)
}

// forkRequest is the body of fork and reset.
type forkRequest struct {
	At          uint64 `json:"at"`
	Seed        uint64 `json:"seed,omitempty"`   // 0: the parent's
	Agents      string `json:"agents,omitempty"` // "": the parent's, when the gateway created it
	Wait        bool   `json:"wait,omitempty"`
	TurnTimeout string `json:"turn_timeout,omitempty"`
}

func (g *Gateway) handleFork(w http.ResponseWriter, r *http.Request) {
	var f forkRequest
	if !decodeBody(w, r, &f, g.cfg.MaxRequestBytes, false) {
		return
	}
	if f.At == 0 {
		writeError(w, http.StatusBadRequest, `fork needs "at": the event to fork at (1 or more; 1 is a reset)`)
		return
	}
	g.fork(w, r, f)
}

func (g *Gateway) handleReset(w http.ResponseWriter, r *http.Request) {
	var f forkRequest
	if !decodeBody(w, r, &f, g.cfg.MaxRequestBytes, true) {
		return
	}
	if f.At > 1 {
		writeError(w, http.StatusBadRequest, `reset is a fork at event 1; use fork for "at": %d`, f.At)
		return
	}
	f.At = 1
	g.fork(w, r, f)
}

func (g *Gateway) fork(w http.ResponseWriter, r *http.Request, f forkRequest) {
	parent := r.PathValue("id")
	if f.Agents == "" {
		if p := g.session(parent); p != nil && p.agents != "" {
			f.Agents = p.agents
		} else {
			writeError(w, http.StatusBadRequest, `the gateway did not create session %s in this process (or has forgotten it): name the "agents"`, parent)
			return
		}
	}
	g.create(w, r, wire.CreateRequest{Parent: parent, ForkSeq: f.At, Seed: f.Seed, Agents: f.Agents, Wait: f.Wait, TurnTimeout: f.TurnTimeout})
}

// create makes a session on the server, follows its feed and joins its
// remote seats, then starts it unless the request asked to wait.
func (g *Gateway) create(w http.ResponseWriter, r *http.Request, req wire.CreateRequest) {
	ctx := r.Context()
	turnWait := g.cfg.TurnWait
	if req.TurnTimeout != "" {
		d, err := time.ParseDuration(req.TurnTimeout)
		if err != nil || d <= 0 {
			writeError(w, http.StatusBadRequest, "turn_timeout %q is not a positive duration", req.TurnTimeout)
			return
		}
		turnWait = d
	}
	start := !req.Wait
	sent := req
	sent.Wait = true // started below, once the feed is followed and the seats have joined
	sent.Via = wire.ViaHTTP
	var reply wire.CreateReply
	if err := g.request(ctx, wire.CreateSubject, sent, &reply, createTimeout); err != nil {
		writeError(w, natsStatus(err), "create: %v", err)
		return
	}
	if reply.Error != "" {
		writeError(w, http.StatusBadRequest, "%s", reply.Error)
		return
	}
	s := newSession(g, reply, req, turnWait)
	fail := func(code int, err error) {
		s.log.Error("session abandoned", "error", err)
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), controlTimeout)
		defer cancel()
		_, _ = g.control(sctx, s.id, wire.OpStop)
		s.finish(statusStopped)
		g.forget(s)
		writeError(w, code, "session %s: %v (it was stopped)", s.id, err)
	}
	if err := s.follow(); err != nil {
		fail(http.StatusBadGateway, err)
		return
	}
	if err := s.join(ctx, reply.Seats); err != nil {
		fail(http.StatusBadGateway, err)
		return
	}
	if !g.register(s) {
		fail(http.StatusServiceUnavailable, errors.New("the gateway is closing"))
		return
	}
	if start {
		if _, err := g.control(ctx, s.id, wire.OpStart); err != nil {
			fail(natsStatus(err), fmt.Errorf("start: %w", err))
			return
		}
		if s.parent != "" {
			s.learnPrefix(ctx)
		}
	}
	s.log.Info("session created", "parent", s.parent, "fork_seq", s.forkSeq, "remote_seats", len(s.seats), "started", start)
	writeJSON(w, http.StatusCreated, s.credentials(reply))
}

func (g *Gateway) handleControl(w http.ResponseWriter, r *http.Request) {
	var req wire.ControlRequest
	if !decodeBody(w, r, &req, 4096, false) {
		return
	}
	switch req.Op {
	case wire.OpStart, wire.OpPause, wire.OpStop, wire.OpStatus:
	default:
		writeError(w, http.StatusBadRequest, "unknown op %q (expected start, pause, stop or status)", req.Op)
		return
	}
	id := r.PathValue("id")
	s := g.session(id)
	reply, err := g.control(r.Context(), id, req.Op)
	if errors.Is(err, nats.ErrNoResponders) && s != nil {
		s.probe(r.Context())
		writeJSON(w, http.StatusOK, s.controlReply())
		return
	}
	if err != nil {
		writeError(w, natsStatus(err), "control %s: %v", req.Op, err)
		return
	}
	if s != nil {
		switch req.Op {
		case wire.OpStop:
			status := reply.Status // the server's word: interrupted
			if status == "" {
				status = statusStopped
			}
			s.finish(status)
		case wire.OpStart:
			if s.hasPrefix() {
				s.learnPrefix(r.Context())
			}
		}
	}
	writeJSON(w, http.StatusOK, reply)
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

func queryUint(r *http.Request, name string, def uint64) (uint64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s=%q is not a number", name, v)
	}
	return n, nil
}

func (g *Gateway) handleEvents(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	from, err := queryUint(r, "from", 1)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	limit, err := queryUint(r, "limit", wire.MaxHistoryPage)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	from, limit = max(from, 1), min(max(limit, 1), wire.MaxHistoryPage)
	resp, err := g.history(r.Context(), id, from, int(limit))
	if err == nil {
		out := EventsReply{Session: id, Events: resp.Events, Last: resp.Last, Source: "server", Complete: true}
		if out.Events == nil {
			out.Events = []events.Event{}
		}
		if n := len(resp.Events); n > 0 && resp.Events[n-1].Seq < resp.Last {
			out.Next = resp.Events[n-1].Seq + 1
		}
		writeJSON(w, http.StatusOK, out)
		return
	}
	s := g.session(id)
	if !errors.Is(err, nats.ErrNoResponders) || s == nil {
		if errors.Is(err, nats.ErrNoResponders) {
			writeError(w, http.StatusNotFound, "session %s is not running and the gateway holds no record of it", id)
			return
		}
		writeError(w, natsStatus(err), "events: %v", err)
		return
	}
	writeJSON(w, http.StatusOK, s.eventsPage(from, int(limit)))
}

// eventsPage serves events from the gateway's record.
func (s *session) eventsPage(from uint64, limit int) EventsReply {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := EventsReply{Session: s.id, Events: []events.Event{}, Last: s.last, Source: "gateway",
		Complete: !s.gaps && s.prefixKnown && (s.prefix != nil || s.forkSeq == 0)}
	for _, list := range [][]events.Event{s.prefix, s.own} {
		for _, e := range list {
			if e.Seq < from {
				continue
			}
			if len(out.Events) == limit {
				out.Next = e.Seq
				return out
			}
			out.Events = append(out.Events, e)
		}
	}
	return out
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

func (g *Gateway) handleScore(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s := g.session(id)
	st, err := g.control(r.Context(), id, wire.OpStatus)
	if err != nil && !(errors.Is(err, nats.ErrNoResponders) && s != nil) {
		if errors.Is(err, nats.ErrNoResponders) {
			writeError(w, http.StatusNotFound, "session %s is not running and the gateway holds no record of it", id)
			return
		}
		writeError(w, natsStatus(err), "score: %v", err)
		return
	}
	if s == nil {
		writeJSON(w, http.StatusOK, ScoreReply{Session: id, Status: st.Status, Events: st.Events, Time: st.Time,
			Score: st.Score, Complete: st.Error == "", Source: "server"})
		return
	}
	if err != nil {
		s.probe(r.Context())
	} else if s.hasPrefix() {
		s.learnPrefix(r.Context())
	}
	s.mu.Lock()
	score, complete := s.scoreLocked()
	out := ScoreReply{Session: id, Status: st.Status, Events: st.Events, Time: st.Time, Score: score, Complete: complete, Source: "gateway"}
	if s.ended || err != nil {
		out.Status, out.Events = s.status, s.last
		if n := len(s.own); n > 0 {
			out.Time = s.own[n-1].Time
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// waitParam reads ?wait= (a Go duration, or seconds), bounded by most.
func waitParam(r *http.Request, def, most time.Duration) (time.Duration, error) {
	v := r.URL.Query().Get("wait")
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		secs, err2 := strconv.ParseFloat(v, 64)
		if err2 != nil {
			return 0, fmt.Errorf("wait=%q is not a duration (e.g. 30s)", v)
		}
		d = time.Duration(secs * float64(time.Second))
	}
	if d < 0 {
		return 0, fmt.Errorf("wait=%q is negative", v)
	}
	return min(d, most), nil
}

// doneReply tells a seat its session has ended.
type doneReply struct {
	Done   bool   `json:"done"`
	Status string `json:"status"`
}

// probeEvery is how long a waiter stays idle before it asks whether the
// session still runs.
const probeEvery = 2 * time.Second

func (g *Gateway) handleObserve(w http.ResponseWriter, r *http.Request, s *session, st *seat) {
	wait, err := waitParam(r, 30*time.Second, 5*time.Minute)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	ctx := r.Context()
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
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-store")
			_, _ = w.Write(h.obs)
			return
		case ended:
			writeJSON(w, http.StatusOK, doneReply{Done: true, Status: status})
			return
		}
		select {
		case <-ch:
		case <-probe.C:
			s.probe(ctx)
		case <-deadline.C:
			w.WriteHeader(http.StatusNoContent)
			return
		case <-ctx.Done():
			writeError(w, http.StatusServiceUnavailable, "the request ended: %v", context.Cause(ctx))
			return
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

func (g *Gateway) handleAct(w http.ResponseWriter, r *http.Request, s *session, st *seat) {
	body, err := io.ReadAll(io.LimitReader(r.Body, org.MaxReplyBytes+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading the request body: %v", err)
		return
	}
	tooBig := len(body) > org.MaxReplyBytes
	if tooBig {
		drain(w, r.Body)
	}
	out := ActReply{Session: s.id, Member: st.member}
	s.mu.Lock()
	h := st.heldLocked(time.Now())
	if s.ended {
		s.mu.Unlock()
		out.Error = fmt.Sprintf("session %s has ended (%s)", s.id, s.status)
		writeJSON(w, http.StatusConflict, out)
		return
	}
	var parsed org.Reply
	var perr error
	if !tooBig {
		parsed, perr = wire.ParseReply(body)
	}
	switch {
	case h == nil:
		s.mu.Unlock()
		out.Error = fmt.Sprintf("no turn is waiting for %s (observe first)", st.member)
		if tooBig {
			out.Error = fmt.Sprintf("reply is over %d bytes, and no turn is waiting for %s", org.MaxReplyBytes, st.member)
			writeJSON(w, http.StatusRequestEntityTooLarge, out)
			return
		}
		writeJSON(w, http.StatusConflict, out)
		return
	case !tooBig && perr == nil && parsed.Turn != h.turn:
		s.mu.Unlock()
		out.Turn = h.turn
		out.Error = fmt.Sprintf("reply answers turn %d, but turn %d is waiting: echo the observation's turn", parsed.Turn, h.turn)
		writeJSON(w, http.StatusConflict, out)
		return
	}
	st.held = nil
	s.broadcastLocked()
	s.mu.Unlock()
	out.Turn = h.turn
	if err := h.msg.Respond(body); err != nil {
		st.log.Warn("reply not sent", "turn", h.turn, "error", err)
		out.Error = "the reply could not be sent: " + err.Error()
		writeJSON(w, http.StatusBadGateway, out)
		return
	}
	out.Forwarded = true
	switch {
	case tooBig:
		st.log.Debug("oversized reply forwarded for the engine to reject", "turn", h.turn)
		out.Error = fmt.Sprintf("reply is over %d bytes; the engine records the turn as malformed", org.MaxReplyBytes)
		writeJSON(w, http.StatusRequestEntityTooLarge, out)
	case perr != nil:
		st.log.Debug("malformed reply forwarded for the engine to reject", "turn", h.turn, "error", perr)
		out.Error = perr.Error() + "; the engine records the turn as malformed"
		writeJSON(w, http.StatusBadRequest, out)
	default:
		out.Warnings = checkActions(parsed.Actions)
		st.log.Trace("turn answered", "turn", h.turn, "actions", len(parsed.Actions))
		writeJSON(w, http.StatusOK, out)
	}
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
