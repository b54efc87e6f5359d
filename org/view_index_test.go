package org_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

// mustSameViews fails unless every member's View of st is the one
// ScanView (the old scan of every task of every queue, kept as the
// reference) builds, byte for byte, and so is the View of st restored from
// its snapshot (the offer index built from scratch).
func mustSameViews(tb testing.TB, w *worlds.World, st *org.State, where string, restore bool) int {
	tb.Helper()
	var back *org.State
	if restore {
		var err error
		if back, err = org.Restore(w, st.Snapshot()); err != nil {
			tb.Fatal(err)
		}
	}
	n := 0
	for _, m := range st.Members {
		full := st.View(m.ID)
		got, _ := json.Marshal(full)
		want, _ := json.Marshal(st.ScanView(m.ID))
		if string(got) != string(want) {
			tb.Fatalf("%s, %s: indexed view\n%s\nscanned view\n%s", where, m.ID, got, want)
		}
		mustSameOmitting(tb, st, full, where)
		if back != nil {
			rebuilt, _ := json.Marshal(back.View(m.ID))
			if string(rebuilt) != string(want) {
				tb.Fatalf("%s, %s: view after restore\n%s\nscanned view\n%s", where, m.ID, rebuilt, want)
			}
		}
		n++
	}
	return n
}

// allOmits are the parts of an observation ViewOmitting may leave out.
const allOmits = org.OmitUpcoming | org.OmitProjects | org.OmitQueues | org.OmitRequests | org.OmitQueuesUp

// mustSameOmitting fails unless, for each part and for all of them at
// once, st.ViewOmitting of full's member is full with just that part left
// out (what it shows of the rest, the cases of upcoming tasks included, is
// the same).
func mustSameOmitting(tb testing.TB, st *org.State, full org.Observation, where string) {
	tb.Helper()
	for _, omit := range []org.Omit{org.OmitUpcoming, org.OmitProjects, org.OmitQueues, org.OmitRequests, org.OmitQueuesUp, allOmits &^ org.OmitQueues, allOmits} {
		want := full
		if omit&org.OmitUpcoming != 0 {
			want.Upcoming, want.UpcomingMore = nil, 0
		}
		if omit&org.OmitProjects != 0 {
			want.Projects = nil
		}
		switch {
		case omit&org.OmitQueues != 0:
			want.Queues = nil
		case omit&org.OmitQueuesUp != 0:
			want.Queues = nil
			for _, q := range full.Queues {
				if q.DownUntil > full.Time {
					want.Queues = append(want.Queues, q)
				}
			}
		}
		if omit&org.OmitRequests != 0 {
			want.Requests, want.RequestsMore = nil, 0
		}
		got := st.ViewOmitting(full.Member, omit)
		if !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			tb.Fatalf("%s, %s: view omitting %b\n%s\nwant\n%s", where, full.Member, omit, g, w)
		}
	}
}

// The offer index must give every view the scan of every task would: play
// the shipped worlds and generated ones (projects with dependencies and
// skills, tickets in fifo and priority queues, WIP limits, outages,
// reprioritizations, hand-offs) with a mix of random agents, whose mistakes
// and hand-backs move tasks in and out of the index, and greedy ones, which
// finish work; with the default listed limit and short ones that cut the
// lists; and compare every member's view after every batch.
func TestIndexedViewEqualsScan(t *testing.T) {
	type world struct {
		name string
		w    *worlds.World
	}
	var ws []world
	for _, name := range simtest.ShippedWorlds {
		w, err := worlds.Shipped(name)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, world{name, w})
	}
	for i, g := range []worlds.GenOptions{
		{Seed: 3, Teams: 3, Members: 12, Projects: 4, Tasks: 40, Chains: 4, Stagger: 1, Tickets: 3},
		{Seed: 4, Teams: 2, Members: 7, Projects: 3, Tasks: 30, Chains: 2, Tickets: 2},
	} {
		// Reprioritizations move tasks waiting on dependencies, ready ones
		// and hidden ones (their project has not started).
		src := append(worlds.Generate(g), `interruptions:
  - {at: 4h, kind: reprioritize, task: p1-t20, value: 500}
  - {at: 1d, kind: reprioritize, task: p1-t9, value: 0.5}
  - {at: 1d, kind: reprioritize, task: p3-t5, value: 70}
  - {at: 1d, kind: outage, queue: q1, for: 4h}
  - {at: 2d, kind: reprioritize, task: p2-t15, value: 300}
  - {at: 2d, kind: reprioritize, task: p1-t10, value: 1}
  - {at: 3d, kind: reprioritize, task: p1-t27, value: 2}
`...)
		w, err := worlds.Load(fmt.Sprintf("gen%d.yaml", i), src)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, world{fmt.Sprintf("generated-%d", i), w})
	}
	for _, wd := range ws {
		for _, c := range []struct {
			listed int
			seed   uint64
		}{{0, 1}, {3, 2}, {1, 3}} {
			listed, seed := c.listed, c.seed
			{
				t.Run(fmt.Sprintf("%s/listed=%d/seed=%d", wd.name, listed, seed), func(t *testing.T) {
					e, err := sim.New(sim.Config{World: wd.w, Seed: seed, Session: "s", Limits: org.Limits{Listed: listed}})
					if err != nil {
						t.Fatal(err)
					}
					e.Start()
					seats := map[string]*agents.Random{}
					batches, compared := 0, 0
					err = sim.Play(e, func([]events.Event) bool {
						batches++
						if batches%2 == 0 {
							compared += mustSameViews(t, wd.w, e.State(), fmt.Sprintf("batch %d", batches), batches%38 == 0)
						}
						return batches < 400
					}, func(tu sim.Turn) (sim.Answer, bool) {
						// Members take turns being greedy, handing back what
						// they hold (or claiming what is not ready yet), and
						// random.
						o := tu.Observation
						switch o.Turn % 3 {
						case 0:
							return simtest.Greedy(tu)
						case 1:
							if acts := churn(o); acts != nil {
								return sim.Answer{Member: tu.Member, Turn: o.Turn, Actions: acts}, true
							}
						}
						a := seats[tu.Member]
						if a == nil {
							a = agents.NewRandom(seed, tu.Member)
							seats[tu.Member] = a
						}
						acts, _ := a.Decide(context.Background(), tu.Observation)
						return sim.Answer{Member: tu.Member, Turn: tu.Observation.Turn, Actions: acts}, true
					}, 0)
					if err != nil && !errors.Is(err, sim.ErrStopped) {
						t.Fatal(err)
					}
					if compared == 0 {
						t.Fatal("compared no views")
					}
				})
			}
		}
	}
}

// churn hands a task it holds back to its queue or to the assignee of
// another task it sees, or claims a task still waiting on its dependencies;
// nil when there is none.
func churn(o org.Observation) []org.Action {
	for _, t := range o.Assigned {
		if t.Status != org.StatusClaimed {
			continue
		}
		to := ""
		for _, u := range o.Available {
			if u.Assignee != "" && u.Assignee != o.Member && o.Turn%2 == 0 {
				to = u.Assignee
			}
		}
		return []org.Action{{Type: org.ActHandoff, Task: t.ID, To: to}}
	}
	if len(o.Upcoming) > 0 {
		return []org.Action{{Type: org.ActClaim, Task: o.Upcoming[len(o.Upcoming)-1].ID}}
	}
	return nil
}
