package driver_test

import (
	"context"
	"errors"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/sim/driver"
)

// damagedEnd is a log whose read of a session's last seq meets damage at
// seq damaged, as a Pebble log with its last block damaged answers.
type damagedEnd struct {
	events.Log
	damaged uint64
}

func (l damagedEnd) LastSeq(_ context.Context, id string) (uint64, error) {
	return 0, &events.CorruptError{Session: id, Seq: l.damaged, Err: errors.New("block checksum mismatch")}
}

// LastWhole gives the last seq a read from the start reaches, the one
// before the damage, with the damage's error (a fork before it can still be
// made); a log whose end reads gives its last seq and no error.
func TestLastWhole(t *testing.T) {
	ctx := context.Background()
	last, err := driver.LastWhole(ctx, damagedEnd{Log: memlog.New(), damaged: 91}, "s1")
	var ce *events.CorruptError
	if last != 90 || !errors.As(err, &ce) || ce.Seq != 91 {
		t.Fatalf("LastWhole of a session damaged at 91: %d, %v; want 90 and the damage", last, err)
	}
	l := memlog.New()
	if err := l.CreateSession(ctx, events.SessionMeta{ID: "s2", World: "w", WorldHash: "h", Created: "2026-01-01T00:00:00Z", Status: events.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	if last, err := driver.LastWhole(ctx, l, "s2"); err != nil || last != 0 {
		t.Fatalf("LastWhole of a whole empty session: %d, %v", last, err)
	}
}
