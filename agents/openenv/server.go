package openenv

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents/httpgw"
	"github.com/corpsim/corpsim/agents/wire"
)

// Recorder counts what the adapter does, for /metrics. Implementations
// must be safe for concurrent use.
type Recorder interface {
	Opened()            // a WebSocket connection began
	Closed()            // it ended
	Stepped()           // one step answered with an observation
	Failed(code string) // an error answered, by its code (INVALID_JSON, …; UNAUTHORIZED, FORBIDDEN for refused credentials)
}

type nopRecorder struct{}

func (nopRecorder) Opened()       {}
func (nopRecorder) Closed()       {}
func (nopRecorder) Stepped()      {}
func (nopRecorder) Failed(string) {}

// Config configures a Server. The zero value of every field means its default.
type Config struct {
	Logger   hclog.Logger // nil: silent
	Recorder Recorder     // nil: none
	// MaxMessageBytes bounds one frame (and a stateless request's body):
	// a larger one is dropped and answered VALIDATION_ERROR (413 on the
	// stateless routes); one over 4× closes the connection. 0 means
	// httpgw.DefaultMaxRequestBytes (corpsim serve passes --max-message).
	MaxMessageBytes int64
	// FrameBudget bounds the bytes of the frames held at once by every
	// connection together (a frame is held whole, as it is read, until it
	// is answered): a frame that would take the total past it is read to
	// its end, dropped, and answered CAPACITY_REACHED, so that clients
	// trickling large frames (pings keep a connection in the middle of a
	// frame alive) cannot hold the server's memory. 0 means
	// httpgw.DefaultBodyBudget, and never less than two frames of
	// MaxMessageBytes.
	FrameBudget int64
	// IdleTimeout closes a connection that sends no frame for this long
	// (stopping its session). 0 means 10 minutes.
	IdleTimeout time.Duration
	// StepWait is how long a step (and reset) waits for the next turns
	// before it answers with the seats asked so far (perhaps none). It
	// should stay under the clients' own timeout (OpenEnv's is 60s).
	// 0 means 30s.
	StepWait time.Duration
	// WriteTimeout bounds writing one reply to a slow client; past it the
	// connection is closed. 0 means 10s.
	WriteTimeout time.Duration
	// ReadAheadAfter is how long a frame is answered before the
	// connection is read on beside it, so that the client's pings are
	// answered (OpenEnv's client drops a connection whose ping waits 20
	// seconds). Frames answered sooner cost no second goroutine. 0 means
	// a second.
	ReadAheadAfter time.Duration
	// DefaultWorld is the shipped world a reset plays when it names none
	// and its connection played none before: OpenEnv's generic clients
	// (and trainers' harnesses over them) call reset() with no arguments.
	// Empty: such a reset is refused, naming what it lacks.
	DefaultWorld string
}

// Validate reports a negative setting.
func (c Config) Validate() error {
	if c.MaxMessageBytes < 0 || c.FrameBudget < 0 || c.IdleTimeout < 0 || c.StepWait < 0 || c.WriteTimeout < 0 {
		return errors.New("openenv: MaxMessageBytes, FrameBudget, IdleTimeout, StepWait and WriteTimeout may not be negative")
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = hclog.NewNullLogger()
	}
	if c.Recorder == nil {
		c.Recorder = nopRecorder{}
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = httpgw.DefaultMaxRequestBytes
	}
	if c.FrameBudget == 0 {
		c.FrameBudget = max(httpgw.DefaultBodyBudget, 2*(c.MaxMessageBytes+1)) // a frame of the limit holds a byte more (read to tell it is not over)
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = 10 * time.Minute
	}
	if c.StepWait == 0 {
		c.StepWait = 30 * time.Second
	}
	if c.ReadAheadAfter <= 0 {
		c.ReadAheadAfter = time.Second
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = 10 * time.Second
	}
	return c
}

// Timeouts of the adapter's own operations.
const (
	stopTimeout  = 10 * time.Second // stopping an abandoned session
	closeTimeout = 10 * time.Second // Close waiting for the connections' handlers
)

