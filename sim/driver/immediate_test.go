package driver_test

import (
	"context"
	"sync"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/sim/simtest"
)

// greedySeats answers every member with the greedy agent, records on which
// goroutine each turn was asked and whether it had a budget, and says that
// the members immediate names answer at once (driver.ImmediateSeats).
type greedySeats struct {
	immediate map[string]bool
	mu        sync.Mutex
	asked     map[string][]string // member -> the goroutine of each of its turns
	budgeted  map[string]int      // member -> its turns asked with a deadline
}

func newGreedySeats() *greedySeats {
	return &greedySeats{immediate: map[string]bool{}, asked: map[string][]string{}, budgeted: map[string]int{}}
}

func (s *greedySeats) Immediate(member string) bool { return s.immediate[member] }

func (s *greedySeats) Ask(ctx context.Context, _, member string, obs org.Observation) (sim.Answer, error) {
	id := simtest.GoroutineID()
	_, budget := ctx.Deadline()
	s.mu.Lock()
	s.asked[member] = append(s.asked[member], id)
	if budget {
		s.budgeted[member]++
	}
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
	id := simtest.GoroutineID()
	l.mu.Lock()
	l.on = append(l.on, id)
	l.mu.Unlock()
	return l.Log.Append(ctx, session, last, batch)
}

// mustRunSeats plays genWorld through a Driver run on this goroutine
// that asks seats, into log, and returns its events.
func mustRunSeats(t *testing.T, seats driver.Seats, log events.Log) []events.Event {
	t.Helper()
	return playGen(t, "s-immediate", driver.Config{Log: log, Seats: seats}, nil)
}

// The members whose seats answer at once (ImmediateSeats) are asked on the
// driver's goroutine, without a turn budget to time (they wait for
// nothing), the others each on a worker (all but a round's last, which the
// driver asks itself) within their budget, and the log is the same as when
// every member is asked the usual way.
func TestImmediateSeatsAreAskedOnTheDriversGoroutine(t *testing.T) {
	w, _ := genWorld(t)
	some := newGreedySeats()
	members := seatsOf(w)
	for i, m := range members {
		some.immediate[m] = i%2 == 0
	}
	here := simtest.GoroutineID()
	mixed := mustRunSeats(t, some, memlog.New())
	elsewhere := 0
	for _, m := range members {
		if len(some.asked[m]) == 0 {
			t.Fatalf("member %s was never asked", m)
		}
		want := len(some.asked[m]) // every turn within its budget
		if some.immediate[m] {
			want = 0
		}
		if some.budgeted[m] != want {
			t.Errorf("member %s (answers at once: %v): %d of its %d turns came with a budget, want %d", m, some.immediate[m], some.budgeted[m], len(some.asked[m]), want)
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

	sameEvents(t, mixed, mustRunSeats(t, newGreedySeats(), memlog.New()), "with some members asked at once")
}

// A batch that must be durable before the turns after it are asked is
// appended on the driver's goroutine (handing it to a worker and waiting
// to be woken cost more than an in-memory append); the same log results.
func TestBatchBeforeTurnsIsAppendedOnTheDriversGoroutine(t *testing.T) {
	l := &appendsOn{Log: memlog.New()}
	here := simtest.GoroutineID()
	got := mustRunSeats(t, newGreedySeats(), l)
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
	sameEvents(t, got, mustRunSeats(t, newGreedySeats(), memlog.New()), "recording each append's goroutine")
}
