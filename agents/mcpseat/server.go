package mcpseat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/httpgw"
	"github.com/corpsim/corpsim/org"
)

// Ops is what the adapter asks of the HTTP gateway's seat operations
// (agents/httpgw, ops.go): *httpgw.Gateway satisfies it. A seat token
// reaches only its own seat through every one of them.
type Ops interface {
	IsOperator(token string) bool
	SeatOf(token string) (session, member string, ok bool)
	// SeatTools is the seat's world's tools (agents.ToolDefsFor as JSON),
	// or nil when they are not known: the seat is offered every action.
	SeatTools(token string) json.RawMessage
	Observe(ctx context.Context, token string, wait time.Duration) (httpgw.Observation, error)
	Answer(ctx context.Context, token string, actions []org.Action, wait time.Duration) (httpgw.ActReply, error)
}

var _ Ops = (*httpgw.Gateway)(nil)

// Recorder counts what the adapter does, for /metrics. Its methods must be
// safe for concurrent use.
type Recorder interface {
	Opened()  // an MCP session began (a 2026-07-28 request, which has none, while it is served)
	Closed()  // it ended
	Stepped() // an action tool call answered the seat's turn
	// Failed counts an error answered, by its code: "http_401" … for an
	// HTTP refusal, the JSON-RPC error code ("-32601") for a JSON-RPC
	// error, "tool_error_409" … for a tool error (isError), by the kind
	// of the refusal as an HTTP status.
	Failed(code string)
}

// Path is where Handler serves MCP.
const Path = "/mcp"

// Scope is the scope of a seat token as the SDK's bearer-token check sees it.
const Scope = "corpsim.seat"

// Defaults of Config's zero fields.
const (
	DefaultMaxRequestBytes    = mcp.DefaultMaxRequestBodyBytes // 4 MiB
	DefaultIdleTimeout        = time.Hour                      // a model may think long between calls; the TypeScript SDK does not open another session on a 404
	DefaultMaxSessions        = 4096
	DefaultMaxSessionsPerSeat = 4
	DefaultObserveWait        = 30 * time.Second
	DefaultMaxWait            = 50 * time.Second // under the TypeScript SDK's 60 s request timeout
	DefaultActWait            = 30 * time.Second
)

// Config configures a Server. The zero value of every field means its default.
type Config struct {
	Logger hclog.Logger // nil: silent
	// MaxRequestBytes bounds an HTTP request's body: a larger one is
	// answered 413 and nothing of it is read further. corpsim serve sets
	// it to --max-message. 0: DefaultMaxRequestBytes. A tool call's
	// arguments are also bounded by org.MaxReplyBytes, as a seat's reply is.
	MaxRequestBytes int64
	// IdleTimeout closes an MCP session (2025-11-25 and earlier) that has
	// had no request for this long; its client then gets 404 and starts
	// another. 0: DefaultIdleTimeout.
	IdleTimeout time.Duration
	// MaxSessions bounds the MCP sessions open at once: one more is refused
	// with 503 until one closes. 0: DefaultMaxSessions.
	MaxSessions int
	// MaxSessionsPerSeat bounds one seat's open MCP sessions: opening one
	// more closes that seat's oldest (a client that restarted left it
	// behind), so that one token cannot use up MaxSessions. 0:
	// DefaultMaxSessionsPerSeat.
	MaxSessionsPerSeat int
	// ObserveWait is how long observe waits for the seat's turn when the
	// call does not say; MaxWait the most a call may ask (a longer wait is
	// cut to it). Keep both under MCP clients' request timeouts (the
	// TypeScript SDK's is 60 s: a call it gives up on fails, however long
	// the model asked to wait).
	// 0: DefaultObserveWait, DefaultMaxWait.
	ObserveWait, MaxWait time.Duration
	// ActWait is how long an action tool call waits for the seat's turn
	// when none waits yet. 0: DefaultActWait.
	ActWait  time.Duration
	Recorder Recorder // nil: none
}

