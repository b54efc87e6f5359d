package driver

import (
	"context"
	"errors"

	"github.com/corpsim/corpsim/events"
)

// RecordFailed records session meta in l as failed for reason, with the
// last seq its log holds, and returns what it recorded. A session that
// failed before its first batch was stored (not in l yet) is recorded
// failed and empty, so that every reader lists it and says why. A
// session's runner calls it when the session panicked (a defect in the
// engine, a hook or an agent): neither a restart nor another worker
// should run it again into the same panic.
func RecordFailed(ctx context.Context, l events.Log, meta events.SessionMeta, reason string) (events.SessionMeta, error) {
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
