package sim_test

import (
	"bytes"
	"context"
	"encoding/json"
	"iter"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

func mustEngine(tb testing.TB, seed uint64) *sim.Engine {
	tb.Helper()
	src, err := worlds.Source("startup")
	if err != nil {
		tb.Fatal(err)
	}
	w, err := worlds.Load("startup.yaml", src)
	if err != nil {
		tb.Fatal(err)
	}
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: seed, Session: "s"})
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// startedEngine loads the world file named file from src and returns a
// started engine of it (seed 1, session "s").
func startedEngine(tb testing.TB, file string, src []byte) *sim.Engine {
	tb.Helper()
	w, err := worlds.Load(file, src)
	if err != nil {
		tb.Fatal(err)
	}
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: 1, Session: "s"})
	if err != nil {
		tb.Fatal(err)
	}
	e.Start()
	return e
}

// decider answers a turn; reverse makes the driver hand answers over in reverse order.
type decider func(org.Observation) sim.Answer

func greedy(o org.Observation) sim.Answer {
	acts, _ := (&agents.Greedy{}).Decide(context.Background(), o)
	return sim.Answer{Member: o.Member, Turn: o.Turn, Actions: acts}
}

// drive runs e like the driver does, without I/O, and returns every event.
// It stops after limit events when limit > 0.
func drive(tb testing.TB, e *sim.Engine, decide decider, reverse bool, limit int) []events.Event {
	tb.Helper()
	var out []events.Event
	for rd := range steps(tb, e, decide, reverse) {
		if out = append(out, rd.Events...); limit > 0 && len(out) >= limit {
			break
		}
	}
	return out
}

// steps runs e like the driver does, without I/O, and yields each step as
// Ready returned it (its events the caller's), with e between Ready and
// Step, where the driver takes its checkpoints. reverse answers the turns
// in reverse order.
func steps(tb testing.TB, e *sim.Engine, decide decider, reverse bool) iter.Seq[sim.Ready] {
	return func(yield func(sim.Ready) bool) {
		for i := 0; ; i++ {
			if i > 1_000_000 {
				tb.Fatal("engine does not finish")
			}
			rd := e.Ready()
			rd.Events = slices.Clone(rd.Events) // Advance lets the engine reuse them
			e.Advance()
			if !yield(rd) || rd.Done {
				return
			}
			if len(rd.Turns) == 0 {
				e.Tick()
				continue
			}
			var ans []sim.Answer
			for _, t := range rd.Turns {
				ans = append(ans, decide(t.Observation))
			}
			if reverse {
				slices.Reverse(ans)
			}
			e.Step(ans)
		}
	}
}

func encodeAll(evs []events.Event) [][]byte {
	out := make([][]byte, len(evs))
	for i := range evs {
		out[i] = events.Encode(&evs[i])
	}
	return out
}

func equalLogs(tb testing.TB, a, b []events.Event) {
	tb.Helper()
	ea, eb := encodeAll(a), encodeAll(b)
	if len(ea) != len(eb) {
		tb.Fatalf("got %d and %d events", len(ea), len(eb))
	}
	for i := range ea {
		if !bytes.Equal(ea[i], eb[i]) {
			tb.Fatalf("event %d differs: %s %s vs %s %s", i+1, a[i].Type, a[i].Payload, b[i].Type, b[i].Payload)
		}
	}
}

func TestAnswersAppliedInMemberOrder(t *testing.T) {
	a := mustEngine(t, 5)
	a.Start()
	la := drive(t, a, greedy, false, 0)
	b := mustEngine(t, 5)
	b.Start()
	lb := drive(t, b, greedy, true, 0)
	equalLogs(t, la, lb)
	if got := a.State().EndReason; got != "complete" {
		t.Fatalf("greedy team ended %q, want complete", got)
	}
	// The answers to one round of turns are recorded in member-ID order.
	c := mustEngine(t, 5)
	c.Start()
	rounds, asked := 0, 0
	for rd := range steps(t, c, greedy, true) {
		if asked > 0 { // rd's events begin with the round of the asked turns, answered in reverse
			var order []string
			for _, ev := range rd.Events {
				if ev.Type == payload.EvTurn && !c.State().Member(ev.Actor).NPC && len(order) < asked {
					order = append(order, ev.Actor)
				}
			}
			if !slices.IsSorted(order) || len(order) != asked {
				t.Fatalf("round %d: turns recorded as %v for %d asked", rounds, order, asked)
			}
			rounds++
		}
		asked = len(rd.Turns)
	}
	if rounds < 10 {
		t.Fatalf("only %d rounds", rounds)
	}
}

