package httpgw

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
)

// Config configures a Gateway. NATSURL and OperatorToken are required; the
// zero value of every other field means its default.
type Config struct {
	NATSURL       string       // the corpsim server's NATS URL, e.g. nats://127.0.0.1:4222
	OperatorToken string       // the server's operator token; operator endpoints require it as the bearer token
	Logger        hclog.Logger // nil: silent
	// TurnWait is how long the gateway holds a turn for an HTTP answer: set
	// it to the server's turn timeout (a session's own turn_timeout
	// overrides it). A turn older than that is dropped: the engine has
	// recorded a timeout for it. 0 means 30s, corpsim serve's default.
	TurnWait time.Duration
	// Retain is how long an ended session's record (its seat tokens, events
	// and rewards) is kept. 0 means 10 minutes.
	Retain time.Duration
	// RetainBytes bounds the records of ended sessions kept together (their
	// events' estimated size in memory): past it, the records of the
	// sessions that ended first are forgotten before their Retain is up
	// (their stored events and score stay readable from the server's log).
	// 0 means DefaultRetainBytes.
	RetainBytes int64
	// Gather is how long step waits for more turns once one has arrived
	// and some remote seats have none: the engine asks every member due
	// at an instant at once, so their requests arrive within a few
	// milliseconds. A turn arriving later is not lost: the next step
	// returns it. 0 means 10ms.
	Gather time.Duration
	// MaxRequestBytes bounds the body of an operator request (a create
	// request may carry a world file; fork, reset, control): a larger one
	// is refused with 413 and a message naming the limit. 0 means
	// DefaultMaxRequestBytes. Seats' answers have their own, protocol-wide
	// bound (org.MaxReplyBytes).
	MaxRequestBytes int64
	// RecordEvents is how many of a session's latest events the gateway
	// keeps in its record, and how many reward events a step that has not
	// come yet lists: a long session of NPCs makes hundreds of thousands.
	// Older events are read from the server's log (the history subject),
	// and older rewards still count in the score and in the next step's
	// sum. 0 means DefaultRecordEvents.
	RecordEvents int
}

// DefaultMaxRequestBytes is Config.MaxRequestBytes' default.
const DefaultMaxRequestBytes = 8 << 20

// DefaultRetainBytes is Config.RetainBytes' default: the records of a few
// thousand ended sessions of the shipped worlds.
const DefaultRetainBytes = 256 << 20

// DefaultRecordEvents is Config.RecordEvents' default: about 10 MiB of
// events at a support desk's few hundred bytes each.
const DefaultRecordEvents = 20000

// Validate reports what is wrong with c.
func (c Config) Validate() error {
	switch {
	case c.NATSURL == "":
		return errors.New("httpgw: NATSURL is required")
	case c.OperatorToken == "":
		return errors.New("httpgw: OperatorToken is required")
	case c.TurnWait < 0 || c.Retain < 0 || c.RetainBytes < 0 || c.Gather < 0 || c.MaxRequestBytes < 0 || c.RecordEvents < 0:
		return errors.New("httpgw: TurnWait, Retain, RetainBytes, Gather, MaxRequestBytes and RecordEvents may not be negative")
	}
	return nil
}

// Timeouts of the gateway's own NATS requests.
const (
	createTimeout  = 2 * time.Minute // a fork of a long log loads it first
	controlTimeout = 40 * time.Second
	statusTimeout  = 5 * time.Second
	historyTimeout = 15 * time.Second
)

// Gateway serves the HTTP API. Create it with New, serve Handler, and Close
// it when done. Safe for concurrent use.
type Gateway struct {
	cfg Config
	log hclog.Logger
	op  *nats.Conn
	mux *http.ServeMux
	// ctx is cancelled by Close: it ends every long poll and NATS request
	// of the requests being served.
	ctx    context.Context
	cancel context.CancelFunc

	inflight sync.WaitGroup // HTTP requests being served

	mu        sync.Mutex
	closed    bool
	sessions  map[string]*session
	tokens    map[string]*seat // seat token -> seat
	lastSweep time.Time
	// ended lists the ended sessions whose records are kept, in the order
	// they ended; endedBytes is the sum of their retained sizes
	// (Config.RetainBytes).
	ended      []*session
	endedBytes int64
}

