package server

import (
	"context"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
)

// TestDeleteWithForksPassesAHeldFork: a delete with its forks waits for
// forks still finishing here, but not for a fork of another session that
// is held for its start (its log says interrupted until it runs): with a
// caller's deadline of half the wait, the delete is done, not timed out.
func TestDeleteWithForksPassesAHeldFork(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	svc := mustServiceWith(t, Config{Log: memlog.New(), Bus: mustBus(t)})
	mk := func(req wire.CreateRequest) string {
		t.Helper()
		r, err := svc.Create(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return r.Session
	}
	finish := func(id string) {
		t.Helper()
		if m, err := svc.Wait(ctx, id); err != nil || m.Status != events.StatusFinished {
			t.Fatalf("session %s: %s, %v", id, m.Status, err)
		}
	}
	p := mk(wire.CreateRequest{World: "meetings", Seed: 1, Agents: "greedy"})
	finish(p)
	held := mk(wire.CreateRequest{Parent: p, ForkSeq: 1, Agents: "greedy", Wait: true})
	q := mk(wire.CreateRequest{World: "meetings", Seed: 2, Agents: "greedy"})
	finish(q)
	dctx, dcancel := context.WithTimeout(ctx, endingWait/2)
	defer dcancel()
	done, err := svc.Delete(dctx, []string{q}, true)
	if err != nil || len(done) != 1 || done[0].Session != q {
		t.Fatalf("delete of %s with its forks, %s held for its start: %v, %v; want %s deleted", q, held, done, err, q)
	}
}
