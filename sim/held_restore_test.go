package sim_test

import (
	"bytes"
	"context"
	"reflect"
	"regexp"
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
			want, cuts := restoredRuns(t, name, 2, 8, func([]events.Event) decider { return hoarder })
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
// The agents that remember (agents' Remembers: the planner's estimate of
// the rate purchases come at, in procurement; what diligent learnt by
// asking attendees about their availability, in meetings; the cheater's
// shortcuts and held steps) are shown their members' past turns first
// (sim.Recall), as sim/app and the server show them, and must decide each
// as the log recorded it.
func TestRestoredAgentsContinueTheSameLog(t *testing.T) {
	for _, kind := range []string{"greedy", "diligent", "oracle", "idle", "planner", "random", "cheater"} {
		for _, name := range worlds.Names() {
			if name == "support-desk-bench" {
				continue
			}
			w, err := worlds.Shipped(name)
			if err != nil {
				t.Fatal(err)
			}
			recalled := 0
			t.Run(kind+"/"+name, func(t *testing.T) {
				restoredRuns(t, name, 2, 4, func(past []events.Event) decider {
					seats := madeAnew(t, kind, w)
					recalled += recallPast(t, past, w, seats)
					return func(o org.Observation) sim.Answer {
						acts, err := seats(o.Member).Decide(context.Background(), o)
						if err != nil {
							t.Fatal(err)
						}
						return sim.Answer{Member: o.Member, Turn: o.Turn, Actions: acts}
					}
				})
				if _, remembers := agents.Memory(seats0(t, kind, w)); remembers && recalled == 0 {
					t.Fatalf("%s remembers, but no past turn was recalled", kind)
				}
			})
		}
	}
}

// madeAnew returns the agents of kind for world w, each made the first
// time its member is named.
func madeAnew(t *testing.T, kind string, w *worlds.World) func(member string) agents.Agent {
	made := map[string]agents.Agent{}
	return func(member string) agents.Agent {
		a := made[member]
		if a == nil {
			var err error
			if a, err = agents.New(kind, agents.Options{Seed: 2, Member: member, World: w}); err != nil {
				t.Fatal(err)
			}
			made[member] = a
		}
		return a
	}
}

// seats0 is an agent of kind, to ask what its kind does.
func seats0(t *testing.T, kind string, w *worlds.World) agents.Agent {
	return madeAnew(t, kind, w)(w.Members[0].ID)
}

// recallPast shows the agent seats of w that remember their turns in past
// (sim.Recall over the events), checking each decision against the
// recorded one, and returns how many turns it showed.
func recallPast(t *testing.T, past []events.Event, w *worlds.World, seats func(member string) agents.Agent) int {
	t.Helper()
	if len(past) == 0 {
		return 0
	}
	omits := map[string]org.Omit{}
	for _, m := range w.Members {
		if omit, ok := agents.Memory(seats(m.ID)); m.NPC == nil && ok {
			omits[m.ID] = omit
		}
	}
	n, err := sim.Recall(context.Background(), eventSlice(past), "s", past[len(past)-1].Seq, sim.Config{}, omits, func(s sim.Shown) error {
		acts, err := seats(s.Observation.Member).Decide(context.Background(), s.Observation)
		if err != nil {
			return err
		}
		if acts == nil {
			acts = []org.Action{}
		}
		if !reflect.DeepEqual(acts, s.Recorded) {
			t.Fatalf("%s's turn at seq %d, shown again, decided %+v; the log recorded %+v", s.Observation.Member, s.Seq, acts, s.Recorded)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// eventSlice is a session's events in memory, read as a log (sim.Scanner).
type eventSlice []events.Event

func (l eventSlice) Scan(ctx context.Context, _ string, from uint64, fn func(*events.Event) error) error {
	for i := range l {
		if l[i].Seq < from {
			continue
		}
		if err := fn(&l[i]); err != nil {
			return err
		}
	}
	return nil
}

// restoredRuns plays world at load with the agents newAgents makes and
// checks the continuations of about n restores evenly spaced over the run
// (checkRestores). It returns the whole log and the number of restores.
func restoredRuns(t *testing.T, world string, load float64, n int, newAgents func(past []events.Event) decider) ([]events.Event, int) {
	t.Helper()
	src, err := worlds.Source(world)
	if err != nil {
		t.Fatal(err)
	}
	return restoredRunsOf(t, world, src, load, n, newAgents)
}

// restoredRunsOf is restoredRuns of the world file src.
func restoredRunsOf(t *testing.T, world string, src []byte, load float64, n int, newAgents func(past []events.Event) decider) ([]events.Event, int) {
	t.Helper()
	return restoredRunsEdited(t, world, src, load, n, newAgents, nil)
}

// restoredRunsEdited is restoredRunsOf of each snapshot as edit makes it
// (checkRestoresOf), when edit is not nil.
func restoredRunsEdited(t *testing.T, world string, src []byte, load float64, n int, newAgents func(past []events.Event) decider, edit func([]byte) []byte) ([]events.Event, int) {
	t.Helper()
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
	for rd := range steps(t, full, newAgents(nil), false) {
		want = append(want, rd.Events...)
		boundaries++
	}
	live, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	live.Start()
	every := max(boundaries/n, 1)
	checkRestoresOf(t, live, cfg, every, want, newAgents, edit)
	return want, (boundaries + every - 1) / every
}

// TestRestoreKeepsPendingEscalations: a checkpoint taken while a request
// waits for an approver who does not decide carries its escalation timer
// whole (the step and the approver it waits for): a restored engine
// escalates it when the session played through would. Restored, it lost
// them, and forks and resumes from such a checkpoint diverged.
func TestRestoreKeepsPendingEscalations(t *testing.T) {
	idleManagers := func(o org.Observation) sim.Answer {
		if o.Member == "mia" || o.Member == "max" {
			return sim.Answer{Member: o.Member, Turn: o.Turn, Actions: []org.Action{}}
		}
		return greedy(o)
	}
	want, cuts := restoredRuns(t, "procurement", 1, 60, func([]events.Event) decider { return idleManagers })
	escalated := 0
	for _, ev := range want {
		if ev.Type == payload.EvApprovalEscalated {
			escalated++
		}
	}
	if escalated == 0 || cuts < 30 {
		t.Fatalf("%d escalations in %d events, %d restores: the test shows nothing", escalated, len(want), cuts)
	}
	// A checkpoint an older build wrote, without the step and approver:
	// the restore finds them from the request.
	src, err := worlds.Source("procurement")
	if err != nil {
		t.Fatal(err)
	}
	stripped := 0
	older := regexp.MustCompile(`,"step":[0-9]+|,"who":"[a-z0-9_-]+"`)
	restoredRunsEdited(t, "procurement", src, 1, 60, func([]events.Event) decider { return idleManagers }, func(b []byte) []byte {
		out := older.ReplaceAll(b, nil)
		stripped += len(b) - len(out)
		return out
	})
	if stripped == 0 {
		t.Fatal("no checkpoint held an escalation's step or approver: the older checkpoints show nothing")
	}
}

// An older checkpoint of a request waiting at a step that sets no
// escalation timer (the director's, without escalate_after here) keeps
// the earlier step's timer stale: the rebuild gives it to the current step
// only when that step escalates, or it escalated where the session played
// through never did.
func TestOlderCheckpointAtAStepThatDoesNotEscalate(t *testing.T) {
	src, err := worlds.Source("procurement")
	if err != nil {
		t.Fatal(err)
	}
	src = bytes.Replace(src, []byte("{role: director, above: 10000, escalate_after: 1d}"), []byte("{role: director, above: 10000}"), 1)
	idleDirector := func(o org.Observation) sim.Answer {
		if o.Member == "dora" {
			return sim.Answer{Member: o.Member, Turn: o.Turn, Actions: []org.Action{}}
		}
		return greedy(o)
	}
	older := regexp.MustCompile(`,"step":[0-9]+|,"who":"[a-z0-9_-]+"`)
	restoredRunsEdited(t, "procurement", src, 1, 60, func([]events.Event) decider { return idleDirector }, func(b []byte) []byte {
		return older.ReplaceAll(b, nil)
	})
}
