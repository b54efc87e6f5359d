package pebblelog_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/pebblelog"
)

func deleteMeta(id, parent string, forkSeq uint64) events.SessionMeta {
	return events.SessionMeta{ID: id, World: "startup", WorldHash: strings.Repeat("ab", 32),
		Seed: 1, Agents: map[string]string{"alice": "greedy"}, Created: "2025-01-02T03:04:05Z", Status: events.StatusRunning,
		Parent: parent, ForkSeq: forkSeq}
}

// A session deleted and created again under its ID, while readers ask for
// it all along, is the new session: no reader caches the deleted one's
// fork point between the delete and the create.
func TestDeleteRecreateWhileRead(t *testing.T) {
	l := mustOpen(t, t.TempDir(), pebblelog.Options{NoSync: true})
	defer l.Close()
	ctx := context.Background()
	if err := l.CreateSession(ctx, deleteMeta("p", "", 0)); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(ctx, "p", 0, mkEvents(1, 10)); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for !stop.Load() {
				_, _ = l.LastSeq(ctx, "x")
				_, _ = l.Checkpoints(ctx, "x")
			}
		})
	}
	defer func() { stop.Store(true); wg.Wait() }()
	for i := range 1000 {
		fork := 3 + uint64(i%2)*4 // 3, 7, 3, 7, …
		if err := l.CreateSession(ctx, deleteMeta("x", "p", fork)); err != nil {
			t.Fatal(err)
		}
		if got, err := l.LastSeq(ctx, "x"); err != nil || got != fork {
			t.Fatalf("round %d: LastSeq(x) = %d, %v; want the new fork point %d", i, got, err, fork)
		}
		if _, err := l.DeleteSession(ctx, "x"); err != nil {
			t.Fatal(err)
		}
	}
}

// Damaged metadata does not block deleting: its own session is deleted
// all the same, and another session is refused only while the damaged one
// might be its fork, naming it.
func TestDeleteWithDamagedMetadata(t *testing.T) {
	l := mustOpen(t, t.TempDir(), pebblelog.Options{NoSync: true})
	defer l.Close()
	ctx := context.Background()
	for _, id := range []string{"q", "z"} {
		if err := l.CreateSession(ctx, deleteMeta(id, "", 0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Append(ctx, "z", 0, mkEvents(1, 3)); err != nil {
		t.Fatal(err)
	}
	if err := l.DB().Set(pebblelog.MetaKey("z"), []byte("garbage"), nil); err != nil {
		t.Fatal(err)
	}
	_, err := l.DeleteSession(ctx, "q")
	if !errors.Is(err, events.ErrBadSession) || !strings.Contains(err.Error(), "the metadata of z is damaged, so whether it forks from q is unknown") {
		t.Fatalf("DeleteSession(q) beside damaged z: %v", err)
	}
	if _, err := l.DeleteSession(ctx, "z"); err != nil {
		t.Fatalf("DeleteSession(z), the damaged one: %v", err)
	}
	if n, err := l.DeleteSession(ctx, "q"); err != nil || n != 0 {
		t.Fatalf("DeleteSession(q) once z is gone: %d, %v", n, err)
	}
	if all, err := l.Sessions(ctx); err != nil || len(all) != 0 {
		t.Fatalf("Sessions: %v, %v; want none", all, err)
	}
}
