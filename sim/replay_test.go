package sim_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

// poisonScanner hands out each event in a buffer that it overwrites as
// soon as fn returns, as a Log's Scan may: anything an Apply kept of a
// borrowed payload would then read garbage.
type poisonScanner struct{ evs []events.Event }

func (p poisonScanner) Scan(_ context.Context, _ string, from uint64, fn func(*events.Event) error) error {
	var buf []byte
	for _, ev := range p.evs {
		if ev.Seq < from {
			continue
		}
		buf = append(buf[:0], ev.Payload...)
		ev.Payload = buf
		err := fn(&ev)
		for i := range buf {
			buf[i] = '#'
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// TestRebuildLog checks that a rebuild from borrowed events (RebuildLog)
// is Rebuild's: the same state, and a resumed engine that continues with
// the uninterrupted run's log, even when every payload is overwritten
// right after it was applied.
func TestRebuildLog(t *testing.T) {
	ctx := context.Background()
	full := mustEngine(t, 11)
	full.Start()
	want := drive(t, full, greedy, false, 0)
	for _, cut := range []int{1, 40, len(want) / 2, len(want)} {
		live := mustEngine(t, 11)
		live.Start()
		prefix := drive(t, live, greedy, false, cut)

		log := memlog.New()
		if err := log.CreateSession(ctx, events.SessionMeta{ID: "s", Status: events.StatusRunning}); err != nil {
			t.Fatal(err)
		}
		if err := log.Append(ctx, "s", 0, prefix); err != nil {
			t.Fatal(err)
		}
		copied, err := sim.Rebuild(log.Read(ctx, "s", 1), "s", sim.Config{})
		if err != nil {
			t.Fatalf("cut %d: Rebuild: %v", cut, err)
		}
		for name, sc := range map[string]sim.Scanner{"memlog": log, "poisoned": poisonScanner{prefix}} {
			e, err := sim.RebuildLog(ctx, sc, "s", sim.Config{})
			if err != nil {
				t.Fatalf("cut %d, %s: RebuildLog: %v", cut, name, err)
			}
			if got, want := e.StateHash(), copied.StateHash(); got != want {
				t.Fatalf("cut %d, %s: RebuildLog state hash %s, Rebuild's %s", cut, name, got, want)
			}
			e.Resume()
			rest := drive(t, e, greedy, false, 0)
			equalLogs(t, append(append([]events.Event{}, prefix...), rest...), want)
		}
	}
}

func TestRebuildLogErrors(t *testing.T) {
	ctx := context.Background()
	log := memlog.New()
	if _, err := sim.RebuildLog(ctx, log, "nope", sim.Config{}); !errors.Is(err, events.ErrNoSession) {
		t.Fatalf("RebuildLog of an unknown session: got %v, want ErrNoSession", err)
	}
	if err := log.CreateSession(ctx, events.SessionMeta{ID: "s", Status: events.StatusRunning}); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.RebuildLog(ctx, log, "s", sim.Config{}); !errors.Is(err, sim.ErrNotASession) {
		t.Fatalf("RebuildLog of an empty session: got %v, want ErrNotASession", err)
	}
}

// TestReplayKeepsOnlyTimersNotYetDue: an engine rebuilt by Apply holds the
// timers the live engine held when it made the last event, and at most
// those due at that very instant besides (which the live engine had
// already fired and the rebuilt one drops or fires when it resumes); none
// that were due earlier. A replay that kept every timer it ever set held
// all of a session's timers in memory.
func TestReplayKeepsOnlyTimersNotYetDue(t *testing.T) {
	type timers struct {
		Now    int64 `json:"now"`
		Timers []struct {
			At    int64  `json:"at"`
			Kind  int    `json:"kind"`
			ID    string `json:"id"`
			Cause uint64 `json:"cause"`
		} `json:"timers"`
	}
	decode := func(b []byte) timers {
		var tm timers
		if err := json.Unmarshal(b, &tm); err != nil {
			t.Fatal(err)
		}
		return tm
	}
	for _, limit := range []int{50, 200, 333, 0} {
		live := mustEngine(t, 5)
		live.Start()
		evs := drive(t, live, greedy, false, limit)
		re, err := sim.New(sim.Config{World: live.State().World, Seed: 5, Session: "s"})
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			if err := re.Apply(ev); err != nil {
				t.Fatal(err)
			}
		}
		want, got := decode(live.Snapshot()), decode(re.Snapshot())
		left := map[string]int{}
		for _, tm := range want.Timers {
			left[fmt.Sprint(tm)]++
		}
		for _, tm := range got.Timers {
			if left[fmt.Sprint(tm)] > 0 {
				left[fmt.Sprint(tm)]--
				continue
			}
			if tm.At != want.Now {
				t.Errorf("after %d events the rebuilt engine holds a timer due at %d (now %d) that the live one had not: %+v", len(evs), tm.At, want.Now, tm)
			}
		}
		for k, n := range left {
			if n > 0 {
				t.Errorf("after %d events the rebuilt engine lacks the live engine's timer %s", len(evs), k)
			}
		}
	}
}

// TestReplayRegradesAnOlderRubric: a log whose rewards another rubric
// recorded replays (its rewards are not held to this rubric's) and keeps
// what it recorded; a log of this rubric whose reward was altered is
// refused as a mismatch.
func TestReplayRegradesAnOlderRubric(t *testing.T) {
	live := mustEngine(t, 11)
	live.Start()
	evs := drive(t, live, greedy, false, 0)
	recode := func(rubric string, shift float64) ([]events.Event, float64) {
		out := make([]events.Event, len(evs))
		var sum float64
		n := 0
		for i, ev := range evs {
			out[i] = ev
			if ev.Type != payload.EvReward {
				continue
			}
			var r payload.Reward
			if err := json.Unmarshal(ev.Payload, &r); err != nil {
				t.Fatal(err)
			}
			r.Rubric, r.Team = rubric, r.Team+shift
			sum += r.Team
			n++
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			out[i].Payload = b
		}
		if n == 0 {
			t.Fatal("the session recorded no reward")
		}
		return out, sum
	}
	// The state keeps the sum of the rewards recorded, which the end's
	// state hash covers: an older rubric's log is consistent with its own
	// rewards, so the altered one is replayed without its end.
	old, sum := recode("rubric/0", 5)
	if last := old[len(old)-1]; last.Type != payload.EvSessionEnded {
		t.Fatalf("the last event is %s, not session.ended", last.Type)
	}
	old = old[:len(old)-1]
	e, err := sim.RebuildLog(context.Background(), poisonScanner{old}, "s", sim.Config{})
	if err != nil {
		t.Fatalf("a log of an older rubric does not replay: %v", err)
	}
	rec := e.Recorded()
	if !slices.Equal(rec.Rubrics, []string{"rubric/0"}) || math.Abs(rec.Team-sum) > 1e-6 {
		t.Fatalf("Recorded = %+v, want rubric/0 and team %g", rec, sum)
	}
	if got := e.State().Reward; math.Abs(got-sum) > 1e-6 {
		t.Fatalf("replayed state's reward %g, recorded %g", got, sum)
	}
	bad, _ := recode(policies.RubricVersion, 5)
	if _, err := sim.RebuildLog(context.Background(), poisonScanner{bad}, "s", sim.Config{}); !errors.Is(err, sim.ErrReplayMismatch) {
		t.Fatalf("an altered reward of this rubric: got %v, want ErrReplayMismatch", err)
	}
	// The team's sum kept, a point moved from one member to another.
	moved := slices.Clone(evs)
	n := 0
	for i, ev := range moved {
		var r payload.Reward
		if ev.Type != payload.EvReward || json.Unmarshal(ev.Payload, &r) != nil || len(r.Members) < 2 {
			continue
		}
		ids := slices.Sorted(maps.Keys(r.Members))
		r.Members[ids[0]]++
		r.Members[ids[1]]--
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		moved[i].Payload = b
		n++
		break
	}
	if n == 0 {
		t.Fatal("no reward split between two members")
	}
	if _, err := sim.RebuildLog(context.Background(), poisonScanner{moved}, "s", sim.Config{}); !errors.Is(err, sim.ErrReplayMismatch) || !strings.Contains(err.Error(), " for ") {
		t.Fatalf("a reward's split altered: got %v, want ErrReplayMismatch naming the member", err)
	}
	if _, err := sim.RebuildLog(context.Background(), poisonScanner{evs}, "s", sim.Config{}); err != nil {
		t.Fatalf("the log as recorded: %v", err)
	}
}

// A replay decides nothing, so nothing asks for a queue's head; the
// queue's list of tickets in arrival order must still drop those no longer
// open, or a replayed session holds every ticket it ever queued, retired
// ones included (64 MB of a 200,000-ticket replay's 66 MB of live heap).
// The heap an engine holds after replaying 20,000 tickets of the support
// desk is about that of 2,000, not 18,000 tickets' worth more.
func TestReplayHoldsNoFinishedTickets(t *testing.T) {
	held := func(tickets int) int64 {
		w, src := simtest.DeskWorld(t, tickets)
		cfg := sim.Config{World: w, Source: src, Seed: 42, Session: "s"}
		e, err := sim.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		e.Start()
		all := simtest.Events(t, e)
		before := heapInUse()
		r, err := sim.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range all {
			if err := r.Apply(ev); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := r.StateHash(), e.StateHash(); got != want {
			t.Fatalf("the replay hashes to %s, the run to %s", got, want)
		}
		e = nil
		n := heapInUse() - before
		runtime.KeepAlive(r)
		runtime.KeepAlive(all)
		return n
	}
	small, large := held(2_000), held(20_000)
	t.Logf("the engine holds %d KiB after replaying 2,000 tickets, %d KiB after 20,000", small>>10, large>>10)
	// Before the lists dropped closed tickets without being asked, the
	// 18,000 more tickets held about 11 MB more.
	if large-small > 3<<20 {
		t.Errorf("replaying 20,000 tickets holds %d KiB of heap, 2,000 hold %d KiB", large>>10, small>>10)
	}
}

// heapInUse is the live heap's size after a collection.
func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// TestApplyOnlyReplaysTheSameState: an engine that only re-applies events
// (Config.ApplyOnly, corpsim replay's) reaches the state, hash and
// recorded rewards a full rebuild reaches, event by event, in worlds with
// tickets, projects, cases, shifts and meetings; and refuses to go on or
// to snapshot, which would need the timers it does not keep.
func TestApplyOnlyReplaysTheSameState(t *testing.T) {
	for _, name := range []string{"startup", "support-desk", "claims", "wind-ops", "meetings", "billing-support"} {
		t.Run(name, func(t *testing.T) {
			src, err := worlds.Source(name)
			if err != nil {
				t.Fatal(err)
			}
			live, w := mustWorldEngine(t, name+".yaml", src, 3)
			live.Start()
			evs := drive(t, live, greedy, false, 0)
			full, err := sim.New(sim.Config{World: w, Source: src, Seed: 3, Session: "s"})
			if err != nil {
				t.Fatal(err)
			}
			only, err := sim.New(sim.Config{World: w, Source: src, Seed: 3, Session: "s", ApplyOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			for i, ev := range evs {
				if err := full.Apply(ev); err != nil {
					t.Fatal(err)
				}
				if err := only.Apply(ev); err != nil {
					t.Fatalf("event %d (%s): %v", ev.Seq, ev.Type, err)
				}
				if i%97 == 0 || i == len(evs)-1 {
					if got, want := only.StateHash(), full.StateHash(); got != want {
						t.Fatalf("after seq %d: apply-only state %s, full %s", ev.Seq, got, want)
					}
				}
			}
			if got, want := only.StateHash(), live.StateHash(); got != want {
				t.Fatalf("final state %s, the live run's %s", got, want)
			}
			if got, want := only.EndStateHash(), full.EndStateHash(); got != want || got == "" {
				t.Fatalf("end hash %q, a full rebuild's %q", got, want)
			}
			if got, want := only.Recorded(), full.Recorded(); !slices.Equal(got.Rubrics, want.Rubrics) || got.Team != want.Team {
				t.Fatalf("recorded rewards %+v, a full rebuild's %+v", got, want)
			}
			for op, f := range map[string]func(){"Resume": only.Resume, "Snapshot": func() { only.Snapshot() }} {
				func() {
					defer func() {
						if recover() == nil {
							t.Errorf("%s of an apply-only engine did not panic", op)
						}
					}()
					f()
				}()
			}
		})
	}
}

// TestRebuildUsesTheWorldItIsGiven: a rebuild given the session's world,
// loaded already (base.World, its hash the one recorded), plays on it
// rather than loading it again from the log (a recall at a fork did, for
// seconds with the largest worlds), and ends in the same state; a world
// of another hash is not taken for it.
func TestRebuildUsesTheWorldItIsGiven(t *testing.T) {
	live := mustEngine(t, 3)
	live.Start()
	evs := drive(t, live, greedy, false, 0)
	world := live.State().World
	other, err := worlds.Load("startup.yaml", []byte(string(simtest.Source(t, "startup"))+"\n# another file\n"))
	if err != nil {
		t.Fatal(err)
	}
	if other.Hash == world.Hash {
		t.Fatal("a changed file has the same hash")
	}
	for _, tt := range []struct {
		name  string
		given *worlds.World
		same  bool
	}{{"none", nil, false}, {"the session's", world, true}, {"another", other, false}} {
		t.Run(tt.name, func(t *testing.T) {
			e, err := sim.RebuildLog(context.Background(), poisonScanner{evs}, "s", sim.Config{World: tt.given})
			if err != nil {
				t.Fatal(err)
			}
			if got := e.State().World; (got == world) != tt.same || got == other {
				t.Errorf("played on the given world: %v; want %v", got == world, tt.same)
			}
			if e.State().Hash() != live.State().Hash() {
				t.Error("the rebuilt state differs from the live one")
			}
		})
	}
}