// New connects to the server's NATS with the operator token.
func New(cfg Config) (*Gateway, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.TurnWait == 0 {
		cfg.TurnWait = 30 * time.Second
	}
	if cfg.Retain == 0 {
		cfg.Retain = 10 * time.Minute
	}
	if cfg.RetainBytes == 0 {
		cfg.RetainBytes = DefaultRetainBytes
	}
	if cfg.MaxRequestBytes == 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.Gather == 0 {
		cfg.Gather = 10 * time.Millisecond
	}
	if cfg.RecordEvents == 0 {
		cfg.RecordEvents = DefaultRecordEvents
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	g := &Gateway{cfg: cfg, log: logger, sessions: map[string]*session{}, tokens: map[string]*seat{}}
	g.ctx, g.cancel = context.WithCancel(context.Background())
	nc, err := nats.Connect(cfg.NATSURL, nats.Name("corpsim httpgw"), nats.Token(cfg.OperatorToken),
		nats.MaxReconnects(-1), nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subj := ""
			if sub != nil {
				subj = sub.Subject
			}
			logger.Warn("NATS error on the operator connection", "subject", subj, "error", err)
		}))
	if err != nil {
		g.cancel()
		return nil, fmt.Errorf("httpgw: connect to %s: %w", cfg.NATSURL, err)
	}
	g.op = nc
	g.routes()
	return g, nil
}

func (g *Gateway) routes() {
	m := http.NewServeMux()
	m.HandleFunc("GET /v1/health", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
	})
	m.HandleFunc("POST /v1/sessions", g.operator(g.handleCreate))
	m.HandleFunc("GET /v1/sessions", g.operator(g.handleList))
	m.HandleFunc("POST /v1/sessions/{id}/fork", g.operator(g.handleFork))
	m.HandleFunc("POST /v1/sessions/{id}/reset", g.operator(g.handleReset))
	m.HandleFunc("POST /v1/sessions/{id}/control", g.operator(g.handleControl))
	m.HandleFunc("POST /v1/sessions/{id}/step", g.operator(g.handleStep))
	m.HandleFunc("GET /v1/sessions/{id}/events", g.operator(g.handleEvents))
	m.HandleFunc("GET /v1/sessions/{id}/score", g.operator(g.handleScore))
	m.HandleFunc("DELETE /v1/sessions/{id}", g.operator(g.handleDelete))
	m.HandleFunc("GET /v1/sessions/{id}/seats/{member}/observation", g.seatOnly(g.handleObserve))
	m.HandleFunc("POST /v1/sessions/{id}/seats/{member}/act", g.seatOnly(g.handleAct))
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "no endpoint %s %s (see GET /v1/health and the package documentation)", r.Method, r.URL.Path)
	})
	g.mux = m
}

// Handler is the gateway's HTTP handler.
func (g *Gateway) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		closed := g.closed
		if !closed {
			g.inflight.Add(1)
		}
		g.mu.Unlock()
		if closed {
			writeError(w, http.StatusServiceUnavailable, "the gateway is closed")
			return
		}
		defer g.inflight.Done()
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		stop := context.AfterFunc(g.ctx, cancel)
		defer stop()
		g.sweep()
		g.mux.ServeHTTP(w, r.WithContext(ctx))
	})
}

