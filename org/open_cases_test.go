package org_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

// TestOpenCasesListIsTheScan plays every shipped world with case
// templates, with greedy and random agents at a load that keeps many cases
// open, and holds the lists of open cases that views look at — those with
// a colleague's step ready, and each member's that it did a step of — to
// a scan of every case, state after state: the same cases in the same
// order, cases reopened by their requesters included. It holds what each
// case keeps of its steps for views (who did one, its colleagues' steps
// left and those ready to be asked for) to what its steps say.
func TestOpenCasesListIsTheScan(t *testing.T) {
	reopened, compared, ready, doers, opened := 0, 0, 0, 0, 0
	for _, name := range worlds.Names() {
		w, err := worlds.Shipped(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(w.Cases) == 0 || len(w.Arrivals) == 0 {
			continue
		}
		batches := 0
		e := playCases(t, w, 2, &reopened, func(st *org.State) bool {
			if batches++; batches%10 == 0 {
				var want []*org.Case
				for _, c := range st.Cases {
					if !c.Done() {
						want = append(want, c)
					}
				}
				compared += len(want)
				var readyWant []*org.Case
				for _, c := range want {
					if c.NPCReady() > 0 {
						readyWant = append(readyWant, c)
						ready++
					}
				}
				if got := st.ReadyCases(); !slices.Equal(got, readyWant) {
					t.Fatalf("%s at seq %d: %d open cases with a colleague's step ready by the list, %d by the scan", name, st.LastSeq, len(got), len(readyWant))
				}
				for _, m := range st.Members {
					if got, want := st.DoerCases(m.ID), st.DoerCasesScanned(m.ID); !slices.Equal(got, want) {
						t.Fatalf("%s at seq %d: %s did a step of %d open cases by its list, %d by the scan", name, st.LastSeq, m.ID, len(got), len(want))
					}
					doers += len(st.DoerCasesScanned(m.ID))
				}
				if errs := st.CaseDerivedErrors(); len(errs) > 0 {
					t.Fatalf("%s at seq %d: %s", name, st.LastSeq, strings.Join(errs, "; "))
				}
				// The cases left to open under a quota, by a scan: each
				// template the member's role may open is in its view with
				// what is left, or out of it once nothing is.
				for _, m := range st.Members {
					left := map[string]int{}
					for _, v := range st.View(m.ID).Open {
						left[v.Template] = v.Left
					}
					for i := range w.Cases {
						tpl := &w.Cases[i]
						if tpl.Open == nil || tpl.Open.Quota == 0 || !slices.Contains(tpl.Open.Roles, m.Role) {
							continue
						}
						n := 0
						for _, c := range st.Cases {
							if c.OpenedBy == m.ID && c.Template == tpl.ID {
								n++
							}
						}
						opened += n
						got, in := left[tpl.ID]
						if want := tpl.Open.Quota - n; in != (want > 0) || in && got != want {
							t.Fatalf("%s at seq %d: %s may open %d more %s cases by its view (listed %v), %d by the scan", name, st.LastSeq, m.ID, got, tpl.ID, in, want)
						}
					}
				}
			}
			return batches < 30000
		})
		t.Logf("%s: %d batches, seq %d, %d cases, ended %v", name, batches, e.State().LastSeq, len(e.State().Cases), e.Done())
	}
	t.Logf("%d open cases compared (%d with a colleague's step ready, %d members' open cases they did a step of), %d cases reopened, %d opened by members counted", compared, ready, doers, reopened, opened)
	if compared < 1000 || ready < 100 || doers < 1000 || reopened == 0 || opened == 0 {
		t.Fatalf("%d open cases compared, %d reopened: too few to hold the list to anything", compared, reopened)
	}
}

// TestReopenableIsTheScan plays the worlds whose cases have a requester,
// with three seeds, long enough for cases to close with outcomes unmet and
// be reopened, and holds the cases a requester looks at (Reopenable) to a
// scan of every case after every batch: the same cases in the same order,
// in a state restored from a snapshot too (with each member's open cases
// it did a step of, and the open cases with a colleague's step ready).
func TestReopenableIsTheScan(t *testing.T) {
	compared, reopened, restored := 0, 0, 0
	for _, name := range worlds.Names() {
		w, err := worlds.Shipped(name)
		if err != nil {
			t.Fatal(err)
		}
		requester := map[string]bool{}
		for _, c := range w.Cases {
			requester[c.ID] = c.Requester != ""
		}
		if !slices.Contains(slices.Collect(maps.Values(requester)), true) {
			continue
		}
		for seed := uint64(3); seed <= 5; seed++ {
			batches := 0
			playCases(t, w, seed, &reopened, func(st *org.State) bool {
				var want []*org.Case
				for _, c := range st.Cases {
					if requester[c.Template] && c.Done() && c.Reopens < org.MaxReopens && len(c.Unmet()) > 0 {
						want = append(want, c)
					}
				}
				if got := st.Reopenable(); !slices.Equal(got, want) {
					t.Fatalf("%s at seq %d: %d cases reopenable by the list, %d by the scan", name, st.LastSeq, len(got), len(want))
				}
				compared += len(want)
				if len(want) > 0 && batches%5 == 0 {
					// A state restored from a snapshot files them again.
					rs, err := org.Restore(w, st.Snapshot())
					if err != nil {
						t.Fatal(err)
					}
					if rids, ids := caseIDs(rs.Reopenable()), caseIDs(want); !slices.Equal(rids, ids) {
						t.Fatalf("%s at seq %d: restored, %v are reopenable; before, %v", name, st.LastSeq, rids, ids)
					}
					if got, want := caseIDs(rs.ReadyCases()), caseIDs(st.ReadyCases()); !slices.Equal(got, want) {
						t.Fatalf("%s at seq %d: restored, %v have a colleague's step ready; before, %v", name, st.LastSeq, got, want)
					}
					for _, m := range rs.Members {
						if got, want := rs.DoerCases(m.ID), rs.DoerCasesScanned(m.ID); !slices.Equal(got, want) || len(want) != len(st.DoerCasesScanned(m.ID)) {
							t.Fatalf("%s at seq %d: restored, %s did a step of %d open cases by its list, %d by the scan", name, st.LastSeq, m.ID, len(got), len(want))
						}
					}
					restored++
				}
				batches++
				return batches < 30000
			})
		}
	}
	t.Logf("%d reopenable cases compared, %d cases reopened, %d states restored", compared, reopened, restored)
	if compared < 200 || reopened < 20 || restored < 10 {
		t.Fatalf("%d reopenable cases compared, %d reopened: too few to hold the list to anything", compared, reopened)
	}
}

// playCases plays world w at load 6 with seed, greedy and random agents,
// counting the cases reopened into *reopened and calling each with the
// state after every batch until it returns false; it returns the engine.
func playCases(t *testing.T, w *worlds.World, seed uint64, reopened *int, each func(*org.State) bool) *sim.Engine {
	t.Helper()
	e, err := sim.New(sim.Config{World: w, Seed: seed, Session: "s", Load: 6})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	err = sim.Play(e, func(evs []events.Event) bool {
		for _, ev := range evs {
			if ev.Type == payload.EvCaseReopened {
				*reopened++
			}
		}
		return each(e.State())
	}, simtest.Mixed(5, 7), 0)
	if err != nil && err != sim.ErrStopped {
		t.Fatal(err)
	}
	return e
}

func caseIDs(cs []*org.Case) []string {
	var ids []string
	for _, c := range cs {
		ids = append(ids, c.ID)
	}
	return ids
}

// TestViewBoundsTheCasesOfItsDoer: a member's view lists the listed limit
// of the open cases it did a step of beyond those its lists name, oldest
// first, and counts the ones it leaves out in CasesMore (a member of
// billing-support with a backlog was shown every one: thousands a turn).
func TestViewBoundsTheCasesOfItsDoer(t *testing.T) {
	w, err := worlds.Shipped("billing-support")
	if err != nil {
		t.Fatal(err)
	}
	const listed = 3
	e, err := sim.New(sim.Config{World: w, Seed: 1, Session: "s", Load: 20, Limits: org.Limits{Listed: listed}})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	cut, most := 0, 0
	err = sim.Play(e, func([]events.Event) bool {
		st := e.State()
		for _, m := range st.Members {
			o := st.View(m.ID)
			most = max(most, len(o.Cases))
			in := map[string]bool{}
			for _, c := range o.Cases {
				in[c.ID] = true
			}
			named := map[string]bool{}
			for _, list := range [][]org.TaskView{o.Assigned, o.Available, o.Upcoming, o.Ask} {
				for _, tv := range list {
					named[tv.Case] = true
				}
			}
			var beyond, left int
			for _, c := range st.DoerCasesScanned(m.ID) {
				switch {
				case named[c.ID]:
				case in[c.ID]:
					beyond++
				default:
					left++
				}
			}
			if left != o.CasesMore || left > 0 && beyond < listed {
				t.Fatalf("seq %d, %s: %d of the cases it did a step of listed beyond its lists' (limit %d), %d left out, cases_more %d",
					st.LastSeq, m.ID, beyond, listed, left, o.CasesMore)
			}
			if left > 0 {
				cut++
			}
		}
		return true
	}, simtest.Mixed(5, 7), 0)
	if err != nil && err != sim.ErrStopped {
		t.Fatal(err)
	}
	if cut == 0 {
		t.Fatal("no view had more cases than the limit: the test tests nothing")
	}
	t.Logf("%d views cut; the most cases a view listed: %d", cut, most)
}
