package org_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// chargedWorld has a purchase of the ops team's project that an engineer
// of the dev team may take: it is paid from ops's budget, not dev's.
const chargedWorld = `version: 1
name: charged
start: 2026-01-05T09:00:00Z
horizon: 5d
calendar: {hours: "09:00-17:00", workdays: [mon, tue, wed, thu, fri]}
roles:
  - {id: engineer}
  - {id: lead}
teams:
  - {id: dev, budget: 1000}
  - {id: ops, budget: 100}
members:
  - {id: bob, role: engineer, team: dev}
  - {id: olga, role: engineer, team: ops}
  - {id: lee, role: lead, team: dev}
  - {id: oli, role: lead, team: ops}
queues:
  - {id: backlog, served_by: [engineer]}
approvals:
  - id: purchases
    steps:
      - {role: lead, above: 0}
projects:
  - id: p
    team: ops
    queue: backlog
    deadline: 5d
    tasks:
      - {id: buy, title: Buy a server, role: engineer, effort: 1h, value: 1, purchase: 500}
      - {id: fix, title: Fix it, role: engineer, effort: 1h, value: 1}
`

// TestATaskShowsTheBudgetItCharges: a purchase paid from another team's
// budget shows that budget to the member viewing it (charges), as the
// request for it shows it to the approver (task_charges); the member of the
// paying team, whose own budget is the observation's, sees none, and a
// task with no purchase charges nothing. The within-budget rule and an NPC
// approver read the task's team's budget: a member comparing the purchase
// with its own would be misled (dev has 1000 left, ops 100).
func TestATaskShowsTheBudgetItCharges(t *testing.T) {
	w, err := worlds.Load("charged.yaml", []byte(chargedWorld))
	if err != nil {
		t.Fatal(err)
	}
	st := org.New(w)
	mustApply(t, st, ev(t, 1, 0, payload.EvSessionStarted, "", payload.SessionStarted{Format: payload.LogFormat, World: "charged", Seed: 1}))
	charges := func(member string, list func(org.Observation) []org.TaskView) map[string]*org.BudgetView {
		t.Helper()
		out := map[string]*org.BudgetView{}
		for _, v := range list(st.View(member)) {
			out[v.ID] = v.Charges
		}
		if len(out) != 2 {
			t.Fatalf("%s sees %v, want buy and fix", member, out)
		}
		return out
	}
	available := func(o org.Observation) []org.TaskView { return o.Available }
	want := org.BudgetView{Team: "ops", Initial: 100, Remaining: 100}
	if c := charges("bob", available); c["buy"] == nil || *c["buy"] != want || c["fix"] != nil {
		t.Fatalf("bob sees buy charging %+v and fix %+v; want %+v and nothing", c["buy"], c["fix"], want)
	}
	if c := charges("olga", available); c["buy"] != nil {
		t.Fatalf("olga of ops sees buy charging %+v; her own budget pays it", c["buy"])
	}
	mustApply(t, st,
		ev(t, 2, 0, payload.EvTaskClaimed, "bob", payload.TaskClaimed{Task: "buy", BusyUntil: clock.Time(5 * minute)}),
		ev(t, 3, 0, payload.EvTaskClaimed, "bob", payload.TaskClaimed{Task: "fix", BusyUntil: clock.Time(10 * minute)}),
		ev(t, 4, 10*minute, payload.EvApprovalRequested, "bob", payload.ApprovalRequested{Request: "r1", Task: "buy", Chain: "purchases",
			Amount: 500, Steps: []payload.RequestStep{{Role: "lead", Approver: "lee"}}, BusyUntil: clock.Time(15 * minute)}),
	)
	if c := charges("bob", func(o org.Observation) []org.TaskView { return o.Assigned }); c["buy"] == nil || *c["buy"] != want {
		t.Fatalf("bob holds buy charging %+v; want %+v", c["buy"], want)
	}
	o := st.View("lee")
	if len(o.Approvals) != 1 || o.Approvals[0].TaskCharges == nil || *o.Approvals[0].TaskCharges != want {
		t.Fatalf("lee's approvals %+v; want r1 with task_charges %+v", o.Approvals, want)
	}
	if o.Budget == nil || o.Budget.Team != "dev" || o.Budget.Remaining != 1000 {
		t.Fatalf("lee's budget %+v; want dev's 1000", o.Budget)
	}
	approvals, requests, _ := st.ScanLists("bob")
	if len(approvals) != 0 || len(requests) != 1 || requests[0].TaskCharges == nil || *requests[0].TaskCharges != want {
		t.Fatalf("bob's requests %+v; want r1 with task_charges %+v", requests, want)
	}
}

// TestDearTasksAreListedLast: a task whose purchase the budget it charges
// can no longer pay is listed after the tasks that can be done, however
// valuable: a backlog of such tasks, cut at the listed limit, hid the work
// a member could do. The view moves them aside as it finds them, and a
// restored state, which has moved none, shows the same.
func TestDearTasksAreListedLast(t *testing.T) {
	src := strings.Replace(chargedWorld, "value: 1, purchase: 500", "value: 9, purchase: 500", 1)
	w, err := worlds.Load("charged.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, listed := range []int{1, 2} {
		st := org.New(w)
		mustApply(t, st, ev(t, 1, 0, payload.EvSessionStarted, "", payload.SessionStarted{Format: payload.LogFormat, World: "charged", Seed: 1,
			Limits: payload.Limits{Listed: listed}}))
		want := []string{"fix", "buy"}[:listed]
		for _, member := range []string{"bob", "olga", "bob"} {
			o := st.View(member)
			if got := ids(o.Available); !slices.Equal(got, want) || o.AvailableMore != 2-listed {
				t.Fatalf("listed %d: %s sees %v and %d more; want %v and %d more", listed, member, got, o.AvailableMore, want, 2-listed)
			}
			if scan := st.ScanView(member); !slices.Equal(ids(scan.Available), want) {
				t.Fatalf("listed %d: the scan of %s's view lists %v; want %v", listed, member, ids(scan.Available), want)
			}
			// What the dispatcher offers does not depend on what views
			// moved aside: the most valuable ready task, dear or not.
			if got, want := st.OpenFor(member); got != "buy" || want != "buy" {
				t.Fatalf("listed %d: open for %s: %q, the walk %q; want buy", listed, member, got, want)
			}
		}
		back, err := org.Restore(w, st.Snapshot())
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(back.View("bob").Available); !slices.Equal(got, want) {
			t.Fatalf("listed %d: restored, bob sees %v; want %v", listed, got, want)
		}
	}
}