// Close ends every long poll, waits for in-flight requests, and closes
// every NATS connection. Sessions on the server go on (their remote seats'
// turns time out); stop them first with a stop control if that matters.
func (g *Gateway) Close() {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	g.closed = true
	g.cancel()
	g.mu.Unlock()
	g.inflight.Wait()
	g.mu.Lock()
	all := make([]*session, 0, len(g.sessions))
	for _, s := range g.sessions {
		all = append(all, s)
	}
	g.sessions, g.tokens = map[string]*session{}, map[string]*seat{}
	g.ended, g.endedBytes = nil, 0
	g.mu.Unlock()
	for _, s := range all {
		s.finish(statusClosed)
	}
	g.op.Close()
}

// sweep forgets sessions that ended more than Retain ago, at most once a second.
func (g *Gateway) sweep() {
	now := time.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if now.Sub(g.lastSweep) < time.Second {
		return
	}
	g.lastSweep = now
	for id, s := range g.sessions {
		s.mu.Lock()
		old := s.ended && now.Sub(s.endedAt) > g.cfg.Retain
		s.mu.Unlock()
		if !old {
			continue
		}
		g.dropLocked(id, s)
		s.log.Debug("forgot an ended session")
	}
	g.pruneEndedLocked()
}

// pruneEndedLocked takes the sessions forgotten since they ended out of
// g.ended, which would keep their records; g.mu is held.
func (g *Gateway) pruneEndedLocked() {
	g.ended = slices.DeleteFunc(g.ended, func(s *session) bool { return s.retained == 0 })
}

// dropLocked forgets session s, known as id; g.mu is held.
func (g *Gateway) dropLocked(id string, s *session) {
	delete(g.sessions, id)
	for _, st := range s.seats {
		if g.tokens[st.token] == st {
			delete(g.tokens, st.token)
		}
	}
	g.endedBytes -= s.retained
	s.retained = 0
}

// keepEnded counts the record of s, which has just ended, among those
// kept, and forgets the records of the sessions that ended first while
// they are over Config.RetainBytes together (the newest is kept whatever
// its size: Config.RecordEvents bounds it).
func (g *Gateway) keepEnded(s *session) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.keepEndedLocked(s)
}

// recount counts the record of s, if it ended and is counted, at its size
// now (a fork's prefix learnt after its end).
func (g *Gateway) recount(s *session) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s.retained == 0 || g.sessions[s.id] != s {
		return
	}
	size := s.recordSize()
	g.endedBytes += size - s.retained
	s.retained = size
	g.trimEndedLocked()
}

// keepEndedLocked is keepEnded with g.mu held. A session not registered
// yet is counted when it is (register); one forgotten already (a failed
// create, Close), or counted already, is not.
func (g *Gateway) keepEndedLocked(s *session) {
	if g.sessions[s.id] != s || s.retained > 0 {
		return
	}
	size := s.recordSize()
	s.retained = size
	g.endedBytes += size
	g.ended = append(g.ended, s)
	g.trimEndedLocked()
}

// trimEndedLocked forgets the records of the sessions that ended first
// while the records kept are over Config.RetainBytes together (the newest
// is kept whatever its size); g.mu is held.
func (g *Gateway) trimEndedLocked() {
	for g.endedBytes > g.cfg.RetainBytes && len(g.ended) > 1 {
		old := g.ended[0]
		g.ended[0] = nil
		g.ended = g.ended[1:]
		if old.retained > 0 && g.sessions[old.id] == old {
			g.dropLocked(old.id, old)
			old.log.Debug("forgot an ended session: the records of ended sessions are over their bound", "retain_bytes", g.cfg.RetainBytes)
		}
	}
}

// forget removes a session at once (a failed create).
func (g *Gateway) forget(s *session) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sessions[s.id] == s {
		g.dropLocked(s.id, s)
		g.pruneEndedLocked()
		return
	}
	for _, st := range s.seats {
		if g.tokens[st.token] == st {
			delete(g.tokens, st.token)
		}
	}
}

func (g *Gateway) session(id string) *session {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.sessions[id]
}

// bearer returns the request's bearer token, or "".
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

func (g *Gateway) isOperator(tok string) bool {
	return subtle.ConstantTimeCompare([]byte(tok), []byte(g.cfg.OperatorToken)) == 1
}

