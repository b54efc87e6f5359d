package org_test

import (
	"slices"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

// A view's waiting_on is what PendingDeps says of the task, whether it
// waits on all of its dependencies (the view then shares the spec's
// list), on some, or on none: play a
// generated world with chains and compare every listed task of every
// member's view after every batch.
func TestViewWaitingIsThePendingDependencies(t *testing.T) {
	w, err := worlds.Load("gen.yaml", worlds.Generate(worlds.GenOptions{Seed: 7, Teams: 2, Members: 8, Projects: 2,
		Tasks: 60, Chains: 6, Stagger: 1}))
	if err != nil {
		t.Fatal(err)
	}
	e, err := sim.New(sim.Config{World: w, Seed: 3, Session: "s"})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	var all, some, none int
	check := func() {
		st := e.State()
		for _, m := range w.Members {
			o := st.View(m.ID)
			for _, list := range [][]org.TaskView{o.Assigned, o.Available, o.Upcoming} {
				for _, v := range list {
					task := st.Task(v.ID)
					want := st.PendingDeps(task)
					if !slices.Equal(v.Waiting, want) || (v.Waiting == nil) != (want == nil) {
						t.Fatalf("%s in %s's view waits on %q, PendingDeps says %q", v.ID, m.ID, v.Waiting, want)
					}
					switch {
					case len(want) == 0:
						none++
					case len(want) == len(task.Spec.Deps):
						all++ // the shared list is clipped: TestWaitingOnSharesTheSpecListClipped
					default:
						some++
					}
				}
			}
		}
	}
	err = sim.Play(e, func([]events.Event) bool { check(); return true },
		simtest.Greedy, 0)
	if err != nil {
		t.Fatal(err)
	}
	if all == 0 || some == 0 || none == 0 {
		t.Fatalf("views of tasks waiting on all their dependencies %d, some %d, none %d: each case must be seen", all, some, none)
	}
}
