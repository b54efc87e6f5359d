package server

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
)

// hiding is a service (a lone server with queue "", else a cluster's
// worker) whose store's list leaves out, as a damaged block would, the
// session it creates with req, and says it is damaged; it returns the
// service, its log and the session.
func hiding(t *testing.T, ctx context.Context, queue string, req wire.CreateRequest) (*Service, *memlog.Log, string) {
	t.Helper()
	mem := memlog.New()
	var hidden atomic.Pointer[string]
	svc, err := New(Config{Log: mem, Bus: mustBus(t), Logger: hclog.NewNullLogger(), Queue: queue, Hooks: Hooks{
		List: func(ctx context.Context) ([]events.SessionMeta, error) {
			ms, err := mem.Sessions(ctx)
			if err != nil {
				return nil, err
			}
			id := hidden.Load()
			ms = slices.DeleteFunc(ms, func(m events.SessionMeta) bool { return id != nil && m.ID == *id })
			return ms, events.Damaged([]error{&events.CorruptError{Session: "?", Err: errors.New("the sessions after X are not listed")}})
		}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	r, err := svc.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	hidden.Store(&r.Session)
	return svc, mem, r.Session
}

// A session the service runs is listed while it runs even when the
// store's list, cut short by a damaged block, leaves it out (new IDs sort
// after the damage): a lone server lists it from its own metadata, and
// the list says it is not whole. A cluster's worker (a queue group
// answers the list) adds nothing, as any worker answers and only one runs
// the session.
func TestListAddsARunningSessionTheDamageHides(t *testing.T) {
	for _, queue := range []string{"", "workers"} {
		t.Run("queue="+queue, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			svc, mem, id := hiding(t, ctx, queue, wire.CreateRequest{World: "support-desk-bench", Seed: 1, Agents: "greedy"})
			for last, _ := mem.LastSeq(ctx, id); last == 0 && ctx.Err() == nil; last, _ = mem.LastSeq(ctx, id) {
				time.Sleep(time.Millisecond)
			}
			ms, err := svc.List(ctx)
			i := slices.IndexFunc(ms, func(m events.SessionMeta) bool { return m.ID == id })
			if queue != "" {
				if i >= 0 || !errors.As(err, new(*events.DamagedError)) {
					t.Fatalf("a worker's List: %+v, %v; want the hidden session left out, and the damage", ms, err)
				}
				return
			}
			if i < 0 || ms[i].Status != events.StatusRunning || ms[i].LastSeq == 0 || !errors.As(err, new(*events.DamagedError)) {
				t.Fatalf("List: %+v, %v; want the running session %s listed, and the damage", ms, err, id)
			}
		})
	}
}

// An ended session the damage hides: a lone server lists it as it ended;
// a worker does not, so that every worker's list is the same (only the
// one that ran it could add it).
func TestListOfAnEndedSessionTheDamageHides(t *testing.T) {
	for _, queue := range []string{"", "workers"} {
		t.Run("queue="+queue, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			svc, _, id := hiding(t, ctx, queue, wire.CreateRequest{World: "startup", Seed: 1, Agents: "greedy"})
			if _, err := svc.Wait(ctx, id); err != nil {
				t.Fatal(err)
			}
			ms, err := svc.List(ctx)
			listed := slices.ContainsFunc(ms, func(m events.SessionMeta) bool { return m.ID == id && m.Status == events.StatusFinished })
			if listed != (queue == "") || !errors.As(err, new(*events.DamagedError)) {
				t.Fatalf("queue %q: the ended session listed %v (%+v, %v); want it listed only by a lone server", queue, listed, ms, err)
			}
		})
	}
}
