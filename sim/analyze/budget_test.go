package analyze_test

import (
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/worlds"
)

// budgetWorldSrc: two purchases of 800 from a budget of 1000; once one is
// bought the other cannot be.
const budgetWorldSrc = `version: 1
name: budget-unit
start: 2026-01-05T09:00:00Z
horizon: 10d
roles: [{id: eng}]
teams: [{id: t, budget: 1000}]
members:
  - {id: bob, role: eng, team: t}
  - {id: cat, role: eng, team: t}
queues: [{id: q, served_by: [eng]}]
approvals:
  - id: buy
    steps:
      - {role: eng, above: 1000}
projects:
  - id: p
    team: t
    queue: q
    deadline: 1d
    tasks:
      - {id: a, role: eng, effort: 1h, purchase: 800, approval: buy, value: 10}
      - {id: b, role: eng, effort: 1h, purchase: 800, approval: buy, value: 10}
`

// TestDiagnoseNamesTheBudgetHeldOrOpen: bob buys a at the end of the first
// hour; b, which the budget can then no longer pay, is lost to the budget
// whether cat did its work and holds it unpaid or nobody took it (left
// open, it is not "unclaimed" once nobody could have completed it).
func TestDiagnoseNamesTheBudgetHeldOrOpen(t *testing.T) {
	w, err := worlds.Load("budget-unit.yaml", []byte(budgetWorldSrc))
	if err != nil {
		t.Fatal(err)
	}
	for _, held := range []bool{true, false} {
		b := &logBuilder{tb: t, w: w}
		b.add(0, payload.EvSessionStarted, "", 0, payload.SessionStarted{Format: payload.LogFormat, World: w.Name, WorldFile: "budget-unit.yaml",
			WorldHash: w.Hash, Seed: 1, Load: 1, Source: budgetWorldSrc})
		var catWork uint64
		if held {
			b.do(0, "cat", 1, payload.EvTaskClaimed, payload.TaskClaimed{Task: "b"})
			catWork = b.do(0, "cat", 1, payload.EvWorkStarted, payload.WorkStarted{Task: "b", Work: clock.Duration(hour), Until: clock.Time(hour)})
		}
		b.do(0, "bob", 1, payload.EvTaskClaimed, payload.TaskClaimed{Task: "a"})
		ws := b.do(0, "bob", 1, payload.EvWorkStarted, payload.WorkStarted{Task: "a", Work: clock.Duration(hour), Until: clock.Time(hour)})
		if held {
			b.add(hour, payload.EvWorkFinished, "cat", catWork, payload.WorkFinished{Task: "b", Work: clock.Duration(hour)})
		}
		b.add(hour, payload.EvWorkFinished, "bob", ws, payload.WorkFinished{Task: "a", Work: clock.Duration(hour)})
		b.do(hour, "bob", ws, payload.EvTaskCompleted, payload.TaskCompleted{Task: "a"})
		b.turn(int64(w.Calendar.AddWork(0, 3*clock.Duration(w.Calendar.DayLength()))), "cat", 1)
		s := b.load()
		d := s.Diagnose()
		checkAddsUp(t, s, d)
		if len(d.Causes) == 0 || d.Causes[0].Cause != "budget" || d.Causes[0].Hours < 20 {
			t.Fatalf("held %v: causes %+v; want budget first, for the day after a was bought", held, d.Causes)
		}
		// Left open, b was unclaimed while it could still be bought (the
		// first hour, cat idle); then the budget held it up.
		if c, ok := cause(d, "unclaimed"); ok && (held || c.Hours > 1) {
			t.Fatalf("held %v: %v hours unclaimed; nobody could have completed b after the first", held, c.Hours)
		}
	}
}
