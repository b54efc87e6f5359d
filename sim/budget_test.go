package sim_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

// budgeted plays world name (seed 1, greedy) with a budget of max events.
func budgeted(tb testing.TB, w *worlds.World, src []byte, max int) ([]events.Event, *sim.Engine) {
	tb.Helper()
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: 1, Session: "s", MaxEvents: max})
	if err != nil {
		tb.Fatal(err)
	}
	e.Start()
	return simtest.Events(tb, e), e
}

func endReason(tb testing.TB, ev events.Event) string {
	tb.Helper()
	if ev.Type != payload.EvSessionEnded {
		tb.Fatalf("the log ends with %s, not session.ended", ev.Type)
	}
	var p payload.SessionEnded
	if err := json.Unmarshal(ev.Payload, &p); err != nil {
		tb.Fatal(err)
	}
	return p.Reason
}

// A session that reaches its budget of events ends cleanly, "event_limit",
// within the budget, and its log replays; continuing a prefix of it with
// the same budget gives the same log.
func TestEventBudgetEndsTheSession(t *testing.T) {
	cases := []struct {
		name string
		max  int
		w    func(tb testing.TB) (*worlds.World, []byte)
	}{
		{"support-desk", 300, func(tb testing.TB) (*worlds.World, []byte) {
			src, _ := worlds.Source("support-desk")
			w, err := worlds.Load("support-desk.yaml", src)
			if err != nil {
				tb.Fatal(err)
			}
			return w, src
		}},
		// A burst larger than the budget is cut ticket by ticket.
		{"a burst of 5000", 1000, func(tb testing.TB) (*worlds.World, []byte) {
			return mustArrivalWorld(tb, "1d", "    process: bursty\n    every: 1d\n    burst: 5000")
		}},
		{"the smallest budget", sim.MinMaxEvents, func(tb testing.TB) (*worlds.World, []byte) {
			return mustArrivalWorld(tb, "1d", "    process: scheduled\n    every: 1h")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, src := tc.w(t)
			evs, e := budgeted(t, w, src, tc.max)
			t.Logf("%d events of a budget of %d", len(evs), tc.max)
			if len(evs) > tc.max {
				t.Fatalf("%d events, over the budget of %d", len(evs), tc.max)
			}
			// It ends at most one turn early: a turn that does not fit whole is not taken.
			if slack := 2 + org.MaxActions + 2; len(evs) < tc.max-slack {
				t.Fatalf("%d events, far below the budget of %d: the budget ended it early", len(evs), tc.max)
			}
			if got := endReason(t, evs[len(evs)-1]); got != sim.EndEventLimit || e.State().EndReason != sim.EndEventLimit {
				t.Fatalf("ended %q, want %q", got, sim.EndEventLimit)
			}
			for i, ev := range evs {
				if ev.Seq != uint64(i+1) {
					t.Fatalf("event %d has seq %d", i, ev.Seq)
				}
			}
			r, err := sim.Rebuild(seqOf(evs), "s", sim.Config{})
			if err != nil || r.StateHash() != e.StateHash() {
				t.Fatalf("the log does not replay: %v", err)
			}
			// Cut it, rebuild and continue with the same budget: the same log.
			cut := len(evs) / 2
			if cut < 1 {
				cut = 1
			}
			c, err := sim.Rebuild(seqOf(evs[:cut]), "s", sim.Config{})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.SetMaxEvents(tc.max); err != nil {
				t.Fatal(err)
			}
			c.Resume()
			rest := simtest.Events(t, c)
			got := append(slices.Clone(evs[:cut]), rest...)
			if len(got) != len(evs) {
				t.Fatalf("resumed at %d: %d events, want %d", cut, len(got), len(evs))
			}
			for i := range got {
				if a, b := events.Encode(&got[i]), events.Encode(&evs[i]); string(a) != string(b) {
					t.Fatalf("resumed at %d: event %d is %s, want %s", cut, i+1, a, b)
				}
			}
		})
	}
}

func TestEventBudgetIsValidated(t *testing.T) {
	w, src := mustArrivalWorld(t, "1d", "    process: scheduled\n    every: 1h")
	for _, n := range []int{-1, 1, 2} {
		if _, err := sim.New(sim.Config{World: w, Source: src, MaxEvents: n}); err == nil {
			t.Errorf("MaxEvents %d: no error", n)
		}
	}
	e, err := sim.New(sim.Config{World: w, Source: src})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.SetMaxEvents(2); err == nil {
		t.Error("SetMaxEvents(2): no error")
	}
}
