package agents

import (
	"math"
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/org"
)

// A task's tail is the effort left on the longest chain through the tasks
// seen waiting on it: its own effort less what was spent, then the longest
// of its dependents' tails. A task listed twice counts as first listed; a
// task not seen has no tail.
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
	pl := newPlan(o, plannerConfig{nearTail: clock.Hour})
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
	// A dependency on a task not seen is no chain, and a cycle (which a
	// valid world cannot have) ends where it began: each task's tail is
	// its effort left and that of the tasks after it around the cycle.
	o = org.Observation{Available: []org.TaskView{
		view("p", 2*clock.Hour, 0, "q", "hidden"), view("q", 3*clock.Hour, 0, "p"), view("r", clock.Hour, 0, "hidden"),
	}}
	pl = newPlan(o, plannerConfig{nearTail: clock.Hour})
	for _, c := range []struct {
		id   string
		want clock.Duration
	}{{"p", 5 * clock.Hour}, {"q", 3 * clock.Hour}, {"r", clock.Hour}, {"hidden", 0}} {
		if got := pl.tail(c.id); got != c.want {
			t.Errorf("cycle: tail(%s): got %v, want %v", c.id, got, c.want)
		}
	}
}

// The cutoff worked out from the purchases seen is the same whether the
// planner kept its sorted purchases from an earlier decision or sorts
// them afresh: it sorts again once it has seen more.
func TestCutoffFollowsThePurchasesSeen(t *testing.T) {
	o := org.Observation{Time: clock.Time(10 * clock.Hour), Horizon: clock.Time(100 * clock.Hour), Budget: &org.BudgetView{Remaining: 500}}
	see := func(p *Planner, n int) {
		for i := range n {
			id := string(rune('a'+i%26)) + string(rune('a'+i/26))
			if _, ok := p.seen[id]; !ok {
				p.seen[id] = purchase{amount: int64(10 + i*7%13), value: float64(1 + i*5%11)}
			}
		}
	}
	kept := NewPlanner("m")
	for _, n := range []int{4, 6, 9, 9, 30, 31} {
		see(kept, n)
		fresh := NewPlanner("m")
		see(fresh, n)
		got, want := kept.cutoff(o), fresh.cutoff(o)
		if got != want {
			t.Errorf("%d purchases seen: cutoff %v after earlier decisions, %v afresh", n, got, want)
		}
		if n >= 9 && math.IsInf(want, 1) {
			t.Errorf("%d purchases seen: the test's budget should be short (cutoff +Inf)", n)
		}
	}
}
