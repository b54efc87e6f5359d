package nemogym

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents/httpgw"
	"github.com/corpsim/corpsim/agents/wire"
)

// Ops are the gateway operations the adapter uses; *httpgw.Gateway
// satisfies it.
type Ops interface {
	Create(ctx context.Context, req wire.CreateRequest) (wire.CreateReply, error)
	Control(ctx context.Context, id string, op wire.ControlOp) (wire.ControlReply, error)
	Score(ctx context.Context, id string) (httpgw.ScoreReply, error)
	Events(ctx context.Context, id string, from uint64, limit int) (httpgw.EventsReply, error)
	Observe(ctx context.Context, token string, wait time.Duration) (httpgw.Observation, error)
	Act(ctx context.Context, token string, body []byte) (httpgw.ActReply, error)
	Delete(ctx context.Context, ids []string, forks bool) ([]wire.Deleted, error)
}

var _ Ops = (*httpgw.Gateway)(nil)

// Recorder counts the adapter's sessions, steps and errors (metrics). A
// nil Recorder records nothing.
type Recorder interface {
	Opened()            // a session began
	Closed()            // it was dropped (closed, replaced, timed out, or the server closed)
	Stepped()           // a tool call or step
	Failed(code string) // an error answered, by code (see the Code constants)
}

// The codes of the errors the adapter answers, for Recorder.Failed.
const (
	CodeBadRequest   = "bad_request"  // a body that is not the JSON it should be
	CodeNoWorld      = "no_world"     // GET /nemo/tools?world= names no shipped world
	CodeTooLarge     = "too_large"    // a body over its limit
	CodeNoSession    = "no_session"   // no cookie, or one of no session held
	CodeCapacity     = "capacity"     // no room for another session
	CodeBadCall      = "bad_call"     // a tool call that did not parse (unknown tool, bad arguments)
	CodeNoTurn       = "no_turn"      // no turn came within TurnWait
	CodeEnded        = "ended"        // the session has ended
	CodeDisconnected = "disconnected" // the client went away mid-request
	CodeServer       = "server_error" // the corpsim server failed or did not answer
	CodeClosing      = "closing"      // the adapter is closing
	CodeForbidden    = "forbidden"    // a row that needs the operator token (source, llm) without it
)

// Defaults of Config's zero fields.
const (
	DefaultMaxSessions    = 1000
	DefaultMaxBodyBytes   = 1 << 20
	DefaultMaxVerifyBytes = 16 << 20
	DefaultTurnWait       = 30 * time.Second
	DefaultIdleTimeout    = 10 * time.Minute
	DefaultPlayOutTimeout = 10 * time.Minute
)

// CookieName is the cookie naming a session.
const CookieName = "corpsim_nemo"

// Config configures a Server. The zero value of every field means its
// default; a negative number means the default too.
type Config struct {
	Logger   hclog.Logger // nil: silent
	Recorder Recorder     // nil: none
	// MaxSessions bounds the sessions held at once.
	MaxSessions int
	// MaxBodyBytes bounds the bodies of seed_session, reset, step and close.
	MaxBodyBytes int64
	// MaxVerifyBytes bounds verify's body (the row and the whole rollout).
	MaxVerifyBytes int64
	// MaxAggregateBytes bounds aggregate_metrics' body (every rollout's
	// stripped reply). 0: DefaultMaxAggregateBytes.
	MaxAggregateBytes int64
	// MaxAggregateValues bounds the numeric values of all the replies an
	// aggregate_metrics body holds (what it takes once read). 0:
	// DefaultMaxAggregateValues.
	MaxAggregateValues int
	// TurnWait is how long a tool call, step or reset waits for the
	// member's turn.
	TurnWait time.Duration
	// IdleTimeout drops a session no request used for that long (and
	// stops its corpsim session).
	IdleTimeout time.Duration
	// PlayOutTimeout bounds verify's play-out of a running session.
	PlayOutTimeout time.Duration
	// Now is the wall clock of idle timeouts; nil: time.Now.
	Now func() time.Time
	// OperatorToken, when set, is asked (Authorization: Bearer) of a task
	// row that carries a world file's text ("source") or names the llm
	// agent: the routes take no token (NeMo Gym's clients send none), and
	// such a row would let anyone who reaches them run a world of any
	// size or spend the model endpoint's credits. Rows of shipped worlds
	// and built-in agents need none.
	OperatorToken string
	// Discard deletes a session's log once the adapter drops it (closed,
	// replaced by a new seed_session, or idle) and it has stopped, unless
	// it has forks: a trainer's thousands of rollouts then take no disk
	// once verified. The sessions still held when the server shuts down
	// are stopped and kept.
	Discard bool
	// MCP, when set, is the serve's MCP server (package mcpseat, which
	// takes a seat token as its bearer token): seed_session's reply then
	// offers the session's seat over MCP, as NeMo Gym's resources servers
	// that expose their tools over MCP do ("mcp": a url_path and the
	// X-NeMo-Gym-Session-Token header its MCP-native agents send, Claude
	// Code's among them), and /nemo/mcp hands such requests to it under
	// the seat's token. Nil: no MCP.
	MCP MCPServer
}