// Server serves the OpenEnv routes. Create it with New, serve Handler, and
// Close it before the HTTP server shuts down. Safe for concurrent use.
type Server struct {
	ops Ops
	cfg Config
	log hclog.Logger
	rec Recorder
	mux *http.ServeMux

	schema   []byte
	metadata []byte

	// ctx is cancelled by Close once the connections have had their
	// chance to end: it aborts their operations.
	ctx    context.Context
	cancel context.CancelFunc

	mu      sync.Mutex
	closed  bool
	conns   map[*websocket.Conn]*deadline
	handled sync.WaitGroup // WebSocket handlers running

	// The watchdog closes the connections whose deadline passed (see
	// deadline); it runs from the first connection until Close.
	watchOnce sync.Once
	watchStop chan struct{}
	watchDone chan struct{}
	born      time.Time // deadlines count from it, on the monotonic clock

	pending pendingRewards // stateless sessions' rewards before their first step

	frames *httpgw.Budget // the bytes of the frames held (Config.FrameBudget)

	defaultToolsState // Config.DefaultWorld's tools, for list_tools before a reset (tools.go)
}

// New returns a Server over ops. It panics on an invalid cfg (see Validate).
func New(ops Ops, cfg Config) *Server {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	cfg = cfg.withDefaults()
	s := &Server{ops: ops, cfg: cfg, log: cfg.Logger, rec: cfg.Recorder, conns: map[*websocket.Conn]*deadline{},
		watchStop: make(chan struct{}), watchDone: make(chan struct{}), born: time.Now(), frames: httpgw.NewBudget(cfg.FrameBudget),
		schema: schemaJSON(), metadata: metadataJSON()}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	m := http.NewServeMux()
	m.HandleFunc("GET /openenv/ws", s.handleWS)
	m.HandleFunc("POST /openenv/reset", s.handleReset)
	m.HandleFunc("POST /openenv/step", s.handleStep)
	m.HandleFunc("GET /openenv/health", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "healthy"})
	})
	m.HandleFunc("GET /openenv/schema", func(w http.ResponseWriter, _ *http.Request) { writeRaw(w, s.schema) })
	m.HandleFunc("GET /openenv/metadata", func(w http.ResponseWriter, _ *http.Request) { writeRaw(w, s.metadata) })
	m.HandleFunc("GET /openenv/openapi.json", func(w http.ResponseWriter, _ *http.Request) { writeRaw(w, openapiJSON()) })
	m.HandleFunc("GET /openenv/state", s.handleState)
	m.HandleFunc("POST /openenv/mcp", s.handleMCP)
	m.HandleFunc("/openenv/", func(w http.ResponseWriter, r *http.Request) {
		writeDetail(w, http.StatusNotFound, "", "no route %s %s (OpenEnv routes: GET /openenv/ws, /health, /schema, /metadata, /state, /openapi.json; POST /openenv/reset, /step, /mcp)", r.Method, r.URL.Path)
	})
	s.mux = m
	return s
}

// Handler serves every route under /openenv/.
func (s *Server) Handler() http.Handler { return s.mux }

// Close refuses new connections, sends every open one a going-away close
// frame, and waits (at most 10s) for their handlers, which stop their
// sessions; then it aborts what is left.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	conns := make([]*websocket.Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		go func() { _ = c.Close(websocket.StatusGoingAway, "corpsim is shutting down") }()
	}
	done := make(chan struct{})
	go func() { s.handled.Wait(); close(done) }()
	t := time.NewTimer(closeTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.log.Warn("OpenEnv connections still running after the shutdown wait; aborting them", "open", len(conns))
	}
	s.cancel()
	for _, c := range conns {
		_ = c.CloseNow()
	}
	close(s.watchStop)
	s.watchOnce.Do(func() { close(s.watchDone) }) // never started
	<-s.watchDone
}

// token returns the request's credentials: a bearer token, or the
// password of HTTP Basic credentials.
func token(r *http.Request) string {
	scheme, rest, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok {
		return ""
	}
	rest = strings.TrimSpace(rest)
	switch {
	case strings.EqualFold(scheme, "Bearer"):
		return rest
	case strings.EqualFold(scheme, "Basic"):
		b, err := base64.StdEncoding.DecodeString(rest)
		if err != nil {
			return ""
		}
		_, pass, _ := strings.Cut(string(b), ":")
		return pass
	}
	return ""
}

