package httpgw

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// ServerOptions bound what one HTTP client can hold of the server: how long
// it may take to send a request, how long a response may take to be read,
// how long an idle keep-alive connection is kept, and how many connections
// are open at once. The zero value means the defaults.
type ServerOptions struct {
	ReadHeaderTimeout time.Duration // 0: 10s
	// ReadTimeout bounds reading a whole request, body included. 0: 1m.
	ReadTimeout time.Duration
	// WriteTimeout bounds a response, from the end of the request's
	// headers: it must exceed the longest long poll (observe and events
	// wait at most 5 minutes). 0: 6m.
	WriteTimeout time.Duration
	IdleTimeout  time.Duration // 0: 1m
	// MaxConns is the most connections open at once; one more is answered
	// 503 (once its request's head is read) and closed, so that idle or
	// slow clients cannot use up the process's file descriptors. 0:
	// DefaultMaxConns.
	MaxConns       int
	MaxHeaderBytes int          // 0: 64 KiB
	Logger         hclog.Logger // nil: silent
	// BodyBudget bounds the request bodies held at once, in bytes: a
	// request whose body would take the total past it is answered "503"
	// with Retry-After before its body is read (a body is read whole
	// into memory, so a thousand connections each sending the largest
	// body took gigabytes). A body counts for its Content-Length, or for
	// MaxBodyBytes when it has none (chunked) or a larger one (the routes
	// refuse more than that). 0: DefaultBodyBudget.
	BodyBudget int64
	// MaxBodyBytes is the largest body a route takes; 0: 16 MiB.
	MaxBodyBytes int64
	// Open tells the requests of routes that anyone may send a body to,
	// with no token (NeMo Gym's), and the most bytes each route's body
	// holds (limit): their bodies are held in a budget of their own,
	// OpenBodyBudget (0: a quarter of BodyBudget), so that strangers
	// sending slow bodies there cannot hold every body of the operator's
	// and the seats' routes back, and a body of unknown length (chunked)
	// or longer than its route takes counts for the route's limit, not
	// for MaxBodyBytes. nil: none.
	Open           func(r *http.Request) (limit int64, open bool)
	OpenBodyBudget int64
}

// DefaultBodyBudget is ServerOptions.BodyBudget's default.
const DefaultBodyBudget = 256 << 20

// DefaultMaxConns is ServerOptions.MaxConns' default.
const DefaultMaxConns = 1024

func (o ServerOptions) withDefaults() ServerOptions {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.ReadHeaderTimeout, 10*time.Second)
	def(&o.ReadTimeout, time.Minute)
	def(&o.WriteTimeout, 6*time.Minute)
	def(&o.IdleTimeout, time.Minute)
	if o.MaxConns == 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.MaxHeaderBytes == 0 {
		o.MaxHeaderBytes = 64 << 10
	}
	if o.BodyBudget == 0 {
		o.BodyBudget = DefaultBodyBudget
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = 16 << 20
	}
	if o.OpenBodyBudget == 0 {
		o.OpenBodyBudget = o.BodyBudget / 4
	}
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return o
}

// Validate reports a negative option.
func (o ServerOptions) Validate() error {
	if o.ReadHeaderTimeout < 0 || o.ReadTimeout < 0 || o.WriteTimeout < 0 || o.IdleTimeout < 0 || o.MaxConns < 0 || o.MaxHeaderBytes < 0 ||
		o.BodyBudget < 0 || o.MaxBodyBytes < 0 || o.OpenBodyBudget < 0 {
		return errors.New("httpgw: server timeouts and limits may not be negative")
	}
	return nil
}

// NewServer is an http.Server for h with every timeout of o set (the
// standard library's zero values wait forever).
func NewServer(h http.Handler, o ServerOptions) *http.Server {
	o = o.withDefaults()
	return &http.Server{
		Handler:           budgeted(h, o),
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		ReadTimeout:       o.ReadTimeout,
		WriteTimeout:      o.WriteTimeout,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    o.MaxHeaderBytes,
		ErrorLog:          o.Logger.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
}

// budgeted is h behind a budget of the request bodies held at once
// (ServerOptions.BodyBudget), and another for the open routes' (Open).
func budgeted(h http.Handler, o ServerOptions) http.Handler {
	shared, open := NewBudget(o.BodyBudget), NewBudget(o.OpenBodyBudget)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			h.ServeHTTP(w, r)
			return
		}
		b, most := shared, o.MaxBodyBytes
		if o.Open != nil {
			if limit, ok := o.Open(r); ok {
				b, most = open, min(most, limit)
			}
		}
		n := r.ContentLength
		if n < 0 || n > most {
			n = most // the route reads no more
		}
		if !b.Take(n) {
			w.Header().Set("Retry-After", "1")
			writeError(w, http.StatusServiceUnavailable, "the server is reading as many request bodies as it holds at once (%d MiB); try again shortly", b.Most()>>20)
			return
		}
		defer b.Give(n)
		h.ServeHTTP(w, r)
	})
}

