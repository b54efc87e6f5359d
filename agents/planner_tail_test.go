package agents

import (
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/org"
)

// A task's tail is the effort left on the longest chain through the tasks
// seen waiting on it: its own effort less what was spent, then the longest
// of its dependents' tails. A task listed twice counts as first listed.
func TestPlanTailIsTheEffortLeftOnTheLongestChain(t *testing.T) {
	view := func(id string, effort, spent clock.Duration, deps ...string) org.TaskView {
		return org.TaskView{ID: id, Kind: org.KindTask, Effort: effort, Spent: spent, Deps: deps}
	}
	o := org.Observation{
		// a (5h, 2h done) <- b (3h) <- c (4h, 1h done); a <- d (1h); e overspent.
		Assigned:  []org.TaskView{view("a", 5*clock.Hour, 2*clock.Hour), view("e", clock.Hour, 2*clock.Hour)},
		Available: []org.TaskView{view("b", 3*clock.Hour, 0, "a"), view("d", clock.Hour, 0, "a"), view("a", 9*clock.Hour, 0)},
		Upcoming:  []org.TaskView{view("c", 4*clock.Hour, clock.Hour, "b")},
	}
	pl := newPlan(o, plannerConfig{nearTail: clock.Hour}, map[string]bool{})
	for id, want := range map[string]clock.Duration{
		"c": 3 * clock.Hour,
		"b": 6 * clock.Hour,
		"d": clock.Hour,
		"a": 9 * clock.Hour, // 3h left, then b's 6h
		"e": 0,              // more spent than its effort: nothing left
		"x": 0,              // not seen
	} {
		if got := pl.tail(id); got != want {
			t.Errorf("tail(%s): got %v, want %v", id, got, want)
		}
	}
}