// MCPServer is the MCP server /nemo/mcp hands requests to (mcpseat.Server).
type MCPServer interface {
	http.Handler
	// CloseSeat closes the MCP sessions open on a seat, once the NeMo
	// Gym session that holds it is closed, replaced or dropped.
	CloseSeat(session, member string)
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.Recorder == nil {
		c.Recorder = nopRecorder{}
	}
	if c.MaxSessions <= 0 {
		c.MaxSessions = DefaultMaxSessions
	}
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MaxAggregateBytes <= 0 {
		c.MaxAggregateBytes = DefaultMaxAggregateBytes
	}
	if c.MaxAggregateValues <= 0 {
		c.MaxAggregateValues = DefaultMaxAggregateValues
	}
	if c.MaxVerifyBytes <= 0 {
		c.MaxVerifyBytes = DefaultMaxVerifyBytes
	}
	if c.TurnWait <= 0 {
		c.TurnWait = DefaultTurnWait
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.PlayOutTimeout <= 0 {
		c.PlayOutTimeout = DefaultPlayOutTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

type nopRecorder struct{}

func (nopRecorder) Opened()       {}
func (nopRecorder) Closed()       {}
func (nopRecorder) Stepped()      {}
func (nopRecorder) Failed(string) {}

// Server is the NeMo Gym adapter. It is safe for concurrent use; the
// requests of one session are served one at a time.
type Server struct {
	ops Ops
	cfg Config
	log hclog.Logger

	ctx    context.Context // cancelled by Close: ends every wait
	cancel context.CancelFunc
	done   chan struct{} // closed when the sweeper has stopped

	mu       sync.Mutex
	sessions map[string]*session // by cookie value
	mcpKeys  map[string]*session // by X-NeMo-Gym-Session-Token (Config.MCP)

	aggregating chan struct{} // held by the aggregate_metrics under way
	reserved    int           // slots taken by seeds under way
	closed      bool
}

// session is one NeMo Gym session: the corpsim session and the seat the
// model plays.
type session struct {
	key     string // the cookie's value
	mcpKey  string // the X-NeMo-Gym-Session-Token of /nemo/mcp; "" without MCP
	id      string // the corpsim session
	member  string
	token   string   // the seat's token
	tools   []Tool   // what the member may call: its world's actions and observe
	actions []string // the names of tools' actions: a call of another is unknown

	// Guarded by Server.mu:
	last time.Time // when a request last began or ended
	busy int       // requests under way

	mu    sync.Mutex // one request at a time; guards what follows
	score float64    // the team score the last step or reset reported
	ended bool       // the session is known to have ended
}

// actionTools are the session's tools but observe, which tools puts last:
// reset's, for step, which answers with the next observation.
func (ss *session) actionTools() []Tool { return ss.tools[:len(ss.tools)-1] }

// New makes the adapter over ops. Close it when done.
func New(ops Ops, cfg Config) *Server {
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{ops: ops, cfg: cfg, log: cfg.Logger, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		sessions: map[string]*session{}, mcpKeys: map[string]*session{}, aggregating: make(chan struct{}, 1)}
	go s.sweepEvery(min(max(cfg.IdleTimeout/4, time.Second), time.Minute))
	return s
}

// BodyLimit is the most bytes the body of a request to path may hold (a
// path of Handler's, /nemo/…, or of the same routes at the root of a
// listener of their own): what a budget of the bodies held at once
// charges a request to it whose length is not given (httpgw's Open).
func (s *Server) BodyLimit(path string) int64 {
	switch strings.TrimPrefix(path, "/nemo") {
	case "/verify":
		return s.cfg.MaxVerifyBytes
	case "/aggregate_metrics":
		return s.cfg.MaxAggregateBytes
	}
	return s.cfg.MaxBodyBytes
}

// Handler serves the routes, with their /nemo prefix.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /nemo/seed_session", s.handleSeed)
	mux.HandleFunc("POST /nemo/reset", s.handleReset)
	mux.HandleFunc("POST /nemo/step", s.handleStep)
	mux.HandleFunc("POST /nemo/verify", s.handleVerify)
	mux.HandleFunc("POST /nemo/close", s.handleClose)
	mux.HandleFunc("GET /nemo/tools", s.handleTools)
	mux.HandleFunc("POST /nemo/aggregate_metrics", s.handleAggregate)
	mux.HandleFunc("GET /nemo/reverify_mode", s.handleReverifyMode)
	if s.cfg.MCP != nil {
		// Streamable HTTP's three methods (each more specific than a tool's route).
		for _, m := range []string{"POST", "GET", "DELETE"} {
			mux.HandleFunc(m+" /nemo/mcp", s.handleMCP)
		}
	}
	mux.HandleFunc("POST /nemo/{tool}", s.handleTool)
	return mux
}

// Close ends the waits under way and drops every session (their corpsim
// sessions run on: a server shutting down interrupts them itself). Later
// requests are answered 503.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	n := len(s.sessions)
	clear(s.sessions)
	clear(s.mcpKeys)
	s.mu.Unlock()
	s.cancel()
	<-s.done
	for range n {
		s.cfg.Recorder.Closed()
	}
}

// EndSessions stops every session the adapter holds and forgets them:
// their cookies live in this process alone, so after a restart nothing
// could play them. corpsim serve calls it before it shuts the service
// down, so that a restart does not resume them. A request in flight on one
// of them then finds it stopped.
func (s *Server) EndSessions() {
	s.mu.Lock()
	all := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	clear(s.sessions)
	clear(s.mcpKeys)
	s.mu.Unlock()
	// Several at once: one after another, a thousand sessions took longer
	// than serve's grace for its shutdown.
	sem := make(chan struct{}, stopsAtOnce)
	var wg sync.WaitGroup
	for _, ss := range all {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := s.ops.Control(ctx, ss.id, wire.OpStop); err != nil {
				s.log.Debug("stop", "session", ss.id, "error", err)
			}
			s.closeMCP(ss)
			s.cfg.Recorder.Closed()
		})
	}
	wg.Wait()
}

