package agents_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/org"
)

// scenario is a sequence of observations of one member with a bit of everything.
func scenario(member string) []org.Observation {
	var out []org.Observation
	for i := range 30 {
		o := org.Observation{Session: "s", Member: member, Role: "engineer", Team: "product", Turn: uint64(i + 1),
			Time: clock.Time(i) * clock.Time(clock.Hour), Horizon: clock.Time(100 * clock.Hour),
			Budget: &org.BudgetView{Team: "product", Initial: 10000, Remaining: 8000, Spent: 2000}}
		o.Available = []org.TaskView{
			{ID: fmt.Sprintf("t%d", i), Kind: org.KindTask, Status: org.StatusOpen, Effort: 2 * clock.Hour, Value: 2},
			{ID: fmt.Sprintf("u%d", i), Kind: org.KindTask, Status: org.StatusOpen, Effort: 4 * clock.Hour, Value: 4, Dependents: 1},
		}
		o.Assigned = []org.TaskView{
			{ID: "held", Kind: org.KindTask, Status: org.StatusClaimed, Assignee: member, Effort: 4 * clock.Hour, Spent: clock.Duration(i%3) * 2 * clock.Hour,
				NeedsInfo: &org.InfoView{From: "omar", Topic: "status-page"}},
			{ID: "servers", Kind: org.KindTask, Status: org.StatusClaimed, Assignee: member, Effort: clock.Hour, Spent: clock.Hour,
				Purchase: 3000, Approval: "needed"},
		}
		if i%4 == 0 {
			o.Approvals = []org.RequestView{{ID: fmt.Sprintf("r%d", i), Task: "x", Requester: "carol", Amount: 900, Status: org.RequestPending,
				TaskAssignee: "carol", TaskPurchase: 900}}
		}
		if i%5 == 0 {
			o.Inbox = []org.MessageView{{ID: fmt.Sprintf("m%d", i), From: "alice", Text: "hello"}}
		}
		out = append(out, o)
	}
	return out
}

func play(tb testing.TB, a agents.Agent, obs []org.Observation) [][]org.Action {
	tb.Helper()
	var out [][]org.Action
	for _, o := range obs {
		acts, err := a.Decide(context.Background(), o)
		if err != nil {
			tb.Fatalf("turn %d: %v", o.Turn, err)
		}
		out = append(out, acts)
	}
	return out
}

func mustNew(tb testing.TB, name string, o agents.Options) agents.Agent {
	tb.Helper()
	a, err := agents.New(name, o)
	if err != nil {
		tb.Fatalf("New(%q): %v", name, err)
	}
	return a
}

func TestRandomIsDeterministic(t *testing.T) {
	obs := scenario("bob")
	first := play(t, mustNew(t, "random", agents.Options{Seed: 7, Member: "bob"}), obs)
	again := play(t, mustNew(t, "random", agents.Options{Seed: 7, Member: "bob"}), obs)
	if !reflect.DeepEqual(first, again) {
		t.Fatalf("same seed, member and observations gave different actions:\n%v\n%v", first, again)
	}
	for _, other := range []agents.Options{{Seed: 8, Member: "bob"}, {Seed: 7, Member: "carol"}} {
		if got := play(t, mustNew(t, "random", other), obs); reflect.DeepEqual(first, got) {
			t.Errorf("%+v played exactly like seed 7, bob: the stream does not depend on both", other)
		}
	}
}

func TestRandomPicksPlausibleActions(t *testing.T) {
	obs := scenario("bob")
	kinds := map[string]int{}
	for seed := range uint64(20) {
		for i, acts := range play(t, agents.NewRandom(seed, "bob"), obs) {
			o := obs[i]
			if len(acts) == 0 || len(acts) > 2 {
				t.Fatalf("seed %d turn %d: %d actions, want 1 or 2", seed, o.Turn, len(acts))
			}
			for _, a := range acts {
				kinds[a.Type]++
				switch a.Type {
				case org.ActClaim:
					if !hasTask(o.Available, a.Task) {
						t.Errorf("claims %q, which is not available", a.Task)
					}
				case org.ActWork, org.ActComplete, org.ActRequestApproval:
					if !hasTask(o.Available, a.Task) && !hasTask(o.Assigned, a.Task) {
						t.Errorf("%s on %q, which it neither holds nor may take", a.Type, a.Task)
					}
				case org.ActApprove, org.ActReject:
					if len(o.Approvals) == 0 || o.Approvals[0].ID != a.Request {
						t.Errorf("decides %q, which does not wait for it", a.Request)
					}
				case org.ActMessage:
					if a.To == "" || a.To == "bob" || a.Text == "" {
						t.Errorf("bad message %+v", a)
					}
				case org.ActHandoff:
					if !hasTask(o.Assigned, a.Task) {
						t.Errorf("hands off %q, which it does not hold", a.Task)
					}
				case org.ActEscalate:
					if len(o.Requests) == 0 {
						t.Errorf("escalates %q with no request of its own", a.Request)
					}
				case org.ActWait:
				default:
					t.Errorf("unknown action %+v", a)
				}
			}
		}
	}
	for _, k := range org.ActionTypes {
		if k == org.ActHandoff || k == org.ActEscalate || k == org.ActOpenCase || k == org.ActDecide || k == org.ActScheduleMeeting || slices.Contains(org.RecordActions, k) {
			continue // the scenario has no blocked task held, no pending request of bob's, no case template (nothing to decide), no meetings and no systems
		}
		if kinds[k] == 0 {
			t.Errorf("over 20 seeds it never chose %s (chose %v)", k, kinds)
		}
	}
}

func TestRandomWaitsWhenNothingIsOffered(t *testing.T) {
	a := agents.NewRandom(1, "bob")
	acts, err := a.Decide(context.Background(), org.Observation{Member: "bob", Turn: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(acts, []org.Action{{Type: org.ActWait}}) {
		t.Fatalf("got %+v, want a plain wait", acts)
	}
}

func TestBuiltinsIncludeRandomAndPlanner(t *testing.T) {
	names := agents.Names()
	for _, n := range []string{"idle", "random", "greedy", "planner", "cheater"} {
		if !slices.Contains(names, n) {
			t.Errorf("Names() = %v lacks %q", names, n)
		}
		mustNew(t, n, agents.Options{Seed: 1, Member: "bob"})
	}
}

func hasTask(ts []org.TaskView, id string) bool {
	return slices.ContainsFunc(ts, func(t org.TaskView) bool { return t.ID == id })
}