// authorize admits the operator token only; it answers the refusal itself.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request) bool {
	tok := token(r)
	switch {
	case tok != "" && s.ops.IsOperator(tok):
		return true
	case tok != "":
		if _, _, seat := s.ops.SeatOf(tok); seat {
			s.rec.Failed("FORBIDDEN")
			writeDetail(w, http.StatusForbidden, "", "a seat's token cannot control an OpenEnv environment: use the operator token")
			return false
		}
	}
	s.rec.Failed("UNAUTHORIZED")
	w.Header().Set("WWW-Authenticate", `Bearer realm="corpsim", Basic realm="corpsim"`)
	if tok == "" {
		writeDetail(w, http.StatusUnauthorized, "", "missing operator token (Authorization: Bearer TOKEN, or Basic credentials with the token as the password)")
	} else {
		writeDetail(w, http.StatusUnauthorized, "", "unknown token")
	}
	return false
}

func (s *Server) handleWS(w http.ResponseWriter, r *http.Request) {
	if !s.authorize(w, r) {
		return
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		writeDetail(w, http.StatusServiceUnavailable, CodeSession, "corpsim is shutting down")
		return
	}
	// The HTTP server's read and write deadlines would cut the connection
	// after a minute; the connection keeps its own (idle, write).
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Time{})
	_ = rc.SetWriteDeadline(time.Time{})
	dl := &deadline{}
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled,
		// A client's keepalive ping is a sign of life: it moves the idle
		// deadline, if one is armed (between a reply and the next frame).
		OnPingReceived: func(context.Context, []byte) bool {
			if at := dl.idle.Load(); at != 0 {
				dl.idle.CompareAndSwap(at, s.after(s.cfg.IdleTimeout))
			}
			return true
		}})
	if err != nil {
		s.log.Debug("WebSocket upgrade refused", "error", err)
		return
	}
	s.mu.Lock()
	if s.closed { // Close began during the upgrade
		s.mu.Unlock()
		_ = c.Close(websocket.StatusTryAgainLater, "corpsim is shutting down")
		return
	}
	s.conns[c] = dl
	s.handled.Add(1)
	s.mu.Unlock()
	s.watchOnce.Do(func() { go s.watchdog() })
	s.rec.Opened()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.rec.Closed()
		s.handled.Done()
	}()
	s.serveConn(c, dl)
}

// serveConn reads, answers and writes frames in turn until the connection
// ends; then it stops the episode's session. A frame whose answer takes
// longer than ReadAheadAfter (a step or reset waiting for turns) has the
// connection read on beside it, on a goroutine of its own, until the next
// frame comes: the WebSocket library answers a client's pings only while
// it reads, and OpenEnv's Python client (the websockets package's
// defaults) drops a connection whose ping goes unanswered for 20 seconds.
// A quick answer costs no second goroutine (one per frame took a step's
// round trip from 1.6 to 2.8 times a raw echo's).
func (s *Server) serveConn(c *websocket.Conn, dl *deadline) {
	c.SetReadLimit(4 * s.cfg.MaxMessageBytes)
	e := &episode{srv: s}
	var ahead chan frame // the next frame, read beside the last answer; nil: none
	defer func() {
		e.abandon(s.ctx)
		_ = c.CloseNow()
		if ahead != nil {
			f := <-ahead // its read ends with the connection
			s.release(&f)
		}
	}()
	s.arm(&dl.idle, s.cfg.IdleTimeout)
	for {
		var f frame
		if ahead != nil {
			f, ahead = <-ahead, nil
		} else {
			f = s.read(c)
		}
		dl.idle.Store(0)
		if f.err != nil {
			if st := websocket.CloseStatus(f.err); st != websocket.StatusNormalClosure && st != websocket.StatusGoingAway {
				s.log.Debug("connection ended", "session", e.session, "error", f.err)
			}
			return
		}
		// A slow answer (a reset or a step waiting for the session) reads
		// the next frame beside it; a connection that ends meanwhile ends
		// the wait, and the session with it, at once rather than once the
		// wait is over.
		ctx, cancel := context.WithCancel(s.ctx)
		next := make(chan frame, 1)
		readOn := time.AfterFunc(s.cfg.ReadAheadAfter, func() {
			f := s.read(c)
			if f.err != nil {
				cancel()
			}
			next <- f
		})
		ok := s.answer(ctx, c, dl, e, &f)
		cancel()
		if !readOn.Stop() {
			ahead = next // reading on: the next frame comes from there
		}
		if !ok {
			return
		}
	}
}

