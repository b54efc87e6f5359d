package driver_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

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

// genWorld is the generated world these tests play: 16 seats in two
// teams, all due at once at its start and often together after.
func genWorld(t *testing.T) (*worlds.World, []byte) {
	t.Helper()
	src := worlds.Generate(worlds.GenOptions{Seed: 2, Teams: 2, Members: 16, Projects: 2, Tasks: 24, Chains: 4})
	w, err := worlds.Load("gen.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	return w, src
}

// seatsOf returns the members of w that are not NPCs: its seats.
func seatsOf(w *worlds.World) []string {
	var out []string
	for _, m := range w.Members {
		if m.NPC == nil {
			out = append(out, m.ID)
		}
	}
	return out
}

// playGen plays genWorld as session through a Driver run on this
// goroutine, made with cfg and an embedded bus (cfg.Conn), and returns
// the events of cfg.Log. host, if not nil, is given a connection of its
// own to that bus before the run (to serve seats on it), and returns what
// stops it.
func playGen(t *testing.T, session string, cfg driver.Config, host func(*nats.Conn) func()) []events.Event {
	t.Helper()
	w, src := genWorld(t)
	srv, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	if host != nil {
		hostConn, err := srv.Connect("host")
		if err != nil {
			t.Fatal(err)
		}
		defer hostConn.Close()
		defer host(hostConn)()
	}
	conn, err := srv.Connect("driver")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: 1, Session: session})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Conn = conn
	d := driver.New(cfg)
	meta := events.SessionMeta{ID: session, World: w.Name, WorldHash: w.Hash, Seed: 1}
	if _, err := d.Run(context.Background(), meta, e); err != nil {
		t.Fatal(err)
	}
	var evs []events.Event
	for ev, err := range cfg.Log.Read(context.Background(), session, 1) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// sameEvents fails t unless got and want are the same events, saying how
// got was made (what).
func sameEvents(t *testing.T, got, want []events.Event, what string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("events: got %d %s, want %d", len(got), what, len(want))
	}
	for i := range got {
		a, _ := json.Marshal(got[i])
		b, _ := json.Marshal(want[i])
		if string(a) != string(b) {
			t.Fatalf("event %d: got\n%s\n%s, want\n%s", i+1, a, what, b)
		}
	}
}

// mustRun plays genWorld through a Driver over an embedded bus with
// greedy seats, maxInFlight turn requests at most, and returns its events
// and the most turns that were in the agents at once.
func mustRun(t *testing.T, maxInFlight int) ([]events.Event, int, int) {
	t.Helper()
	const session = "s-inflight"
	w, _ := genWorld(t)
	c := &counting{}
	seats := map[string]agents.Agent{}
	for _, m := range seatsOf(w) {
		seats[m] = c.seat()
	}
	serve := func(hostConn *nats.Conn) func() {
		host, err := natshost.Serve(hostConn, session, seats, natshost.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return host.Close
	}
	evs := playGen(t, session, driver.Config{Log: memlog.New(), MaxInFlight: maxInFlight}, serve)
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
	sameEvents(t, bounded, free, "with MaxInFlight 3")
}
