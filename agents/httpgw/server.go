package httpgw

import (
	"errors"
	"fmt"
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
	// 503 and closed, so that idle or slow clients cannot use up the
	// process's file descriptors. 0: DefaultMaxConns.
	MaxConns       int
	MaxHeaderBytes int          // 0: 64 KiB
	Logger         hclog.Logger // nil: silent
}

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
	if o.Logger == nil {
		o.Logger = hclog.NewNullLogger()
	}
	return o
}

// Validate reports a negative option.
func (o ServerOptions) Validate() error {
	if o.ReadHeaderTimeout < 0 || o.ReadTimeout < 0 || o.WriteTimeout < 0 || o.IdleTimeout < 0 || o.MaxConns < 0 || o.MaxHeaderBytes < 0 {
		return errors.New("httpgw: server timeouts and limits may not be negative")
	}
	return nil
}

// NewServer is an http.Server for h with every timeout of o set (the
// standard library's zero values wait forever).
func NewServer(h http.Handler, o ServerOptions) *http.Server {
	o = o.withDefaults()
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: o.ReadHeaderTimeout,
		ReadTimeout:       o.ReadTimeout,
		WriteTimeout:      o.WriteTimeout,
		IdleTimeout:       o.IdleTimeout,
		MaxHeaderBytes:    o.MaxHeaderBytes,
		ErrorLog:          o.Logger.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
	}
}

// LimitListener returns a listener that holds at most max connections open
// (0: DefaultMaxConns). A connection beyond that is answered at once with
// "503 Service Unavailable" and closed, rather than queued, so a client
// learns why; connections that close free their place.
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

	mu      sync.Mutex
	open    int
	refused uint64
}

// Accept returns the next connection within the limit; those beyond it are
// refused here, each with a bounded write.
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
			l.mu.Unlock()
			if n == 1 || n%1000 == 0 {
				l.logger.Warn("HTTP connection refused: too many open", "limit", l.max, "refused", n)
			}
			go refuse(c, l.max)
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

func refuse(c net.Conn, max int) {
	body := fmt.Sprintf(`{"error":"the server holds its limit of %d connections; try again later"}`+"\n", max)
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\nRetry-After: 1\r\n\r\n%s", len(body), body)
	_ = c.Close()
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