// Validate reports a negative field (New takes it for its default).
func (c Config) Validate() error {
	if c.MaxRequestBytes < 0 || c.IdleTimeout < 0 || c.MaxSessions < 0 || c.MaxSessionsPerSeat < 0 ||
		c.ObserveWait < 0 || c.MaxWait < 0 || c.ActWait < 0 {
		return errors.New("mcpseat: limits and timeouts may not be negative")
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.MaxRequestBytes <= 0 {
		c.MaxRequestBytes = DefaultMaxRequestBytes
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.IdleTimeout, DefaultIdleTimeout)
	def(&c.ObserveWait, DefaultObserveWait)
	def(&c.MaxWait, DefaultMaxWait)
	def(&c.ActWait, DefaultActWait)
	c.ObserveWait = min(c.ObserveWait, c.MaxWait)
	if c.MaxSessions <= 0 {
		c.MaxSessions = DefaultMaxSessions
	}
	if c.MaxSessionsPerSeat <= 0 {
		c.MaxSessionsPerSeat = DefaultMaxSessionsPerSeat
	}
	if c.Recorder == nil {
		c.Recorder = nopRecorder{}
	}
	return c
}

type nopRecorder struct{}

func (nopRecorder) Opened()       {}
func (nopRecorder) Closed()       {}
func (nopRecorder) Stepped()      {}
func (nopRecorder) Failed(string) {}

// Server is the MCP adapter: create it with New, serve Handler at Path,
// Close it before the HTTP server shuts down. Safe for concurrent use.
type Server struct {
	cfg Config
	ops Ops
	log hclog.Logger
	rec Recorder

	// every serves the seats whose world's tools are not known: every
	// action's tool. worlds serves the others, by their tools' JSON, up to
	// maxWorlds of them (a seat of a world dropped gets it again).
	every     *servers
	worlds    map[string]*servers
	legacySDK http.Handler // the SDK's handler of the legacy servers
	// legacyH and modernH check the bearer token, then serve.
	legacyH, modernH http.Handler

	// ctx is cancelled by Close: it ends the tool calls being served.
	ctx    context.Context
	cancel context.CancelFunc

	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup
	watchers sync.WaitGroup                  // the goroutines that forget a session once it ends (track)
	open     map[*mcp.ServerSession]string   // open legacy session -> its seat
	bySeat   map[string][]*mcp.ServerSession // seat -> its open sessions, oldest first
}

// New makes the adapter over ops (an *httpgw.Gateway).
func New(ops Ops, cfg Config) *Server {
	cfg = cfg.withDefaults()
	s := &Server{cfg: cfg, ops: ops, log: cfg.Logger, rec: cfg.Recorder,
		open: map[*mcp.ServerSession]string{}, bySeat: map[string][]*mcp.ServerSession{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.every, s.worlds = s.newServers(agents.ToolDefs()), map[string]*servers{}
	sl := newSlog(s.log.Named("sdk"))
	s.legacySDK = mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server { return serversOfRequest(r).legacy },
		&mcp.StreamableHTTPOptions{Logger: sl, SessionTimeout: cfg.IdleTimeout, MaxRequestBodyBytes: cfg.MaxRequestBytes})
	modernSDK := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server { return serversOfRequest(r).modern },
		&mcp.StreamableHTTPOptions{Logger: sl, Stateless: true, MaxRequestBodyBytes: cfg.MaxRequestBytes, PropagateRequestCancellation: true})
	checked := auth.RequireBearerToken(s.verify, &auth.RequireBearerTokenOptions{Scopes: []string{Scope}, AllowMissingExpiration: true})
	s.legacyH = checked(http.HandlerFunc(s.serveLegacy))
	s.modernH = checked(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		modernSDK.ServeHTTP(w, s.withServers(r))
	}))
	return s
}

// Handler serves MCP's streamable HTTP transport at Path: the Server
// itself.
func (s *Server) Handler() http.Handler { return s }

// ServeHTTP serves MCP's streamable HTTP transport (at Path).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.serve(w, r) }

// CloseSeat closes the MCP sessions open on member's seat of session: an
// adapter that handed the seat to a client (NeMo Gym's /nemo/mcp) calls it
// when it lets the seat go, so that they do not wait out IdleTimeout
// holding places of MaxSessions.
func (s *Server) CloseSeat(session, member string) {
	st := seat{session: session, member: member}
	s.mu.Lock()
	open := slices.Clone(s.bySeat[st.key()])
	s.mu.Unlock()
	for _, ss := range open {
		s.log.Debug("MCP session closed: its seat was let go", "seat", st.key(), "mcp_session", ss.ID())
		_ = ss.Close()
	}
}