// frame is a message read, or the error that ended the reading.
type frame struct {
	msg    *bytes.Buffer
	held   int64 // the bytes msg holds of the server's frame budget
	tooBig int64 // > 0: a message of this size was dropped, over the limit
	busy   int64 // > 0: a message of this size was dropped, the budget full
	err    error
}

// release gives f's buffer back, and its bytes to the frame budget.
func (s *Server) release(f *frame) {
	if f.msg != nil {
		putBuf(f.msg)
		f.msg = nil
	}
	s.frames.Give(f.held)
	f.held = 0
}

// answer answers f (or the dropping of a frame too big or read while the
// frame budget was full) and arms the idle deadline. It reports false
// when the connection is to end: a close frame, or a reply it could not
// write.
func (s *Server) answer(ctx context.Context, c *websocket.Conn, dl *deadline, e *episode, f *frame) bool {
	var reply []byte
	quit := false
	switch {
	case f.tooBig > 0:
		s.rec.Failed(CodeValidation)
		reply = encode(errFrame{Type: "error", Data: errData{Code: CodeValidation,
			Message: fmt.Sprintf("message of %d bytes is over this server's limit of %d bytes; it was dropped", f.tooBig, s.cfg.MaxMessageBytes)}})
	case f.busy > 0:
		s.rec.Failed(CodeCapacityReached)
		reply = encode(errFrame{Type: "error", Data: errData{Code: CodeCapacityReached,
			Message: fmt.Sprintf("message of %d bytes dropped: the server is holding as many messages as it can at once (%d MiB); send it again shortly", f.busy, s.cfg.FrameBudget>>20)}})
	default:
		reply, quit = e.handle(ctx, f.msg.Bytes())
	}
	s.release(f)
	if quit {
		e.abandon(s.ctx)
		_ = c.Close(websocket.StatusNormalClosure, "")
		return false
	}
	s.arm(&dl.write, s.cfg.WriteTimeout)
	err := s.write(c, reply)
	dl.write.Store(0)
	if err != nil {
		s.log.Debug("reply not written; closing", "session", e.session, "error", err)
		return false
	}
	// Idle from the reply on, until the next frame (or ping) comes.
	s.arm(&dl.idle, s.cfg.IdleTimeout)
	return true
}

// read reads the next message (the watchdog bounds the wait), holding
// the bytes its buffer takes in the server's frame budget as it grows. A
// message over the limit, or one the budget has no room for, is read to
// its end and dropped (tooBig, busy: its size).
//
// Reads and writes take no context: a context that can end costs the
// WebSocket library a callback registered and removed per frame, and one
// with a deadline a timer too, which together took 40% of a step's round
// trip. The connection's deadline and the watchdog bound them instead,
// and Close closes every connection.
func (s *Server) read(c *websocket.Conn) frame {
	_, r, err := c.Reader(context.Background())
	if err != nil {
		return frame{err: err}
	}
	f := frame{msg: getBuf()}
	lr := io.LimitReader(r, s.cfg.MaxMessageBytes+1)
	var n int64
	for {
		if f.msg.Available() == 0 && int64(f.msg.Cap()) <= s.cfg.MaxMessageBytes {
			// Grown by hand, held before it is made: bytes.Buffer.Grow
			// may make twice what a frame needs (a frame of the limit
			// took twice the limit), this at most the limit and a byte.
			want := min(max(2*int64(f.msg.Cap()), 512), s.cfg.MaxMessageBytes+1)
			if !s.hold(&f, want) {
				f.busy = 1 // set to the size below
				break
			}
			grown := make([]byte, f.msg.Len(), want)
			copy(grown, f.msg.Bytes())
			putBuf(f.msg)
			f.msg = bytes.NewBuffer(grown)
		}
		if !s.hold(&f, int64(f.msg.Cap())) {
			f.busy = 1
			break
		}
		b := f.msg.AvailableBuffer()
		m, rerr := lr.Read(b[:cap(b)])
		f.msg.Write(b[:m])
		n += int64(m)
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			s.release(&f)
			return frame{err: rerr}
		}
	}
	if f.busy > 0 || n > s.cfg.MaxMessageBytes {
		s.release(&f) // before the rest comes, which may be slow
		rest, err := io.Copy(io.Discard, r)
		if err != nil {
			return frame{err: err}
		}
		if f.busy > 0 {
			f.busy = n + rest
		} else {
			f.tooBig = n + rest
		}
	}
	return f
}

