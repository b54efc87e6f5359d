package simtest

import (
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// Reach asks a listening address a question at the first moment a test
// finds it reachable: Probe dials Addr and, the first time the dial
// succeeds, calls Ask and keeps its error. Logger probes before every line
// a process under test logs, so that the question lands between two steps
// of its start (the port open, and what clients must find there not yet
// subscribed) without a retry or a sleep. Reach is safe for concurrent
// use; a Probe waits for a running Ask.
type Reach struct {
	Addr string
	Ask  func() error

	mu    sync.Mutex
	asked bool
	err   error
}

// Probe asks the question if Addr takes a connection and it was not asked yet.
func (r *Reach) Probe() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.asked {
		return
	}
	c, err := net.DialTimeout("tcp", r.Addr, time.Second)
	if err != nil {
		return // not reachable yet
	}
	c.Close()
	r.asked, r.err = true, r.Ask()
}

// Asked reports whether the question was asked, and its error.
func (r *Reach) Asked() (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.asked, r.err
}

// Logger is inner with a Probe before each line logged through it, at
// any level, whether inner writes it or not (not through the loggers its
// With or Named make).
func (r *Reach) Logger(inner hclog.Logger) hclog.Logger {
	return reachLogger{Logger: inner, r: r}
}

type reachLogger struct {
	hclog.Logger
	r *Reach
}

func (l reachLogger) Log(level hclog.Level, msg string, args ...any) {
	l.r.Probe()
	l.Logger.Log(level, msg, args...)
}

func (l reachLogger) Trace(msg string, args ...any) { l.r.Probe(); l.Logger.Trace(msg, args...) }
func (l reachLogger) Debug(msg string, args ...any) { l.r.Probe(); l.Logger.Debug(msg, args...) }
func (l reachLogger) Info(msg string, args ...any)  { l.r.Probe(); l.Logger.Info(msg, args...) }
func (l reachLogger) Warn(msg string, args ...any)  { l.r.Probe(); l.Logger.Warn(msg, args...) }
func (l reachLogger) Error(msg string, args ...any) { l.r.Probe(); l.Logger.Error(msg, args...) }

// FreeAddr returns a loopback address whose port was free a moment ago.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestLogger is a logger at warn level whose lines go to tb.Log.
func TestLogger(tb testing.TB) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: tb.Name(), Level: hclog.Warn, Output: tbWriter{tb}})
}

// tbWriter sends what a logger writes to tb.Log, a line at a time.
type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
