package driver_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/natshost"
	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/worlds"
)

// counting is a greedy agent that counts the turns its seats are in at
// once (all seats share one counting), staying in each a little so that
// requests sent together overlap.
type counting struct {
	mu       sync.Mutex
	now, max int
	turns    int
}

func (c *counting) seat() agents.Agent { return seat{c} }

type seat struct{ c *counting }

func (s seat) Decide(ctx context.Context, o org.Observation) ([]org.Action, error) {
	s.c.mu.Lock()
	s.c.now++
	s.c.turns++
	s.c.max = max(s.c.max, s.c.now)
	s.c.mu.Unlock()
	time.Sleep(time.Millisecond)
	s.c.mu.Lock()
	s.c.now--
	s.c.mu.Unlock()
	return (&agents.Greedy{}).Decide(ctx, o)
}

// mustRun plays a generated world through a Driver over an embedded bus
// with greedy seats, maxInFlight turn requests at most, and returns its
// events and the most turns that were in the agents at once.
func mustRun(t *testing.T, maxInFlight int) ([]events.Event, int, int) {
	t.Helper()
	src := worlds.Generate(worlds.GenOptions{Seed: 2, Teams: 2, Members: 16, Projects: 2, Tasks: 24, Chains: 4})
	w, err := worlds.Load("gen.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	hostConn, err := srv.Connect("host")
	if err != nil {
		t.Fatal(err)
	}
	defer hostConn.Close()
	conn, err := srv.Connect("driver")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const session = "s-inflight"
	c := &counting{}
	seats := map[string]agents.Agent{}
	for _, m := range w.Members {
		if m.NPC == nil {
			seats[m.ID] = c.seat()
		}
	}
	host, err := natshost.Serve(hostConn, session, seats, natshost.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: 1, Session: session})
	if err != nil {
		t.Fatal(err)
	}
	log := memlog.New()
	d := driver.New(driver.Config{Log: log, Conn: conn, MaxInFlight: maxInFlight})
	meta := events.SessionMeta{ID: session, World: w.Name, WorldHash: w.Hash, Seed: 1}
	if _, err := d.Run(context.Background(), meta, e); err != nil {
		t.Fatal(err)
	}
	var evs []events.Event
	for ev, err := range log.Read(context.Background(), session, 1) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs, c.max, c.turns
}

// MaxInFlight bounds the turn requests out at once, and changes nothing
// in the log: the same session with the default bound (all 16 seats asked
// at once at the start) has the same events.
func TestMaxInFlightBoundsRequestsNotTheLog(t *testing.T) {
	bounded, most, turns := mustRun(t, 3)
	if most > 3 {
		t.Errorf("turns in the agents at once: got %d, want at most 3", most)
	}
	if turns < 16 {
		t.Fatalf("turns: got %d, want at least the 16 seats' first", turns)
	}
	free, mostFree, _ := mustRun(t, 0)
	if mostFree <= 3 {
		t.Logf("with the default bound at most %d turns overlapped", mostFree)
	}
	if len(bounded) != len(free) {
		t.Fatalf("events: got %d with MaxInFlight 3, %d with the default", len(bounded), len(free))
	}
	for i := range bounded {
		a, _ := json.Marshal(bounded[i])
		b, _ := json.Marshal(free[i])
		if string(a) != string(b) {
			t.Fatalf("event %d: got\n%s\nwith MaxInFlight 3, want\n%s", i+1, a, b)
		}
	}
}