// stopsAtOnce is how many sessions EndSessions stops at once.
const stopsAtOnce = 32

// Len is the number of sessions held.
func (s *Server) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

func (s *Server) sweepEvery(d time.Duration) {
	defer close(s.done)
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
			s.sweep()
		}
	}
}

// sweep drops the sessions idle for longer than IdleTimeout and stops
// their corpsim sessions.
func (s *Server) sweep() int {
	now := s.cfg.Now()
	var idle []*session
	s.mu.Lock()
	for key, ss := range s.sessions { // order: each expired entry is collected; the stops below do not depend on order
		if ss.busy == 0 && now.Sub(ss.last) > s.cfg.IdleTimeout {
			delete(s.sessions, key)
			delete(s.mcpKeys, ss.mcpKey)
			idle = append(idle, ss)
		}
	}
	s.mu.Unlock()
	for _, ss := range idle {
		s.log.Info("idle session dropped", "session", ss.id, "member", ss.member)
		s.cfg.Recorder.Closed()
		s.closeMCP(ss)
		s.drop(ss)
	}
	return len(idle)
}

// drop stops ss's corpsim session (stop) and, with Config.Discard,
// deletes its log.
func (s *Server) drop(ss *session) {
	s.stop(ss)
	s.discard(ss)
}

// discard deletes the log of ss, which has stopped, with Config.Discard.
func (s *Server) discard(ss *session) {
	if !s.cfg.Discard {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// A session the adapter saw end (its last observation) may still be
	// finishing on the server for a moment: refused as running, it is
	// asked again.
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		_, err := s.ops.Delete(ctx, []string{ss.id}, false)
		var e *httpgw.Error
		if errors.As(err, &e) && e.Code == wire.DeleteRunning {
			select {
			case <-time.After(wait):
				continue
			case <-ctx.Done():
			}
		}
		if err != nil {
			s.log.Warn("cannot discard the session's log", "session", ss.id, "error", err)
			return
		}
		s.log.Debug("session discarded", "session", ss.id)
		return
	}
}

