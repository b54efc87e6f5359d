package org_test

import (
	"slices"
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

func heldIDs(st *org.State, member string) []string {
	var out []string
	for _, t := range st.Held(member) {
		out = append(out, t.ID)
	}
	return out
}

// TestHeldOrderSurvivesRestore: what a member holds is listed in the same
// order by a state restored from a snapshot as by the state that took it.
func TestHeldOrderSurvivesRestore(t *testing.T) {
	st := mustState(t, started(t),
		ev(t, 2, 0, payload.EvTaskClaimed, "bob", payload.TaskClaimed{Task: "db-schema", BusyUntil: clock.Time(5 * minute)}),
		ev(t, 3, 5*minute, payload.EvTaskClaimed, "bob", payload.TaskClaimed{Task: "api", BusyUntil: clock.Time(10 * minute)}),
	)
	live := heldIDs(st, "bob")
	back, err := org.Restore(mustWorld(t), st.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	if restored := heldIDs(back, "bob"); !slices.Equal(live, restored) {
		t.Fatalf("bob holds %v live, %v restored", live, restored)
	}
}

// TestAssignedIsCutAtTheListedLimit: a view lists what its member holds
// oldest first, at most the session's listed limit of them, and counts
// the rest in AssignedMore, as the scan of every held task would.
func TestAssignedIsCutAtTheListedLimit(t *testing.T) {
	start := ev(t, 1, 0, payload.EvSessionStarted, "", payload.SessionStarted{Format: payload.LogFormat, World: "startup", Seed: 1,
		Limits: payload.Limits{Listed: 2}})
	st := mustState(t, start,
		ev(t, 2, 0, payload.EvTaskClaimed, "bob", payload.TaskClaimed{Task: "build-servers", BusyUntil: clock.Time(5 * minute)}),
		ev(t, 3, 5*minute, payload.EvTaskClaimed, "bob", payload.TaskClaimed{Task: "api", BusyUntil: clock.Time(10 * minute)}),
		ev(t, 4, 10*minute, payload.EvTaskClaimed, "bob", payload.TaskClaimed{Task: "db-schema", BusyUntil: clock.Time(15 * minute)}),
	)
	o := st.View("bob")
	if got := ids(o.Assigned); !slices.Equal(got, []string{"api", "db-schema"}) || o.AssignedMore != 1 {
		t.Fatalf("bob's view lists %v and %d more; want [api db-schema] and 1 more", got, o.AssignedMore)
	}
	if scan := st.ScanView("bob"); !slices.Equal(ids(scan.Assigned), ids(o.Assigned)) || scan.AssignedMore != o.AssignedMore {
		t.Fatalf("the scan lists %v and %d more", ids(scan.Assigned), scan.AssignedMore)
	}
}

// knownWorld has one task that needs what sam knows, open to two engineers.
const knownWorld = `version: 1
name: known
start: 2026-01-05T09:00:00Z
horizon: 5d
calendar: {hours: "09:00-17:00", workdays: [mon, tue, wed, thu, fri]}
roles:
  - {id: engineer}
  - {id: expert}
teams:
  - {id: t, budget: 0}
members:
  - {id: bob, role: engineer, team: t}
  - {id: carol, role: engineer, team: t}
  - {id: sam, role: expert, team: t, npc: {reply: {min: 1h, max: 1h}, knows: {logs: "Rotate them daily."}}}
queues:
  - {id: backlog, served_by: [engineer, expert]}
projects:
  - id: p
    team: t
    queue: backlog
    deadline: 5d
    tasks:
      - {id: audit, title: Audit the logs, role: engineer, effort: 1h, value: 1, info: {from: sam, topic: logs}}
`

// TestOpenTaskKnownIsTheViewers: of a task no one holds, needs_info.known
// says whether the member viewing it knows the topic (what it would know
// once it held it); of a held task, whether its holder does.
func TestOpenTaskKnownIsTheViewers(t *testing.T) {
	w, err := worlds.Load("known.yaml", []byte(knownWorld))
	if err != nil {
		t.Fatal(err)
	}
	st := org.New(w)
	mustApply(t, st,
		ev(t, 1, 0, payload.EvSessionStarted, "", payload.SessionStarted{Format: payload.LogFormat, World: "known", Seed: 1}),
		ev(t, 2, 0, payload.EvMessageSent, "sam", payload.MessageSent{Message: "m1", To: "bob", Text: "rotate them", Topic: "logs", DeliverAt: clock.Time(hour)}),
		ev(t, 3, hour, payload.EvMessageDelivered, "", payload.MessageDelivered{Message: "m1"}),
	)
	known := func(member string, list func(org.Observation) []org.TaskView) bool {
		t.Helper()
		ls := list(st.View(member))
		if len(ls) != 1 || ls[0].ID != "audit" || ls[0].NeedsInfo == nil {
			t.Fatalf("%s sees %v, want audit with what it needs", member, ids(ls))
		}
		return ls[0].NeedsInfo.Known
	}
	available := func(o org.Observation) []org.TaskView { return o.Available }
	if !known("bob", available) || known("carol", available) {
		t.Fatalf("audit open: bob sees known=%v, carol %v; want true (sam told bob), false", known("bob", available), known("carol", available))
	}
	mustApply(t, st, ev(t, 4, hour, payload.EvTaskClaimed, "carol", payload.TaskClaimed{Task: "audit", BusyUntil: clock.Time(hour + 5*minute)}))
	if known("carol", func(o org.Observation) []org.TaskView { return o.Assigned }) {
		t.Fatal("carol holds audit and sees it known; sam told bob, not her")
	}
}
