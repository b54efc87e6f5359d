package server

import (
	"context"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
)

// The service keeps the records of the latest KeepEnded sessions to end
// and forgets the earlier ones (their logs say how they ended), letting go
// of the worlds of all that ended: a server that runs sessions for weeks
// does not grow by every session it ran.
func TestServiceKeepsTheLatestEnded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	svc := mustServiceWith(t, Config{Log: memlog.New(), Bus: mustBus(t), KeepEnded: 3})
	var ids []string
	for i := range 8 {
		r, err := svc.Create(ctx, wire.CreateRequest{World: "meetings", Seed: uint64(i + 1), Agents: "greedy"})
		if err != nil {
			t.Fatal(err)
		}
		if m, err := svc.Wait(ctx, r.Session); err != nil || m.Status != events.StatusFinished {
			t.Fatalf("session %d: %s, %v", i, m.Status, err)
		}
		ids = append(ids, r.Session)
	}
	// The last session's goroutine may still be finishing: wait for it.
	deadline := time.Now().Add(30 * time.Second)
	for {
		svc.mu.Lock()
		n := len(svc.sessions)
		svc.mu.Unlock()
		if n <= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	svc.mu.Lock()
	n, kept := len(svc.sessions), len(svc.ended)
	for _, ss := range svc.sessions {
		if ss.world != nil {
			t.Errorf("ended session %s still holds its world", ss.id)
		}
	}
	svc.mu.Unlock()
	if n != 3 || kept != 3 {
		t.Fatalf("the service holds %d sessions (%d ended kept) after 8 ended; want the latest 3", n, kept)
	}
	if r := svc.Status(ids[0]); r.Error != "no such session" {
		t.Errorf("the first session's status: %+v; want it forgotten", r)
	}
	if r := svc.Status(ids[7]); r.Error != "" || r.Status != string(events.StatusFinished) {
		t.Errorf("the last session's status: %+v; want finished", r)
	}
	// The forgotten sessions are still listed, from the log.
	metas, err := svc.List(ctx)
	if err != nil || len(metas) != 8 {
		t.Fatalf("listing: %d sessions, %v; want all 8", len(metas), err)
	}
}