func (g *Gateway) seatFor(tok string) *seat {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.tokens[tok]
}

func unauthorized(w http.ResponseWriter, tok string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="corpsim"`)
	if tok == "" {
		writeError(w, http.StatusUnauthorized, "missing bearer token (Authorization: Bearer TOKEN)")
		return
	}
	writeError(w, http.StatusUnauthorized, "unknown or expired token")
}

// operator admits only the operator token.
func (g *Gateway) operator(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok := bearer(r)
		switch {
		case tok != "" && g.isOperator(tok):
			if !validPath(w, r) {
				return
			}
			h(w, r)
		case tok != "" && g.seatFor(tok) != nil:
			writeError(w, http.StatusForbidden, "a seat's token cannot use operator endpoints")
		default:
			unauthorized(w, tok)
		}
	}
}

// validPath refuses, with 400, a session or member ID in the path that no
// session or seat can have (events.ValidSessionID; member IDs as world
// files spell them), before it reaches a NATS subject: "a.b.c" would be
// three subject tokens.
func validPath(w http.ResponseWriter, r *http.Request) bool {
	if id := r.PathValue("id"); id != "" {
		if err := events.ValidSessionID(id); err != nil {
			writeError(w, http.StatusBadRequest, "%s", strings.TrimPrefix(err.Error(), "events: "))
			return false
		}
	}
	if m := r.PathValue("member"); m != "" && !validMember(m) {
		writeError(w, http.StatusBadRequest, "member id %q: use lower-case letters, digits, '-' and '_', at most 256 bytes", m)
		return false
	}
	return true
}

// validMember reports whether m is a member ID a world file may define.
func validMember(m string) bool {
	if m == "" || len(m) > 256 || m[0] == '-' || m[0] == '_' {
		return false
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// seatOnly admits only the token of the seat named by the path.
func (g *Gateway) seatOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tok := bearer(r)
		if tok != "" && g.isOperator(tok) {
			writeError(w, http.StatusForbidden, "the operator token does not reach a seat: use the seat's token, or step")
			return
		}
		st := g.seatFor(tok)
		if tok == "" || st == nil {
			unauthorized(w, tok)
			return
		}
		if !validPath(w, r) {
			return
		}
		if st.session.id != r.PathValue("id") || st.member != r.PathValue("member") {
			writeError(w, http.StatusForbidden, "this token belongs to another seat")
			return
		}
		h(w, r)
	}
}

// request sends a JSON request on subject and decodes the JSON reply.
func (g *Gateway) request(ctx context.Context, subject string, req, reply any, timeout time.Duration) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	msg, err := g.op.RequestWithContext(ctx, subject, b)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(msg.Data, reply); err != nil {
		return fmt.Errorf("httpgw: bad reply on %s: %w", subject, err)
	}
	return nil
}

// control sends a control operation to a session.
func (g *Gateway) control(ctx context.Context, id string, op wire.ControlOp) (wire.ControlReply, error) {
	var reply wire.ControlReply
	timeout := controlTimeout
	if op == wire.OpStatus {
		timeout = statusTimeout
	}
	err := g.request(ctx, wire.ControlSubject(id), wire.ControlRequest{Op: op}, &reply, timeout)
	return reply, err
}

// history asks a running session for its stored events from seq from on.
func (g *Gateway) history(ctx context.Context, id string, from uint64, limit int) (wire.HistoryResponse, error) {
	var resp wire.HistoryResponse
	if err := g.request(ctx, wire.HistorySubject(id), wire.HistoryRequest{From: from, Limit: limit}, &resp, historyTimeout); err != nil {
		return resp, err
	}
	if resp.NoSession {
		// As before servers answered for ended sessions: nobody serves it.
		return resp, fmt.Errorf("%w: %s", nats.ErrNoResponders, resp.Error)
	}
	if resp.Error != "" {
		return resp, errors.New(resp.Error)
	}
	return resp, nil
}

// errorReply is the body of every error response.
type errorReply struct {
	Error string `json:"error"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":"response does not encode"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSON(w, code, errorReply{Error: ClipMessage(fmt.Sprintf(format, args...))})
}