// Budget counts bytes that clients make the server hold at once (request
// bodies, WebSocket frames), up to a most. Safe for concurrent use.
type Budget struct {
	mu   sync.Mutex
	held int64
	most int64
}

// NewBudget is a Budget of most bytes.
func NewBudget(most int64) *Budget { return &Budget{most: most} }

// Take holds n bytes more, or reports false, holding nothing, when that
// would take the total past the most.
func (b *Budget) Take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held+n > b.most {
		return false
	}
	b.held += n
	return true
}

// Give gives back n bytes that Take held.
func (b *Budget) Give(n int64) {
	b.mu.Lock()
	b.held -= n
	b.mu.Unlock()
}

// Held is the bytes held now.
func (b *Budget) Held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held
}

// Most is the budget's size.
func (b *Budget) Most() int64 { return b.most }

// LimitListener returns a listener that holds at most max connections open
// (0: DefaultMaxConns). A connection beyond that is not queued: it is
// answered "503 Service Unavailable" with the reason and Retry-After, and
// closed (see refuse), so a client learns why; connections that close free
// their place.
func LimitListener(l net.Listener, max int, logger hclog.Logger) net.Listener {
	if max <= 0 {
		max = DefaultMaxConns
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &limitListener{Listener: l, max: max, logger: logger}
}

type limitListener struct {
	net.Listener
	max    int
	logger hclog.Logger

	mu       sync.Mutex
	open     int
	refused  uint64
	refusing int // refusals in progress (see refuse)
}

// Accept returns the next connection within the limit; those beyond it are
// refused here, each by a goroutine of its own with bounded reads and
// writes, at most maxRefusing at once (more are closed at once, unanswered).
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		if l.open >= l.max {
			l.refused++
			n := l.refused
			answer := l.refusing < maxRefusing
			if answer {
				l.refusing++
			}
			l.mu.Unlock()
			if n == 1 || n%1000 == 0 {
				l.logger.Warn("HTTP connection refused: too many open", "limit", l.max, "refused", n)
			}
			if !answer {
				_ = c.Close()
				continue
			}
			go func() {
				refuse(c, l.max)
				l.mu.Lock()
				l.refusing--
				l.mu.Unlock()
			}()
			continue
		}
		l.open++
		l.mu.Unlock()
		return &limitConn{Conn: c, l: l}, nil
	}
}

// Open is how many connections the listener holds now.
func (l *limitListener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Bounds of a refusal (see refuse).
const (
	maxRefusing   = 64              // refusals answered at once
	refuseFor     = time.Second     // to read the request's head, and again to drain the rest
	maxRefuseHead = 64 << 10        // bytes of request head read
	maxRefuseRest = 1 << 20         // bytes drained after the answer
	refuseWrite   = 2 * time.Second // to write the answer
)

// refuse answers a connection over the limit the way an HTTP client
// expects: it first reads the request's head (within refuseFor and
// maxRefuseHead bytes), since an answer that comes before the request is
// taken for a stray one (Go's client logs "Unsolicited response received
// on idle HTTP channel" and fails the request); then it writes the 503 and
// half-closes, and drains what the client still sends (a body) for a
// moment, so that closing with unread data does not reset the connection
// before the client has read the answer.
func refuse(c net.Conn, max int) {
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(refuseFor))
	buf := make([]byte, 4<<10)
	var head []byte
	for len(head) < maxRefuseHead && !bytes.Contains(head, []byte("\r\n\r\n")) {
		n, err := c.Read(buf)
		head = append(head, buf[:n]...)
		if err != nil {
			break // the client gave up, or sent no head in time: answer anyway
		}
	}
	body := fmt.Sprintf(`{"error":"the server holds its limit of %d connections; try again later"}`+"\n", max)
	_ = c.SetWriteDeadline(time.Now().Add(refuseWrite))
	if _, err := fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\nRetry-After: 1\r\n\r\n%s", len(body), body); err != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = c.SetReadDeadline(time.Now().Add(refuseFor))
	_, _ = io.CopyN(io.Discard, c, maxRefuseRest)
}

type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return err
}