// TestRebuildThenResumeContinuesTheSameLog cuts a live run at many points,
// rebuilds an engine from the prefix and resumes it: the continuation must be
// the uninterrupted run's log, byte for byte (timers, due members and all).
func TestRebuildThenResumeContinuesTheSameLog(t *testing.T) {
	full := mustEngine(t, 11)
	full.Start()
	want := drive(t, full, greedy, false, 0)
	for _, cut := range []int{1, 2, 7, 40, 101, len(want) / 2, len(want) - 2} {
		live := mustEngine(t, 11)
		live.Start()
		prefix := drive(t, live, greedy, false, cut)
		// A prefix ends at a batch boundary: exactly what a crash leaves durable.
		seq := func(yield func(events.Event, error) bool) {
			for _, ev := range prefix {
				if !yield(ev, nil) {
					return
				}
			}
		}
		e, err := sim.Rebuild(seq, "s", sim.Config{})
		if err != nil {
			t.Fatalf("cut %d: rebuild: %v", cut, err)
		}
		e.Resume()
		rest := drive(t, e, greedy, false, 0)
		equalLogs(t, append(append([]events.Event{}, prefix...), rest...), want)
	}
}

func TestTimeoutIsRecordedAndTheRunGoesOn(t *testing.T) {
	e := mustEngine(t, 1)
	e.Start()
	silentAlice := func(o org.Observation) sim.Answer {
		if o.Member == "alice" {
			return sim.Answer{Member: "alice", TimedOut: true}
		}
		return greedy(o)
	}
	evs := drive(t, e, silentAlice, false, 0)
	timeouts := 0
	for _, ev := range evs {
		if ev.Type == payload.EvTurnTimeout {
			if ev.Actor != "alice" {
				t.Fatalf("timeout recorded for %s", ev.Actor)
			}
			timeouts++
		}
	}
	if timeouts == 0 {
		t.Fatal("no turn.timeout recorded for a member that never answers")
	}
	if st := e.State(); !st.Ended || st.Task("spec").Status == org.StatusDone {
		t.Fatalf("want the session to end with alice's spec undone; ended=%v spec=%s", st.Ended, st.Task("spec").Status)
	}
}

func TestStaleAndMalformedRepliesAreRejected(t *testing.T) {
	e := mustEngine(t, 1)
	e.Start()
	rd := e.Ready()
	e.Advance()
	var ans []sim.Answer
	for _, tu := range rd.Turns {
		switch tu.Member {
		case "alice":
			ans = append(ans, sim.Answer{Member: "alice", Turn: tu.Observation.Turn + 5, Actions: []org.Action{{Type: org.ActClaim, Task: "spec"}}})
		case "bob":
			ans = append(ans, sim.Answer{Member: "bob", Malformed: "malformed reply: invalid character 'x'"})
		default:
			ans = append(ans, greedy(tu.Observation))
		}
	}
	e.Step(ans)
	rd = e.Ready()
	var reasons []string
	for _, ev := range rd.Events {
		if ev.Type == payload.EvActionRejected {
			var p payload.ActionRejected
			_ = json.Unmarshal(ev.Payload, &p)
			reasons = append(reasons, ev.Actor+": "+p.Kind+": "+p.Reason)
		}
	}
	want := []string{
		"alice: malformed: reply answers turn 6, but turn 1 was asked",
		"bob: malformed: malformed reply: invalid character 'x'",
	}
	if !slices.Equal(reasons, want) {
		t.Fatalf("got rejections %q, want %q", reasons, want)
	}
	if e.State().Task("spec").Status != org.StatusOpen {
		t.Fatal("a stale reply changed the state")
	}
}

// TestNPCApprovesAfterItsLatency follows the 8000 purchase through the lead
// and the finance NPC: the NPC decides within its reply range of working time.
func TestNPCApprovesAfterItsLatency(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		e := mustEngine(t, seed)
		e.Start()
		evs := drive(t, e, greedy, false, 0)
		cal := e.State().World.Calendar
		var leadAt, npcAt int64 = -1, -1
		for _, ev := range evs {
			if ev.Type == payload.EvApprovalGranted && strings.Contains(string(ev.Payload), `"step":0`) && strings.Contains(string(ev.Payload), `"request":"r2"`) {
				leadAt = ev.Time
			}
			if ev.Type == payload.EvApprovalGranted && ev.Actor == "frank" {
				npcAt = ev.Time
			}
		}
		if leadAt < 0 || npcAt < 0 {
			t.Fatalf("seed %d: lead approval at %d, finance approval at %d; want both", seed, leadAt, npcAt)
		}
		lat := cal.WorkBetween(clock.Time(leadAt), clock.Time(npcAt))
		if lat < clock.Hour || lat > 6*clock.Hour+clock.Minute {
			t.Fatalf("seed %d: NPC answered after %s of working time, want 1h..6h", seed, lat)
		}
	}
}

