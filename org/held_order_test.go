package org_test

import (
	"slices"
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
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