// hold takes from the frame budget what f needs to hold size bytes, more
// than it holds; it reports false, holding nothing more, when there is no
// room.
func (s *Server) hold(f *frame, size int64) bool {
	if size <= f.held {
		return true
	}
	if !s.frames.Take(size - f.held) {
		return false
	}
	f.held = size
	return true
}

func (s *Server) write(c *websocket.Conn, b []byte) error {
	return c.Write(context.Background(), websocket.MessageText, b)
}

// deadline is when the watchdog closes a connection: while it waits for
// a frame, the idle timeout after the wait began; while it writes a
// reply, the write timeout after the write began; never while the frame
// is handled. Nanoseconds since the server's birth on the monotonic
// clock (a change of the wall clock moves no deadline), 0 for none.
// deadline holds a connection's two deadlines, as times since the
// server's birth; 0 is none: idle, armed from a reply until the next frame,
// and write, armed while a reply is written.
type deadline struct{ idle, write atomic.Int64 }

// arm sets d to after from now.
func (s *Server) arm(d *atomic.Int64, after time.Duration) {
	d.Store(s.after(after))
}

// after is the time after from now, as a deadline holds it.
func (s *Server) after(d time.Duration) int64 { return int64(time.Since(s.born) + d) }

// watchTick is how often the watchdog looks: an eighth of the shorter
// timeout, between 5 ms and a second. A connection is closed at most one
// tick after its deadline.
func (s *Server) watchTick() time.Duration {
	return min(max(min(s.cfg.IdleTimeout, s.cfg.WriteTimeout)/8, 5*time.Millisecond), time.Second)
}

// watchdog closes the connections whose deadline passed, until Close.
func (s *Server) watchdog() {
	defer close(s.watchDone)
	t := time.NewTicker(s.watchTick())
	defer t.Stop()
	var late []*websocket.Conn
	for {
		select {
		case <-s.watchStop:
			return
		case <-t.C:
			now := int64(time.Since(s.born))
			late = late[:0]
			s.mu.Lock()
			for c, d := range s.conns { // order: each connection is closed on its own
				if at, wt := d.idle.Load(), d.write.Load(); (at != 0 && now > at) || (wt != 0 && now > wt) {
					late = append(late, c)
				}
			}
			s.mu.Unlock()
			for _, c := range late {
				s.log.Debug("connection past its deadline (idle or a reply's write); closing it")
				_ = c.CloseNow()
			}
		}
	}
}

// create creates a session; when the caller is stopping one, a capacity
// refusal is retried briefly, while the server frees its place.
func (s *Server) create(ctx context.Context, req wire.CreateRequest, stopped bool) (wire.CreateReply, error) {
	for i := 0; ; i++ {
		reply, err := s.ops.Create(ctx, req)
		if err == nil || !stopped || i == 20 || httpgw.StatusOf(err) != http.StatusServiceUnavailable {
			return reply, err
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return reply, err
		}
	}
}

// Buffers of frames being read, kept while small.
var bufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func getBuf() *bytes.Buffer { return bufs.Get().(*bytes.Buffer) }

func putBuf(b *bytes.Buffer) {
	if b == nil || b.Cap() > 64<<10 {
		return
	}
	b.Reset()
	bufs.Put(b)
}

// ---- stateless routes ----------------------------------------------------

// statelessStep is the body of POST /openenv/step (OpenEnv's StepRequest).
type statelessStep struct {
	Action    json.RawMessage `json:"action"`
	EpisodeID string          `json:"episode_id"`
	TimeoutS  *float64        `json:"timeout_s,omitempty"`
	RequestID string          `json:"request_id,omitempty"`
}

