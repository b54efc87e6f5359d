package org_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

// The view lists (requests by requester, pending requests, unanswered
// messages by sender) must give every view what the scan of every request
// and message gives, and a view omitting parts must be the whole view
// without them: play every shipped world (the 200,000-ticket bench aside;
// cases, shifts, systems, meetings included) and a generated one with
// approval chains, with agents whose requests are approved, rejected,
// escalated and asked again and whose questions are answered or not, and
// compare every member's view after every batch, and after a restore.
func TestViewListsMatchScan(t *testing.T) {
	ws := simtest.Shipped(t)
	g, err := worlds.Load("gen.yaml", worlds.Generate(worlds.GenOptions{Seed: 5, Teams: 3, Members: 12, Projects: 3,
		Tasks: 40, Chains: 6, Stagger: 1, Tickets: 2}))
	if err != nil {
		t.Fatal(err)
	}
	ws["generated"] = g
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range ws {
			if !yield(k) {
				return
			}
		}
	}) {
		w := ws[name]
		for _, agent := range []string{"greedy", "random", "cheater", "diligent"} {
			t.Run(name+"/"+agent, func(t *testing.T) {
				e, err := sim.New(sim.Config{World: w, Seed: 2, Session: "s"})
				if err != nil {
					t.Fatal(err)
				}
				e.Start()
				seats := map[string]agents.Agent{}
				batches, requests, awaiting := 0, 0, 0
				err = sim.Play(e, func([]events.Event) bool {
					batches++
					st := e.State()
					// Every batch at first, then every eighth: a stale
					// list stays stale, so it is still caught (and the
					// test stays within minutes under -race).
					if batches <= 100 || batches%8 == 0 {
						r, a := mustSameLists(t, st, fmt.Sprintf("batch %d", batches))
						requests, awaiting = max(requests, r), max(awaiting, a)
					}
					if batches%50 == 0 {
						back, err := org.Restore(w, st.Snapshot())
						if err != nil {
							t.Fatal(err)
						}
						mustSameLists(t, back, fmt.Sprintf("batch %d, restored", batches))
					}
					return batches < 600
				}, func(tu sim.Turn) (sim.Answer, bool) {
					a := seats[tu.Member]
					if a == nil {
						a, err = agents.New(agent, agents.Options{Seed: 2, Member: tu.Member, World: w})
						if err != nil {
							t.Fatal(err)
						}
						seats[tu.Member] = a
					}
					acts, _ := a.Decide(context.Background(), tu.Observation)
					return sim.Answer{Member: tu.Member, Turn: tu.Observation.Turn, Actions: acts}, true
				}, 0)
				if err != nil && !errors.Is(err, sim.ErrStopped) {
					t.Fatal(err)
				}
				t.Logf("%d batches; at most %d requests and %d awaited replies in a view", batches, requests, awaiting)
			})
		}
	}
}

// mustSameLists fails unless every member's view of st lists the
// approvals, requests and awaited replies the scan finds, and its views
// omitting parts are the whole one without them, every task counts its
// dependents (TaskView.Dependents) right, and the work offered to a member
// when another passes it on (openFor) is what the walk of every queue
// finds. It returns the most
// requests and awaited replies a view listed.
func mustSameLists(tb testing.TB, st *org.State, where string) (requests, awaiting int) {
	tb.Helper()
	if id := st.StaleDependents(); id != "" {
		tb.Fatalf("%s: task %s counts its dependents wrong", where, id)
	}
	for _, m := range st.Members {
		if got, want := st.OpenFor(m.ID); got != want {
			tb.Fatalf("%s, %s: openFor finds %q, the walk of every queue %q", where, m.ID, got, want)
		}
		o := st.View(m.ID)
		approvals, reqs, waits := st.ScanLists(m.ID)
		if !reflect.DeepEqual(o.Approvals, approvals) || !reflect.DeepEqual(o.Requests, reqs) || !reflect.DeepEqual(o.Awaiting, waits) {
			tb.Fatalf("%s, %s: view lists approvals %v, requests %v, awaiting %v; the scan %v, %v, %v",
				where, m.ID, o.Approvals, o.Requests, o.Awaiting, approvals, reqs, waits)
		}
		mustSameOmitting(tb, st, o, where)
		requests, awaiting = max(requests, len(reqs)+len(approvals)), max(awaiting, len(waits))
	}
	return requests, awaiting
}