// stop stops ss's corpsim session unless it is known to have ended.
func (s *Server) stop(ss *session) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s.stopLocked(ss)
}

// stopLocked is stop with ss.mu held.
func (s *Server) stopLocked(ss *session) {
	if ss.ended {
		return
	}
	ss.ended = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.ops.Control(ctx, ss.id, wire.OpStop); err != nil {
		s.log.Debug("stop", "session", ss.id, "error", err)
	}
}

// reserve takes a slot for a new session, dropping idle ones first; false
// when there is no room (or the server is closing: closing true).
func (s *Server) reserve() (ok, closing bool) {
	s.mu.Lock()
	full := len(s.sessions)+s.reserved >= s.cfg.MaxSessions
	s.mu.Unlock()
	if full {
		s.sweep()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false, true
	}
	if len(s.sessions)+s.reserved >= s.cfg.MaxSessions {
		return false, false
	}
	s.reserved++
	return true, false
}

// add holds ss in the slot reserve took; false if the server closed
// meanwhile.
func (s *Server) add(ss *session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reserved--
	if s.closed {
		return false
	}
	ss.key = rand.Text()
	ss.last = s.cfg.Now()
	s.sessions[ss.key] = ss
	if s.cfg.MCP != nil {
		// A token of its own, which reaches /nemo/mcp alone: it is written
		// into the agent CLI's MCP configuration, which the model may read.
		ss.mcpKey = rand.Text()
		s.mcpKeys[ss.mcpKey] = ss
	}
	s.cfg.Recorder.Opened()
	return true
}

func (s *Server) unreserve() {
	s.mu.Lock()
	s.reserved--
	s.mu.Unlock()
}

// remove drops the session of cookie key; it returns it, or nil.
func (s *Server) remove(key string) *session {
	s.mu.Lock()
	ss := s.sessions[key]
	if ss != nil {
		delete(s.sessions, key)
		delete(s.mcpKeys, ss.mcpKey)
		s.cfg.Recorder.Closed()
	}
	s.mu.Unlock()
	if ss != nil {
		s.closeMCP(ss)
	}
	return ss
}

// closeMCP closes the MCP sessions open on ss's seat, which the adapter no
// longer holds.
func (s *Server) closeMCP(ss *session) {
	if s.cfg.MCP != nil && ss.mcpKey != "" {
		s.cfg.MCP.CloseSeat(ss.id, ss.member)
	}
}

// acquire finds the session of r's cookie and marks it busy; release
// undoes that. nil when there is none.
func (s *Server) acquire(r *http.Request) *session {
	c, err := r.Cookie(CookieName)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[c.Value]
	if ss != nil {
		ss.busy++
		ss.last = s.cfg.Now()
	}
	return ss
}

func (s *Server) release(ss *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss.busy--
	ss.last = s.cfg.Now()
}

// requestContext is r's context, ended also by Close.
func (s *Server) requestContext(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// setCookie names ss in the answer (sent on every answer, as NeMo Gym's
// session middleware does: its clients keep only the cookies of the last
// answer).
func setCookie(w http.ResponseWriter, ss *session) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: ss.key, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"detail":"the answer does not encode"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// fail answers an HTTP error {"detail": msg} and records it.
func (s *Server) fail(w http.ResponseWriter, status int, code, msg string) {
	s.cfg.Recorder.Failed(code)
	writeJSON(w, status, map[string]string{"detail": httpgw.ClipMessage(msg)})
}