func (s *Server) handleReset(w http.ResponseWriter, r *http.Request) {
	if !s.authorize(w, r) {
		return
	}
	body, ok := s.body(w, r)
	if !ok {
		return
	}
	req, err := parseReset(body, nil, s.cfg.DefaultWorld)
	if err != nil {
		s.fail(w, err)
		return
	}
	reply, err := s.ops.Create(r.Context(), req)
	if err != nil {
		s.fail(w, opError("reset", err, true))
		return
	}
	sr, err := s.ops.Step(r.Context(), reply.Session, httpgw.StepRequest{}, s.cfg.StepWait)
	if err != nil {
		s.fail(w, opError("reset: the first observation", err, false))
		return
	}
	e := &episode{srv: s, session: reply.Session}
	obs := e.observe(sr)
	obs.Data.Observation.Tools = reply.Tools
	if !obs.Data.Done {
		s.pending.put(reply.Session, obs.Data.Reward)
		obs.Data.Reward = 0
	}
	writeJSON(w, http.StatusOK, obs.Data)
}

func (s *Server) handleStep(w http.ResponseWriter, r *http.Request) {
	if !s.authorize(w, r) {
		return
	}
	body, ok := s.body(w, r)
	if !ok {
		return
	}
	var req statelessStep
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		s.fail(w, validation(`step: %v (want {"action": {"actions": {member: [action, …]}}, "episode_id": "SESSION"})`, err))
		return
	}
	if req.EpisodeID == "" {
		s.fail(w, validation(`step needs "episode_id": the session that reset returned (stateless steps keep no connection)`))
		return
	}
	sreq, err := parseStep(req.Action)
	if err != nil && isToolAction(req.Action) {
		err = validation(`step: tool actions (list_tools, call_tool) are answered on /openenv/ws, where a connection knows the turns it was asked`)
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	wait := s.cfg.StepWait
	if req.TimeoutS != nil {
		if *req.TimeoutS <= 0 || *req.TimeoutS > 600 {
			s.fail(w, validation(`step: "timeout_s" must be over 0 and at most 600`))
			return
		}
		wait = time.Duration(*req.TimeoutS * float64(time.Second))
	}
	sr, err := s.ops.Step(r.Context(), req.EpisodeID, sreq, wait)
	if err != nil {
		s.fail(w, opError("step", err, false))
		return
	}
	s.rec.Stepped()
	e := &episode{srv: s, session: req.EpisodeID}
	obs := e.observe(sr)
	obs.Data.Reward += s.pending.take(req.EpisodeID)
	writeJSON(w, http.StatusOK, obs.Data)
}

// handleState answers GET /openenv/state: without episode_id a fresh
// environment's state (as OpenEnv's stateless /state answers), with it
// that session's, to the operator.
func (s *Server) handleState(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("episode_id")
	if id == "" {
		writeJSON(w, http.StatusOK, (&episode{}).state())
		return
	}
	if !s.authorize(w, r) {
		return
	}
	reply, err := s.ops.Control(r.Context(), id, wire.OpStatus)
	if err != nil {
		s.fail(w, opError("state", err, false))
		return
	}
	st := state{EpisodeID: &id, StepCount: s.pending.steps(id), Status: reply.Status, Seats: []string{}}
	switch reply.Status {
	case "created", "running", wire.StatusPaused:
	default:
		st.Done = true
	}
	writeJSON(w, http.StatusOK, st)
}

// maxMCPBody bounds a request to POST /openenv/mcp.
const maxMCPBody = 64 << 10

// handleMCP answers POST /openenv/mcp, OpenEnv's production-mode JSON-RPC
// route, with the tools a session there would have (tools/list). Its
// calls, which need a seat's turn, are answered where a connection holds
// one: /ws (call_tool steps, "mcp" frames) and corpsim's own /mcp.
func (s *Server) handleMCP(w http.ResponseWriter, r *http.Request) {
	// Open to all, and it answers tools/list alone: a small body. JSON-RPC
	// answers a body that is not JSON itself.
	body, ok := s.rawBody(w, r, min(maxMCPBody, s.cfg.MaxMessageBytes))
	if !ok {
		return
	}
	e := &episode{srv: s}
	out := rpcResponse{JSONRPC: jsonrpcVersion, ID: json.RawMessage("null")}
	var req rpcRequest
	switch err := json.Unmarshal(body, &req); {
	case err != nil:
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			out.Error = &rpcError{Code: rpcParseError, Message: "parse error: " + err.Error()}
		} else {
			out.Error = &rpcError{Code: rpcInvalidRequest, Message: "invalid request: " + err.Error()}
		}
	case req.Method == "tools/call", req.Method == "openenv/session/create", req.Method == "openenv/session/close":
		out.ID = rpcID(req.ID)
		out.Error = &rpcError{Code: rpcMethodNotFound, Message: fmt.Sprintf("%s is not served on this route: tool calls answer a seat's turn, "+
			"on /openenv/ws (call_tool steps or mcp frames) or on corpsim's MCP server at /mcp (a seat's token)", req.Method)}
	default:
		f := e.mcp(r.Context(), body) // validates the request (counting a refusal); answers tools/list
		writeJSON(w, http.StatusOK, f.(mcpFrame).Data)
		return
	}
	s.rec.Failed(CodeValidation)
	writeJSON(w, http.StatusOK, out)
}

