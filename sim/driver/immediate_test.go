package driver_test

import (
	"context"
	"fmt"
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

// The turns of seats that answer at once are asked within a batch: a
// session played only by them is persisted in a few large batches, cut at
// the checkpoints, where seats asked the usual way need one batch durable
// before every round of turns; the log is the same. With a Gate (a served
// session, which can be paused before any turn) every round is still a
// batch of its own.
func TestImmediateSeatsShareBatches(t *testing.T) {
	w, _ := genWorld(t)
	all := newGreedySeats()
	for _, m := range seatsOf(w) {
		all.immediate[m] = true
	}
	batched := &appendsOn{Log: memlog.New()}
	got := mustRunSeats(t, all, batched)
	usual := &appendsOn{Log: memlog.New()}
	sameEvents(t, got, mustRunSeats(t, newGreedySeats(), usual), "with every member asked within a batch")
	gated := &appendsOn{Log: memlog.New()}
	gates := 0
	sameEvents(t, got, playGen(t, "s-immediate", driver.Config{Log: gated, Seats: all, Gate: func(context.Context) error { gates++; return nil }}, nil), "gated")
	t.Logf("%d events: %d appends asked within batches, %d asked the usual way, %d gated (%d gates)", len(got), len(batched.on), len(usual.on), len(gated.on), gates)
	if len(usual.on) < 10 || len(batched.on)*5 > len(usual.on) {
		t.Fatalf("%d appends with the turns asked within batches, %d the usual way; want at most a fifth", len(batched.on), len(usual.on))
	}
	if len(gated.on) != len(usual.on) {
		t.Fatalf("a gated session made %d appends; want one per round, %d, as the usual way", len(gated.on), len(usual.on))
	}
	// A Replica's copy comes before anything is shown to an agent, as
	// the Gate's asking does: every round a batch of its own too.
	replicated := &appendsOn{Log: memlog.New()}
	sameEvents(t, got, playGen(t, "s-immediate", driver.Config{Log: replicated, Seats: all, Replica: &slowReplica{}}, nil), "replicated")
	if len(replicated.on) != len(usual.on) {
		t.Fatalf("a replicated session made %d appends; want one per round, %d, as the usual way", len(replicated.on), len(usual.on))
	}
}

// Begun runs before any member is asked, those asked within a batch too.
func TestBegunRunsBeforeAnyTurn(t *testing.T) {
	w, _ := genWorld(t)
	all := newGreedySeats()
	for _, m := range seatsOf(w) {
		all.immediate[m] = true
	}
	asked := -1
	begun := func(context.Context) error {
		all.mu.Lock()
		defer all.mu.Unlock()
		asked = 0
		for _, turns := range all.asked {
			asked += len(turns)
		}
		return nil
	}
	playGen(t, "s-begun", driver.Config{Log: memlog.New(), Seats: all, Begun: begun}, nil)
	if asked != 0 {
		t.Fatalf("Begun ran after %d turns were asked (-1: never); want before any", asked)
	}
}

// A batch of turns asked within it ends where a checkpoint falls due: a
// session played by seats that answer at once keeps every checkpoint of
// one asked the usual way, each within a round of its place.
func TestImmediateSeatsKeepTheirCheckpoints(t *testing.T) {
	w, _ := genWorld(t)
	all := newGreedySeats()
	for _, m := range seatsOf(w) {
		all.immediate[m] = true
	}
	const every = 200
	checkpoints := func(seats driver.Seats) []uint64 {
		log := memlog.New()
		playGen(t, "s-cp", driver.Config{Log: log, Seats: seats, CheckpointEvery: every}, nil)
		cps, err := log.Checkpoints(context.Background(), "s-cp")
		if err != nil {
			t.Fatal(err)
		}
		var at []uint64
		for _, cp := range cps {
			at = append(at, cp.Seq)
		}
		return at
	}
	batched, usual := checkpoints(all), checkpoints(newGreedySeats())
	t.Logf("checkpoints asked within batches %v, the usual way %v", batched, usual)
	if len(batched) != len(usual) || len(usual) < 5 {
		t.Fatalf("checkpoints at %v asked within batches, at %v the usual way; want as many, at least 5", batched, usual)
	}
	for i, at := range batched {
		if at/every != usual[i]/every || at > usual[i] {
			t.Errorf("checkpoint %d at %d asked within batches, at %d the usual way: want it in the same interval of %d, no later", i, at, usual[i], every)
		}
	}
}

// A gated session whose Gate says when it is Open (a served one, which an
// operator can pause) asks the seats that answer at once within a batch
// while it is open, as a session with no Gate does, and the same log
// results. Once the gate closes (a pause), no turn is asked before
// everything made so far is durable and the Gate has let the session go
// on; then it batches again.
func TestOpenGateSharesBatches(t *testing.T) {
	w, _ := genWorld(t)
	all := newGreedySeats()
	for _, m := range seatsOf(w) {
		all.immediate[m] = true
	}
	asked := func() int {
		all.mu.Lock()
		defer all.mu.Unlock()
		n := 0
		for _, turns := range all.asked {
			n += len(turns)
		}
		return n
	}
	usual := &appendsOn{Log: memlog.New()}
	want := mustRunSeats(t, newGreedySeats(), usual)
	all.asked = map[string][]string{}

	log := &appendsOn{Log: memlog.New()}
	const pauseAt = 60 // Open says no once, when this many turns were asked
	var (
		opens, gates   int
		closedAt       = -1 // turns asked when Open said no
		gatedAt        = -1 // turns asked when the Gate ran after it
		durableAtGate  uint64
		turnsAtGate    int
		pausedGateSeen bool
	)
	open := func() bool {
		opens++
		if closedAt < 0 && asked() >= pauseAt {
			closedAt = asked()
			return false
		}
		return true
	}
	gate := func(ctx context.Context) error {
		gates++
		if closedAt >= 0 && !pausedGateSeen {
			pausedGateSeen = true
			gatedAt = asked()
			last, err := log.LastSeq(ctx, "s-immediate")
			if err != nil {
				return err
			}
			durableAtGate = last
			for e, err := range log.Read(ctx, "s-immediate", 1) {
				if err != nil {
					return err
				}
				if e.Type == "turn" {
					turnsAtGate++
				}
			}
		}
		return nil
	}
	got := playGen(t, "s-immediate", driver.Config{Log: log, Seats: all, Gate: gate, Open: open}, nil)
	sameEvents(t, got, want, "gated with an open gate")
	t.Logf("%d events: %d appends with an open gate (%d gates, %d asked whether open), %d asked the usual way; closed at %d turns, gated at %d, %d turns durable at seq %d",
		len(got), len(log.on), gates, opens, len(usual.on), closedAt, gatedAt, turnsAtGate, durableAtGate)
	if len(log.on)*4 > len(usual.on) {
		t.Fatalf("%d appends with an open gate, %d the usual way; want at most a quarter", len(log.on), len(usual.on))
	}
	if !pausedGateSeen {
		t.Fatal("the Gate never ran after Open said no")
	}
	if gatedAt != closedAt {
		t.Fatalf("Open said no after %d turns, but %d were asked before the Gate ran", closedAt, gatedAt)
	}
	if turnsAtGate != closedAt {
		t.Fatalf("when the Gate ran %d turns were asked, %d durable (to seq %d): a paused session shows everything it made", closedAt, turnsAtGate, durableAtGate)
	}
	if asked() <= closedAt+10 {
		t.Fatalf("%d turns asked in all, %d before the pause: the session did not go on", asked(), closedAt)
	}
}

// pausingSeats is greedySeats whose immediate members pause the session
// (as an operator might, after any round): until the Gate runs again, no
// round may be asked. It records every turn of a member outside the
// process asked while paused, in a round after the one that paused.
type pausingSeats struct {
	*greedySeats
	pmu       sync.Mutex
	paused    bool
	pausedAt  int64 // simulated time of the round that paused
	violation []string
}

func (s *pausingSeats) Ask(ctx context.Context, session, member string, obs org.Observation) (sim.Answer, error) {
	s.pmu.Lock()
	if s.immediate[member] {
		s.paused, s.pausedAt = true, int64(obs.Time)
	} else if s.paused && int64(obs.Time) != s.pausedAt {
		s.violation = append(s.violation, fmt.Sprintf("%s at %d (paused at %d)", member, obs.Time, s.pausedAt))
	}
	s.pmu.Unlock()
	return s.greedySeats.Ask(ctx, session, member, obs)
}

// A round of a seat outside the process that comes after rounds asked
// within a batch waits for the Gate as any round did before: a session
// paused in between asks nobody until it is let go on.
func TestGateRunsBeforeARoundOutsideAfterBatchedRounds(t *testing.T) {
	w, _ := genWorld(t)
	s := &pausingSeats{greedySeats: newGreedySeats()}
	members := seatsOf(w)
	for i, m := range members {
		s.immediate[m] = i%4 != 0
	}
	open := func() bool {
		s.pmu.Lock()
		defer s.pmu.Unlock()
		return !s.paused
	}
	gates := 0
	gate := func(context.Context) error {
		s.pmu.Lock()
		defer s.pmu.Unlock()
		gates++
		s.paused = false
		return nil
	}
	got := playGen(t, "s-immediate", driver.Config{Log: memlog.New(), Seats: s, Gate: gate, Open: open}, nil)
	sameEvents(t, got, mustRunSeats(t, newGreedySeats(), memlog.New()), "paused after every round")
	outside := 0
	for m, turns := range s.asked {
		if !s.immediate[m] {
			outside += len(turns)
		}
	}
	t.Logf("%d events, %d gates, %d turns of members outside the process", len(got), gates, outside)
	if outside < 20 {
		t.Fatalf("members outside the process were asked %d times; want a session that asks them often", outside)
	}
	if len(s.violation) > 0 {
		t.Fatalf("%d turns outside the process asked while paused, before the Gate ran: %v", len(s.violation), s.violation)
	}
}
