package driver

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/events"
)

// ErrPanicked is the error of a session that panicked (see Guard).
var ErrPanicked = errors.New("the session panicked")

// Guard runs a session and turns a panic in it (a defect in the engine, a
// hook or an agent host) into the session's failure, recorded in l with
// the reason and its last durable seq (recordFailed), rather than the end
// of the process and its other sessions with the session left running.
// The error wraps ErrPanicked.
func Guard(logger hclog.Logger, l events.Log, meta events.SessionMeta, run func() (events.SessionMeta, error)) (m events.SessionMeta, err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		err = fmt.Errorf("%w: %v", ErrPanicked, r)
		logger.Error("session panicked; recorded failed", "panic", r, "stack", string(debug.Stack()))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		var uerr error
		if m, uerr = recordFailed(ctx, l, meta, fmt.Sprintf("the session panicked: %v", r)); uerr != nil {
			logger.Error("cannot record the session failed", "error", uerr)
			err = fmt.Errorf("%w; and it cannot be recorded failed: %v", err, uerr)
		}
	}()
	return run()
}

// recordFailed records session meta in l as failed for reason, with the
// last seq its log holds, and returns what it recorded. A session that
// failed before its first batch was stored (not in l yet) is recorded
// failed and empty, so that every reader lists it and says why. Guard
// calls it when the session panicked (a defect in the engine, a hook or
// an agent): neither a restart nor another worker should run it again
// into the same panic.
func recordFailed(ctx context.Context, l events.Log, meta events.SessionMeta, reason string) (events.SessionMeta, error) {
	m := meta
	if stored, err := l.Session(ctx, meta.ID); err == nil {
		m = stored
	}
	if last, err := l.LastSeq(ctx, meta.ID); err == nil {
		m.LastSeq = last
	}
	m.Status, m.Reason = events.StatusFailed, reason
	err := l.UpdateSession(ctx, m)
	if errors.Is(err, events.ErrNoSession) {
		m.LastSeq = 0
		err = l.CreateSession(ctx, m)
	}
	return m, err
}
