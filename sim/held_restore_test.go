package sim_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

// hoarder claims up to three of the tasks it may take, last listed first
// (so not in the order they were created), works what greedy would, and
// never hands anything over: at a shift's end it still holds them, and
// the handover violation names them.
func hoarder(o org.Observation) sim.Answer {
	var acts []org.Action
	if len(o.Assigned) < 3 {
		avail := o.Available[:min(len(o.Available), 3)]
		for _, t := range slices.Backward(avail) {
			acts = append(acts, org.Action{Type: org.ActClaim, Task: t.ID})
		}
	}
	for _, a := range greedy(o).Actions {
		if a.Type != org.ActHandoff && a.Type != org.ActClaim {
			acts = append(acts, a)
		}
	}
	return sim.Answer{Member: o.Member, Turn: o.Turn, Actions: acts}
}

// TestRestoredCheckpointContinuesTheSameLog cuts a run of every shipped
// world at many points, restores an engine from the checkpoint taken there
// and resumes it: the continuation must be the uninterrupted run's log,
// byte for byte, as a resumed session, a fork at a checkpoint or a
// worker's hand-off must write it. The members hoard: in wind-ops (shifts
// with handover) they hold several tasks taken out of creation order when
// their shifts end, and the handover violation lists them.
func TestRestoredCheckpointContinuesTheSameLog(t *testing.T) {
	for _, name := range worlds.Names() {
		if name == "support-desk-bench" {
			continue // 200,000 tickets; support-desk is the same machinery
		}
		t.Run(name, func(t *testing.T) {
			want, cuts := restoredRuns(t, name, 2, 8, func() decider { return hoarder })
			listed := 0 // handover violations naming more than one task
			for _, ev := range want {
				if ev.Type == payload.EvActionRejected {
					r, err := payload.As[payload.ActionRejected](&ev, nil)
					if err != nil {
						t.Fatal(err)
					}
					if r.Rule == worlds.RuleHandover && strings.Contains(r.Reason, ", ") {
						listed++
					}
				}
			}
			if name == "wind-ops" && listed == 0 || cuts < 2 {
				t.Fatalf("%d handover violations naming several tasks, %d cuts: the run tests nothing", listed, cuts)
			}
			t.Logf("%d events, %d cuts, %d handover violations naming several tasks", len(want), cuts, listed)
		})
	}
}

// TestRestoredAgentsContinueTheSameLog is the same with the built-in
// agents, each resumed engine asking agents made anew, as a resumed
// process, a fork or a worker's hand-off does: what they decide must not
// hang on what they saw before the cut. The planner's did: it remembered
// the topics colleagues had told it, and one made anew asked again
// (product-launch, support-desk); it now reads whether it knows a topic
// from the view (InfoView.Known, of an open task the viewer's).
//
// random drew from one stream per member from the session's start, so a
// fresh one drew other numbers; its draws are now keyed by turn too.
//
// What is left out keeps memory a restart loses, as the README says: the
// planner's estimate of the rate purchases come at (from those it has seen
// since the session began; procurement), and what diligent learnt by
// asking attendees about their availability (meetings). The cheater
// remembers its shortcuts: it is not here.
func TestRestoredAgentsContinueTheSameLog(t *testing.T) {
	forgets := map[string]string{"planner": "procurement", "diligent": "meetings"}
	for _, kind := range []string{"greedy", "diligent", "oracle", "idle", "planner", "random"} {
		for _, name := range worlds.Names() {
			if name == "support-desk-bench" || forgets[kind] == name {
				continue
			}
			w, err := worlds.Shipped(name)
			if err != nil {
				t.Fatal(err)
			}
			seats := func() decider {
				made := map[string]agents.Agent{}
				return func(o org.Observation) sim.Answer {
					a := made[o.Member]
					if a == nil {
						if a, err = agents.New(kind, agents.Options{Seed: 2, Member: o.Member, World: w}); err != nil {
							t.Fatal(err)
						}
						made[o.Member] = a
					}
					acts, err := a.Decide(context.Background(), o)
					if err != nil {
						t.Fatal(err)
					}
					return sim.Answer{Member: o.Member, Turn: o.Turn, Actions: acts}
				}
			}
			t.Run(kind+"/"+name, func(t *testing.T) { restoredRuns(t, name, 2, 4, seats) })
		}
	}
}

// restoredRuns plays world at load with the agents newAgents makes and
// checks the continuations of about n restores evenly spaced over the run
// (checkRestores). It returns the whole log and the number of restores.
func restoredRuns(t *testing.T, world string, load float64, n int, newAgents func() decider) ([]events.Event, int) {
	t.Helper()
	src, err := worlds.Source(world)
	if err != nil {
		t.Fatal(err)
	}
	w, err := worlds.Load(world+".yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.Config{World: w, Source: src, Seed: 2, Session: "s", Load: load}
	full, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	full.Start()
	var want []events.Event
	boundaries := 0
	for rd := range steps(t, full, newAgents(), false) {
		want = append(want, rd.Events...)
		boundaries++
	}
	live, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	live.Start()
	every := max(boundaries/n, 1)
	checkRestores(t, live, cfg, every, want, newAgents)
	return want, (boundaries + every - 1) / every
}
