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