// TestSnapshotRestoreContinuesTheSameLog snapshots the engine at every batch
// boundary of a run (between Ready and Step, as the driver does), restores a
// new engine from it and plays on: every continuation equals the original.
func TestSnapshotRestoreContinuesTheSameLog(t *testing.T) {
	full := mustEngine(t, 13)
	full.Start()
	want := drive(t, full, greedy, false, 0)

	live := mustEngine(t, 13)
	live.Start()
	if boundaries := checkRestores(t, live, sim.Config{World: live.State().World, Seed: 13, Session: "s"}, 7, want, greedyAgents); boundaries < 50 {
		t.Fatalf("only %d batch boundaries", boundaries)
	}
	if _, err := sim.Restore(sim.Config{World: live.State().World, Seed: 13}, live.Snapshot(), "00"); err == nil {
		t.Fatal("restore accepted a wrong state hash")
	}
}

// checkRestores plays the started engine live to its end with the agents
// newAgents makes, and at every every-th batch boundary (between Ready and
// Step, as the driver takes its checkpoints) restores a new engine, made
// with cfg, from live's snapshot, and checks that, played on by agents
// made anew (as a resumed process, a fork or a worker's hand-off asks
// them, given the events so far as past), it makes the rest of want. It
// returns the number of batch boundaries.
func checkRestores(t *testing.T, live *sim.Engine, cfg sim.Config, every int, want []events.Event, newAgents func(past []events.Event) decider) int {
	t.Helper()
	return checkRestoresOf(t, live, cfg, every, want, newAgents, nil)
}

// checkRestoresOf is checkRestores of each snapshot as edit makes it (an
// older build's, say), when edit is not nil; the restored engine's own
// snapshot is then not held to the edited one.
func checkRestoresOf(t *testing.T, live *sim.Engine, cfg sim.Config, every int, want []events.Event, newAgents func(past []events.Event) decider, edit func([]byte) []byte) int {
	t.Helper()
	var got []events.Event
	boundaries := 0
	for rd := range steps(t, live, newAgents(nil), false) {
		got = append(got, rd.Events...)
		if boundaries%every == 0 {
			snap := live.Snapshot()
			if edit != nil {
				snap = edit(snap)
			}
			r, err := sim.Restore(cfg, snap, live.StateHash())
			if err != nil {
				t.Fatalf("restore at seq %d: %v", live.State().LastSeq, err)
			}
			// What the checkpoint's decoder (not encoding/json's) read is
			// what was written: the restored engine writes it again.
			if again := r.Snapshot(); edit == nil && !bytes.Equal(again, snap) {
				k := 0
				for k < len(again) && k < len(snap) && again[k] == snap[k] {
					k++
				}
				t.Fatalf("restored at seq %d, the engine's snapshot differs at byte %d:\n got %.200s\nwant %.200s", live.State().LastSeq, k, again[k:], snap[k:])
			}
			r.Resume()
			rest := drive(t, r, newAgents(got), false, 0)
			// The restored engine has no pending events: its first Ready starts after the snapshot.
			equalLogs(t, append(slices.Clone(got), rest...), want)
		}
		boundaries++
	}
	return boundaries
}

// greedyAgents makes greedy deciders, for checkRestores.
func greedyAgents([]events.Event) decider { return greedy }

// The team score less Unpaid is the sum of the rewards the log holds, at
// every point a session can be rebuilt at: what a resumed session's
// running score starts from (its next reward pays Unpaid). Some cut points
// must have something unpaid, or the test shows nothing.
func TestUnpaidIsTheScoreTheRewardsDoNotHoldYet(t *testing.T) {
	_, evs := playWorld(t, "billing-support", "greedy", 1)
	unpaid := 0
	for cut := 1; cut < len(evs); cut += 7 {
		e, err := sim.Rebuild(func(yield func(events.Event, error) bool) {
			for _, ev := range evs[:cut] {
				if !yield(ev, nil) {
					return
				}
			}
		}, "s", sim.Config{})
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		paid := 0.0
		for i := range evs[:cut] {
			if r, err := payload.TeamReward(&evs[i]); err == nil {
				paid += r
			}
		}
		if got := policies.Score(e.State()).TeamScore - e.Unpaid(); math.Abs(got-paid) > 1e-6 {
			t.Fatalf("cut %d: score %v less unpaid %v is %v; the rewards before it sum to %v",
				cut, policies.Score(e.State()).TeamScore, e.Unpaid(), got, paid)
		}
		if e.Unpaid() != 0 {
			unpaid++
		}
	}
	if unpaid == 0 {
		t.Fatal("no cut point had anything unpaid")
	}
}