// Close refuses new requests (503), ends the tool calls being served and
// every open MCP session, and waits for the requests in flight and for
// each session's bookkeeping (Sessions is 0 once it returns; CI under
// -race saw 1 when Close did not wait for it).
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.cancel()
	all := make([]*mcp.ServerSession, 0, len(s.open))
	for ss := range s.open {
		all = append(all, ss)
	}
	s.mu.Unlock()
	for _, ss := range all {
		_ = ss.Close()
	}
	s.inflight.Wait()
	s.watchers.Wait()
}

// protocolHeader is the request header naming the protocol revision
// (Mcp-Protocol-Version): a 2026-07-28 client sends it on every request,
// server/discover included.
const protocolHeader = "Mcp-Protocol-Version"

// modernRevision is the first revision without sessions.
const modernRevision = "2026-07-28"

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w}
	defer func() {
		if sw.code >= 400 {
			s.rec.Failed(httpCode(sw.code))
		}
	}()
	if r.URL.Path != Path {
		httpError(sw, http.StatusNotFound, "no MCP endpoint at %s: use %s", r.URL.Path, Path)
		return
	}
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.inflight.Add(1)
	}
	s.mu.Unlock()
	if closed {
		httpError(sw, http.StatusServiceUnavailable, "the MCP server is closing")
		return
	}
	defer s.inflight.Done()
	if tok := bearer(r); tok != "" && s.ops.IsOperator(tok) {
		httpError(sw, http.StatusForbidden, "the operator token is not a seat's: use the seat token from the create reply")
		return
	}
	if v := r.Header.Get(protocolHeader); v >= modernRevision {
		s.rec.Opened()
		defer s.rec.Closed()
		s.modernH.ServeHTTP(sw, r)
		return
	}
	s.legacyH.ServeHTTP(sw, r)
}

// serveLegacy serves a request of a client on a revision with sessions. A
// request that opens a session (POST without Mcp-Session-Id) is refused
// at capacity; once it has opened one, the session is counted against its
// seat.
func (s *Server) serveLegacy(w http.ResponseWriter, r *http.Request) {
	r = s.withServers(r)
	opening := r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == ""
	if opening {
		s.mu.Lock()
		n := len(s.open)
		s.mu.Unlock()
		if n >= s.cfg.MaxSessions {
			w.Header().Set("Retry-After", "5")
			httpError(w, http.StatusServiceUnavailable, "the server holds its limit of %d MCP sessions; try again later", s.cfg.MaxSessions)
			return
		}
	}
	s.methodNotFound(s.legacySDK, w, r)
	if !opening {
		return
	}
	if id := w.Header().Get("Mcp-Session-Id"); id != "" {
		if st := seatOfRequest(r); st != nil {
			s.track(serversOfRequest(r).legacy, id, st.key())
		}
	}
}

// servers are the two MCP servers of one set of tools: legacy serves
// protocol revisions up to 2025-11-25 with MCP sessions (Mcp-Session-Id,
// bound to the seat), modern serves 2026-07-28, which has no sessions.
// Both have the same tools and resource.
type servers struct{ legacy, modern *mcp.Server }

func (s *Server) newServers(defs []agents.Tool) *servers {
	tools := ToolsOf(defs)
	return &servers{legacy: s.newMCPServer(tools), modern: s.newMCPServer(tools)}
}

// serversKey is the request context's key of the servers that serve it.
type serversKey struct{}

// withServers is r with the servers of its seat's tools in its context,
// chosen once for the request: the SDK's getServer and track read them.
func (s *Server) withServers(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), serversKey{}, s.serversOf(seatOfRequest(r))))
}

func serversOfRequest(r *http.Request) *servers { return r.Context().Value(serversKey{}).(*servers) }

// maxWorlds bounds the worlds a Server keeps MCP servers for.
const maxWorlds = 64