// maxErrorBytes bounds an error's message in a reply: a message quoting
// what the request sent (a world's name, an agents list) must not send a
// large request back whole.
const maxErrorBytes = 4 << 10

// ClipMessage returns msg cut to maxErrorBytes (on a character boundary),
// saying how long it was.
func ClipMessage(msg string) string {
	if len(msg) <= maxErrorBytes {
		return msg
	}
	cut := maxErrorBytes
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes of message cut)", msg[:cut], len(msg)-cut)
}

// natsStatus maps an error of a NATS request to an HTTP status.
func natsStatus(err error) int {
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return http.StatusNotFound
	case errors.Is(err, nats.ErrTimeout), errors.Is(err, context.DeadlineExceeded):
		return http.StatusGatewayTimeout
	case errors.Is(err, context.Canceled):
		return 499 // the client went away
	}
	return http.StatusBadGateway
}

// register makes s and its seats' tokens known, unless the gateway is
// closing (false).
func (g *Gateway) register(s *session) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.sessions[s.id] = s
	for _, st := range s.seats {
		g.tokens[st.token] = st
	}
	if s.hasEnded() { // it ended before it was known here
		g.keepEndedLocked(s)
	}
	return true
}

// Adopt takes over the remote seats of a session this gateway did not
// create: one a restarted corpsim serve resumed (server.SavedSeats), whose
// HTTP clients come back with the tokens they had. The session, resumed
// waiting for its seats, goes on once they have joined. seats are the
// server's credentials; a seat without a token of the server's (an
// external NATS without per-seat auth, where the old gateway made the HTTP
// tokens) cannot be adopted, and neither can the session. turnWait is the
// session's turn budget (0: Config.TurnWait). The gateway's record of the
// session starts at adoption; its earlier events are learnt as a fork's
// prefix is (up to 20,000 of them), in the background.
func (g *Gateway) Adopt(ctx context.Context, id string, seats map[string]wire.Seat, turnWait time.Duration) error {
	if len(seats) == 0 {
		return fmt.Errorf("httpgw: adopt %s: no remote seats", id)
	}
	for m, cred := range seats {
		if cred.Token == "" {
			return fmt.Errorf("httpgw: adopt %s: seat %s has no token from the server; its HTTP token was the old gateway's own", id, m)
		}
	}
	if g.session(id) != nil {
		return fmt.Errorf("httpgw: adopt %s: the gateway already plays it", id)
	}
	if turnWait <= 0 {
		turnWait = g.cfg.TurnWait
	}
	st, err := g.control(ctx, id, wire.OpStatus)
	if err == nil && st.Error != "" {
		err = errors.New(st.Error)
	}
	if err != nil {
		return fmt.Errorf("httpgw: adopt %s: %w", id, err)
	}
	s := newSession(g, wire.CreateReply{Session: id, Seats: seats}, wire.CreateRequest{}, turnWait)
	// What happened before is a prefix, as a fork's is.
	s.forkSeq, s.last, s.prefixKnown = st.Events, st.Events, st.Events == 0
	if err := s.follow(); err != nil {
		s.finish(statusStopped)
		return err
	}
	if err := s.join(ctx, seats); err != nil {
		s.finish(statusStopped)
		return fmt.Errorf("httpgw: adopt %s: %w", id, err)
	}
	if !g.register(s) {
		s.finish(statusClosed)
		return fmt.Errorf("httpgw: adopt %s: the gateway is closing", id)
	}
	// Learnt in the background: the seats are back, and their clients
	// should not wait for the record of the past.
	go s.learnPrefix(g.ctx)
	s.log.Info("session adopted", "events", st.Events, "remote_seats", len(s.seats))
	return nil
}
