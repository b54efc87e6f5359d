package service

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents/natsbus"
	"github.com/corpsim/corpsim/agents/proto"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/sim/driver"
)

// A session that panics (here its gate, after a few steps) is recorded
// failed with its last durable seq; the service and its other sessions go
// on, and a session created afterwards runs to its end.
func TestPanickingSessionFailsAlone(t *testing.T) {
	bus, err := natsbus.Start(natsbus.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Shutdown()
	log := memlog.New()
	var mu sync.Mutex
	poisoned := map[string]bool{}
	steps := map[string]int{}
	hooks := Hooks{
		Starting: func(_ context.Context, l Launched) error {
			mu.Lock()
			defer mu.Unlock()
			poisoned[l.Meta.ID] = l.Meta.Seed == 13
			return nil
		},
		Gate: func(_ context.Context, id string) error {
			mu.Lock()
			steps[id]++
			bad := poisoned[id] && steps[id] > 20
			mu.Unlock()
			if bad {
				panic("a defect in session " + id)
			}
			return nil
		},
	}
	svc, err := New(Config{Log: log, Bus: bus, Logger: hclog.NewNullLogger(), Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	create := func(seed uint64) string {
		r, err := svc.Create(ctx, proto.CreateRequest{World: "support-desk", Seed: seed, Agents: "greedy"})
		if err != nil {
			t.Fatal(err)
		}
		return r.Session
	}
	bad, good := create(13), create(14)
	if _, err := svc.Wait(ctx, bad); !errors.Is(err, ErrPanicked) {
		t.Fatalf("the panicking session ended with %v, want ErrPanicked", err)
	}
	meta, err := log.Session(ctx, bad)
	if err != nil {
		t.Fatal(err)
	}
	last, _ := log.LastSeq(ctx, bad)
	if meta.Status != events.StatusFailed || meta.LastSeq != last || last == 0 {
		t.Fatalf("the panicking session is recorded %s at seq %d; the log holds %d events", meta.Status, meta.LastSeq, last)
	}
	for _, id := range []string{good, create(15)} {
		m, err := svc.Wait(ctx, id)
		if err != nil || m.Status != events.StatusFinished {
			t.Fatalf("session %s: %s, %v; want finished", id, m.Status, err)
		}
		if r := driver.Verify(ctx, log, m); !r.OK {
			t.Fatalf("session %s does not verify: %v", id, r.Problems)
		}
	}
}