// serversOf returns the servers of seat st's world's tools, made at the
// first seat of the world; every action's for a seat whose world's tools
// are not known (or that do not decode).
func (s *Server) serversOf(st *seat) *servers {
	if st == nil {
		return s.every
	}
	raw := s.ops.SeatTools(st.token)
	if len(raw) == 0 {
		return s.every
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sv, ok := s.worlds[string(raw)]; ok {
		return sv
	}
	var defs []agents.Tool
	if err := json.Unmarshal(raw, &defs); err != nil || len(defs) == 0 {
		s.log.Warn("a seat's tools do not decode: it is offered every action", "seat", st.key(), "error", err)
		return s.every
	}
	if len(s.worlds) >= maxWorlds {
		for k := range s.worlds { // one, any: sessions open on it go on, its next seat makes it again
			delete(s.worlds, k)
			break
		}
	}
	sv := s.newServers(defs)
	s.worlds[string(raw)] = sv
	return sv
}

// track counts the new legacy session id of server srv against seat,
// closing the seat's oldest beyond MaxSessionsPerSeat, and uncounts it once
// it ends.
func (s *Server) track(srv *mcp.Server, id, seat string) {
	var ss *mcp.ServerSession
	for x := range srv.Sessions() {
		if x.ID() == id {
			ss = x
			break
		}
	}
	if ss == nil {
		return // it has ended already (its initialize failed)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = ss.Close()
		return
	}
	s.open[ss] = seat
	s.watchers.Add(1) // the goroutine below; Close waits for it (under s.mu, before closed)
	list := append(s.bySeat[seat], ss)
	var evict []*mcp.ServerSession
	if over := len(list) - s.cfg.MaxSessionsPerSeat; over > 0 {
		evict, list = append(evict, list[:over]...), list[over:]
	}
	s.bySeat[seat] = list
	s.mu.Unlock()
	s.rec.Opened()
	s.log.Debug("MCP session opened", "seat", seat, "mcp_session", id)
	for _, old := range evict {
		s.log.Debug("MCP session closed: its seat opened more than its limit", "seat", seat, "mcp_session", old.ID(), "limit", s.cfg.MaxSessionsPerSeat)
		_ = old.Close()
	}
	go func() {
		defer s.watchers.Done()
		_ = ss.Wait()
		s.mu.Lock()
		delete(s.open, ss)
		l := s.bySeat[seat]
		for i, x := range l {
			if x == ss {
				l = append(l[:i:i], l[i+1:]...)
				break
			}
		}
		if len(l) == 0 {
			delete(s.bySeat, seat)
		} else {
			s.bySeat[seat] = l
		}
		s.mu.Unlock()
		s.rec.Closed()
		s.log.Debug("MCP session closed", "seat", seat, "mcp_session", id)
	}()
}

// Sessions is how many MCP sessions are open.
func (s *Server) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.open)
}

// seat is the seat a request's token picked.
type seat struct {
	token, session, member string
}

func (st *seat) key() string { return st.session + "/" + st.member }

// verify is the SDK's bearer-token check: a seat token is known to the
// gateway; any other is refused with 401.
func (s *Server) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	session, member, ok := s.ops.SeatOf(token)
	if !ok {
		return nil, fmt.Errorf("%w: unknown or expired seat token", auth.ErrInvalidToken)
	}
	st := &seat{token: token, session: session, member: member}
	// UserID binds an MCP session to its seat: a request carrying another
	// token is refused on it (403).
	return &auth.TokenInfo{Scopes: []string{Scope}, UserID: st.key(), Extra: map[string]any{seatKey: st}}, nil
}

const seatKey = "corpsim.seat"

func seatOfInfo(ti *auth.TokenInfo) *seat {
	if ti == nil {
		return nil
	}
	st, _ := ti.Extra[seatKey].(*seat)
	return st
}

func seatOfRequest(r *http.Request) *seat { return seatOfInfo(auth.TokenInfoFromContext(r.Context())) }

// bearer returns the request's bearer token, or "".
func bearer(r *http.Request) string {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// httpError answers an HTTP-level refusal in the manner of the SDK's own
// (plain text), which MCP clients report with the status.
func httpError(w http.ResponseWriter, code int, format string, args ...any) {
	http.Error(w, fmt.Sprintf(format, args...), code)
}

// httpCode names an HTTP refusal for Recorder.Failed: "http_" and its
// status (MCP's transport refuses with HTTP statuses).
func httpCode(code int) string { return "http_" + strconv.Itoa(code) }

// statusWriter notes the status of a response. Unwrap lets the SDK flush
// its event streams through http.ResponseController.
type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