// body reads a stateless request's body within MaxMessageBytes.
func (s *Server) body(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	b, ok := s.rawBody(w, r, s.cfg.MaxMessageBytes)
	if ok && len(bytes.TrimSpace(b)) > 0 && !json.Valid(b) {
		s.fail(w, errorf(CodeInvalidJSON, http.StatusBadRequest, "the request body is not JSON"))
		return nil, false
	}
	return b, ok
}

// rawBody reads a request's body within limit bytes, whatever it holds.
func (s *Server) rawBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			w.Header().Set("Connection", "close")
			s.fail(w, errorf(CodeValidation, http.StatusRequestEntityTooLarge, "request body is over this route's limit of %d bytes", limit))
		} else {
			s.fail(w, errorf(CodeValidation, http.StatusBadRequest, "reading the request body: %v", err))
		}
		return nil, false
	}
	return b, true
}

func (s *Server) fail(w http.ResponseWriter, err error) {
	var pe *protoError
	if !errors.As(err, &pe) {
		pe = &protoError{code: CodeExecution, status: http.StatusBadGateway, msg: err.Error()}
	}
	s.rec.Failed(pe.code)
	status := pe.status
	if status == 0 {
		status = http.StatusBadRequest
	}
	writeDetail(w, status, pe.code, "%s", pe.msg)
}

// pendingRewards holds, per stateless session, the reward recorded before
// its first observation until its first step reports it, and the steps
// answered (GET /openenv/state). An entry is kept for an hour after its
// session's last reset or step.
type pendingRewards struct {
	mu    sync.Mutex
	m     map[string]pendingReward
	swept time.Time // the stale entries were last dropped then
}

type pendingReward struct {
	reward float64
	steps  int
	at     time.Time
}

// touch returns id's entry, made or kept for another hour, after dropping
// the stale ones.
func (p *pendingRewards) touch(id string) *pendingReward {
	if p.m == nil {
		p.m = map[string]pendingReward{}
	}
	now := time.Now()
	if now.Sub(p.swept) > time.Minute {
		p.swept = now
		for k, v := range p.m { // order: each stale entry is deleted on its own; nothing else happens
			if now.Sub(v.at) > time.Hour {
				delete(p.m, k)
			}
		}
	}
	v := p.m[id]
	v.at = now
	p.m[id] = v
	return &v
}

func (p *pendingRewards) put(id string, r float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	v := p.touch(id)
	v.reward = r
	p.m[id] = *v
}

// take returns the reward id's session left for its first step, and
// counts the step.
func (p *pendingRewards) take(id string) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	v := p.touch(id)
	r := v.reward
	v.reward = 0
	v.steps++
	p.m[id] = *v
	return r
}

// steps returns the steps answered for id's session on the stateless route.
func (p *pendingRewards) steps(id string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if v, ok := p.m[id]; ok && time.Since(v.at) <= time.Hour {
		return v.steps
	}
	return 0
}

// ---- responses -----------------------------------------------------------

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"detail":"response does not encode"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

func writeRaw(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// writeDetail answers an error as FastAPI does ({"detail": …}), with the
// protocol's code when there is one.
func writeDetail(w http.ResponseWriter, status int, code, format string, args ...any) {
	body := struct {
		Detail string `json:"detail"`
		Code   string `json:"code,omitempty"`
	}{fmt.Sprintf(format, args...), code}
	writeJSON(w, status, body)
}

// version is the corpsim module's version, as the binary was built.
func version() *string {
	bi, ok := debug.ReadBuildInfo()
	if !ok || bi.Main.Version == "" || bi.Main.Version == "(devel)" {
		return nil
	}
	v := bi.Main.Version
	return &v
}
