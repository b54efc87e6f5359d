package server

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
)

// A session the service runs is listed while it runs even when the
// store's list, cut short by a damaged block, leaves it out (new IDs sort
// after the damage): the service lists it from its own metadata, and the
// list says it is not whole.
func TestListAddsARunningSessionTheDamageHides(t *testing.T) {
	for _, queue := range []string{"", "workers"} {
		t.Run("queue="+queue, func(t *testing.T) { testListAddsARunningSession(t, queue) })
	}
}

// testListAddsARunningSession: on a lone server (queue "") the hidden
// session is added; a cluster's worker (a queue group answers the list)
// adds nothing, as any worker answers and only one runs the session.
func testListAddsARunningSession(t *testing.T, queue string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mem := memlog.New()
	damage := &events.DamagedError{Errs: []error{&events.CorruptError{Session: "?", Err: errors.New("the sessions after X are not listed")}}}
	hidden := ""
	svc, err := New(Config{Log: mem, Bus: mustBus(t), Logger: hclog.NewNullLogger(), Queue: queue, Hooks: Hooks{
		List: func(ctx context.Context) ([]events.SessionMeta, error) {
			ms, err := mem.Sessions(ctx)
			if err != nil {
				return nil, err
			}
			return slices.DeleteFunc(ms, func(m events.SessionMeta) bool { return m.ID == hidden }), damage
		}}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	r, err := svc.Create(ctx, wire.CreateRequest{World: "support-desk-bench", Seed: 1, Agents: "greedy"})
	if err != nil {
		t.Fatal(err)
	}
	hidden = r.Session
	for last, _ := mem.LastSeq(ctx, r.Session); last == 0 && ctx.Err() == nil; last, _ = mem.LastSeq(ctx, r.Session) {
		time.Sleep(time.Millisecond)
	}
	ms, err := svc.List(ctx)
	i := slices.IndexFunc(ms, func(m events.SessionMeta) bool { return m.ID == r.Session })
	if queue != "" {
		if i >= 0 || !errors.As(err, new(*events.DamagedError)) {
			t.Fatalf("a worker's List: %+v, %v; want the hidden session left out, and the damage", ms, err)
		}
		return
	}
	if i < 0 || ms[i].Status != events.StatusRunning || ms[i].LastSeq == 0 || !errors.As(err, new(*events.DamagedError)) {
		t.Fatalf("List: %+v, %v; want the running session %s listed, and the damage", ms, err, r.Session)
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
			mem := memlog.New()
			hidden := ""
			svc, err := New(Config{Log: mem, Bus: mustBus(t), Logger: hclog.NewNullLogger(), Queue: queue, Hooks: Hooks{
				List: func(ctx context.Context) ([]events.SessionMeta, error) {
					ms, err := mem.Sessions(ctx)
					if err != nil {
						return nil, err
					}
					return slices.DeleteFunc(ms, func(m events.SessionMeta) bool { return m.ID == hidden }),
						&events.DamagedError{Errs: []error{&events.CorruptError{Session: hidden, Err: errors.New("checksum mismatch")}}}
				}}})
			if err != nil {
				t.Fatal(err)
			}
			defer svc.Close()
			r, err := svc.Create(ctx, wire.CreateRequest{World: "startup", Seed: 1, Agents: "greedy"})
			if err != nil {
				t.Fatal(err)
			}
			hidden = r.Session
			if _, err := svc.Wait(ctx, r.Session); err != nil {
				t.Fatal(err)
			}
			ms, err := svc.List(ctx)
			listed := slices.ContainsFunc(ms, func(m events.SessionMeta) bool { return m.ID == r.Session && m.Status == events.StatusFinished })
			if listed != (queue == "") || !errors.As(err, new(*events.DamagedError)) {
				t.Fatalf("queue %q: the ended session listed %v (%+v, %v); want it listed only by a lone server", queue, listed, ms, err)
			}
		})
	}
}
