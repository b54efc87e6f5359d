package agents_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/org"
)

// ops is another team's budget, with left of it remaining.
func ops(left int64) *org.BudgetView {
	return &org.BudgetView{Team: "ops", Initial: 1000, Spent: 1000 - left, Remaining: left}
}

// bought is a purchase of 500 bob holds, worked and approved, paid from
// charges (nil: bob's own budget, 20000 left).
func bought(id string, charges *org.BudgetView) org.TaskView {
	t := held(task(id, clock.Hour, 5), clock.Hour)
	t.Purchase, t.Approval, t.Charges = 500, org.RequestApproved, charges
	return t
}

func ofType(acts []org.Action, typ string) []string {
	var out []string
	for _, a := range acts {
		if a.Type == typ {
			out = append(out, a.Task+a.Request)
		}
	}
	return out
}

// TestAgentsSpendTheBudgetATaskCharges: greedy and the planner complete a
// purchase only when the budget it is paid from covers it — another
// team's when the task charges it, whatever their own team has left — and
// the planner draws each budget down by what it completes in the turn.
// An approver rejects a request its task's budget cannot pay.
func TestAgentsSpendTheBudgetATaskCharges(t *testing.T) {
	greedy, err := agents.New("greedy", agents.Options{Member: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		held []org.TaskView
		want []string
	}{
		{"own budget", []org.TaskView{bought("a", nil)}, []string{"a"}},
		{"another's, too little", []org.TaskView{bought("a", ops(100))}, nil},
		{"another's, enough", []org.TaskView{bought("a", ops(600))}, []string{"a"}},
		{"another's, enough for one", []org.TaskView{bought("a", ops(600)), bought("b", ops(600)), bought("c", nil)}, []string{"a", "c"}},
	} {
		for name, a := range map[string]agents.Agent{"greedy": greedy, "planner": planner()} {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				o := observe()
				o.Assigned = tt.held
				got := ofType(decide(t, a, o), org.ActComplete)
				want := tt.want
				if name == "greedy" && tt.name == "another's, enough for one" {
					// Greedy keeps no account within a turn: it asks
					// for both, and the rules refuse the second.
					want = []string{"a", "b", "c"}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("completes %v; want %v", got, want)
				}
			})
		}
	}
	for _, left := range []int64{100, 600} {
		t.Run(fmt.Sprintf("approver, %d left", left), func(t *testing.T) {
			o := observe()
			o.Approvals = []org.RequestView{{ID: "r1", Task: "a", Requester: "carol", Amount: 500, Role: "engineer", Approver: "bob",
				Status: org.RequestPending, TaskAssignee: "carol", TaskPurchase: 500, TaskCharges: ops(left)}}
			acts := decide(t, greedy, o)
			rejected, approved := ofType(acts, org.ActReject), ofType(acts, org.ActApprove)
			if left < 500 && (len(rejected) != 1 || len(approved) != 0) || left >= 500 && (len(rejected) != 0 || len(approved) != 1) {
				t.Fatalf("with %d left: rejects %v, approves %v", left, rejected, approved)
			}
		})
	}
}

// TestAgentsTakeAWorkedTaskWithoutWorkingOnIt: a task handed over with its
// effort spent is taken and not worked on (the engine refuses work on it:
// nothing is left to do but complete it).
func TestAgentsTakeAWorkedTaskWithoutWorkingOnIt(t *testing.T) {
	greedy, err := agents.New("greedy", agents.Options{Member: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	for name, a := range map[string]agents.Agent{"greedy": greedy, "planner": planner()} {
		t.Run(name, func(t *testing.T) {
			o := observe()
			done := task("done", clock.Hour, 5)
			done.Spent = clock.Hour
			o.Available = []org.TaskView{done}
			acts := decide(t, a, o)
			if got := ofType(acts, org.ActClaim); !slices.Equal(got, []string{"done"}) {
				t.Fatalf("claims %v in %v; want done", got, acts)
			}
			if got := ofType(acts, org.ActWork); len(got) != 0 {
				t.Fatalf("works on %v; nothing is left to do", got)
			}
		})
	}
}

// TestGreedyLeavesWhatNoBudgetCanPay: greedy does not take a task whose
// purchase the budget it charges cannot pay (budgets are never refilled),
// however valuable, but for a ticket: the head of a queue served in order
// blocks the tickets behind it until someone holds it.
func TestGreedyLeavesWhatNoBudgetCanPay(t *testing.T) {
	greedy, err := agents.New("greedy", agents.Options{Member: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	dear := task("dear", clock.Hour, 9)
	dear.Purchase, dear.Charges = 500, ops(100)
	cheap := task("cheap", clock.Hour, 1)
	dearTicket := ticket("dear-ticket", 1, 9)
	dearTicket.Purchase, dearTicket.Charges = 500, ops(100)
	for _, tt := range []struct {
		name      string
		available []org.TaskView
		want      []string
	}{
		{"a dear task and a cheap one", []org.TaskView{dear, cheap}, []string{"cheap"}},
		{"a dear task alone", []org.TaskView{dear}, nil},
		{"a dear ticket", []org.TaskView{dearTicket, cheap}, []string{"dear-ticket"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := observe()
			o.Available = tt.available
			if got := ofType(decide(t, greedy, o), org.ActClaim); !slices.Equal(got, tt.want) {
				t.Fatalf("claims %v; want %v", got, tt.want)
			}
		})
	}
}

// TestAgentsWorkOnWhenWagesOverrunTheBudget: a team whose hourly rates have
// spent more than its budget may still complete and take work that buys
// nothing (the within-budget rule reads only purchases), so greedy, the
// planner and diligent go on: they stalled, and the session ended
// quiescent with the work undone.
func TestAgentsWorkOnWhenWagesOverrunTheBudget(t *testing.T) {
	overrun := func() org.Observation {
		o := observe()
		o.Budget = &org.BudgetView{Team: "product", Initial: 5, Spent: 20, Remaining: -15}
		return o
	}
	for _, name := range []string{"greedy", "planner", "diligent"} {
		a, err := agents.New(name, agents.Options{Member: "bob"})
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name+"/completes what it holds", func(t *testing.T) {
			o := overrun()
			o.Assigned = []org.TaskView{held(task("a", clock.Hour, 5), clock.Hour)}
			if got := ofType(decide(t, a, o), org.ActComplete); !slices.Equal(got, []string{"a"}) {
				t.Fatalf("completes %v; want [a]", got)
			}
		})
		t.Run(name+"/works on what it holds", func(t *testing.T) {
			o := overrun()
			o.Assigned = []org.TaskView{held(task("a", 2*clock.Hour, 5), clock.Hour)}
			if got := ofType(decide(t, a, o), org.ActWork); !slices.Equal(got, []string{"a"}) {
				t.Fatalf("works on %v; want [a]", got)
			}
		})
		t.Run(name+"/takes work that buys nothing", func(t *testing.T) {
			o := overrun()
			o.Available = []org.TaskView{task("a", clock.Hour, 5)}
			if got := ofType(decide(t, a, o), org.ActClaim); !slices.Equal(got, []string{"a"}) {
				t.Fatalf("claims %v; want [a]", got)
			}
		})
	}
}
