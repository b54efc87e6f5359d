package driver_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/worlds"
)

// goroutineID is the calling goroutine's ID, from its stack's first line.
func goroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id := strings.TrimPrefix(string(buf), "goroutine ")
	return id[:strings.IndexByte(id, ' ')]
}

// greedySeats answers every member with the greedy agent, records on which
// goroutine each turn was asked, and says that the members immediate
// names answer at once (driver.ImmediateSeats).
type greedySeats struct {
	immediate map[string]bool
	mu        sync.Mutex
	asked     map[string][]string // member -> the goroutine of each of its turns
}

func (s *greedySeats) Immediate(member string) bool { return s.immediate[member] }

func (s *greedySeats) Ask(ctx context.Context, _, member string, obs org.Observation) (sim.Answer, error) {
	id := goroutineID()
	s.mu.Lock()
	s.asked[member] = append(s.asked[member], id)
	s.mu.Unlock()
	acts, err := (&agents.Greedy{}).Decide(ctx, obs)
	return sim.Answer{Turn: obs.Turn, Actions: acts}, err
}

// appendsOn is an events.Log that records on which goroutine each batch
// was appended.
type appendsOn struct {
	events.Log
	mu sync.Mutex
	on []string
}

func (l *appendsOn) Append(ctx context.Context, session string, last uint64, batch []events.Event) error {
	id := goroutineID()
	l.mu.Lock()
	l.on = append(l.on, id)
	l.mu.Unlock()
	return l.Log.Append(ctx, session, last, batch)
}

// mustRunSeats plays a generated world of 16 seats (all due at once at its
// start, and often together after) through a Driver run on this goroutine,
// and returns its events.
func mustRunSeats(t *testing.T, seats driver.Seats) []events.Event {
	t.Helper()
	return mustRunSeatsOn(t, seats, memlog.New())
}

func mustRunSeatsOn(t *testing.T, seats driver.Seats, log events.Log) []events.Event {
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
	conn, err := srv.Connect("driver")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const session = "s-immediate"
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: 1, Session: session})
	if err != nil {
		t.Fatal(err)
	}
	d := driver.New(driver.Config{Log: log, Conn: conn, Seats: seats})
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
	return evs
}

// The members whose seats answer at once (ImmediateSeats) are asked on the
// driver's goroutine, the others each on a worker (all but a round's last,
// which the driver asks itself), and the log is the same as when every
// member is asked the usual way.
func TestImmediateSeatsAreAskedOnTheDriversGoroutine(t *testing.T) {
	src := worlds.Generate(worlds.GenOptions{Seed: 2, Teams: 2, Members: 16, Projects: 2, Tasks: 24, Chains: 4})
	w, err := worlds.Load("gen.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	some := &greedySeats{immediate: map[string]bool{}, asked: map[string][]string{}}
	var members []string
	for i, m := range w.Members {
		if m.NPC == nil {
			members = append(members, m.ID)
			some.immediate[m.ID] = i%2 == 0
		}
	}
	here := goroutineID()
	mixed := mustRunSeats(t, some)
	elsewhere := 0
	for _, m := range members {
		if len(some.asked[m]) == 0 {
			t.Fatalf("member %s was never asked", m)
		}
		for i, id := range some.asked[m] {
			if some.immediate[m] && id != here {
				t.Errorf("member %s answers at once, but its turn %d was asked on goroutine %s, not the driver's %s", m, i+1, id, here)
			}
			if !some.immediate[m] && id != here {
				elsewhere++
			}
		}
	}
	if elsewhere == 0 {
		t.Error("no turn of a member that does not answer at once was asked on a worker")
	}

	none := &greedySeats{immediate: map[string]bool{}, asked: map[string][]string{}}
	usual := mustRunSeats(t, none)
	if len(mixed) != len(usual) {
		t.Fatalf("events: got %d with some members asked at once, %d without", len(mixed), len(usual))
	}
	for i := range mixed {
		a, _ := json.Marshal(mixed[i])
		b, _ := json.Marshal(usual[i])
		if string(a) != string(b) {
			t.Fatalf("event %d: got\n%s\nwith some members asked at once, want\n%s", i+1, a, b)
		}
	}
}

// A batch that must be durable before the turns after it are asked is
// appended on the driver's goroutine (handing it to a worker and waiting
// to be woken cost more than an in-memory append); the same log results.
func TestBatchBeforeTurnsIsAppendedOnTheDriversGoroutine(t *testing.T) {
	seats := func() *greedySeats {
		return &greedySeats{immediate: map[string]bool{}, asked: map[string][]string{}}
	}
	l := &appendsOn{Log: memlog.New()}
	here := goroutineID()
	got := mustRunSeatsOn(t, seats(), l)
	driverAppends := 0
	for _, id := range l.on {
		if id == here {
			driverAppends++
		}
	}
	if driverAppends == 0 {
		t.Fatalf("none of %d batches was appended on the driver's goroutine %s", len(l.on), here)
	}
	t.Logf("%d of %d batches appended on the driver's goroutine", driverAppends, len(l.on))
	want := mustRunSeats(t, seats())
	if len(got) != len(want) {
		t.Fatalf("events: got %d, want %d", len(got), len(want))
	}
	for i := range got {
		a, _ := json.Marshal(got[i])
		b, _ := json.Marshal(want[i])
		if string(a) != string(b) {
			t.Fatalf("event %d: got\n%s\nwant\n%s", i+1, a, b)
		}
	}
}
