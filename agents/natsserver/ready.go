package natsserver

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// startLog is the NATS server's logger while it starts: it keeps the
// first fatal error (its port taken, say), which the server reports only
// through its logger before giving up on accepting clients.
type startLog struct {
	mu    sync.Mutex
	fatal string
}

func (l *startLog) Fatalf(format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fatal == "" {
		l.fatal = fmt.Sprintf(format, v...)
	}
}

func (l *startLog) failed() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fatal
}

func (*startLog) Noticef(string, ...any) {}
func (*startLog) Warnf(string, ...any)   {}
func (*startLog) Errorf(string, ...any)  {}
func (*startLog) Debugf(string, ...any)  {}
func (*startLog) Tracef(string, ...any)  {}

// startServer starts ns and waits up to ready for it to accept clients,
// returning at once, with the server's own reason, when it says it cannot
// (a port in use: "listen tcp 127.0.0.1:4222: bind: address already in
// use"). It shuts ns down on failure. what names the server in the error.
// l stays the server's logger, keeping any later fatal error (Server.Open's).
func startServer(ns *server.Server, l *startLog, ready time.Duration, what string) error {
	ns.SetLoggerV2(l, false, false, false)
	ns.Start()
	deadline := time.Now().Add(ready)
	for !ns.ReadyForConnections(50 * time.Millisecond) {
		if msg := l.failed(); msg != "" {
			ns.Shutdown()
			return fmt.Errorf("natsserver: %s did not start: %s", what, msg)
		}
		if time.Now().After(deadline) {
			ns.Shutdown()
			return errors.New("natsserver: " + what + " did not start")
		}
	}
	return nil
}
