package agents_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/org"
)

const day = 8 * clock.Hour

// observe makes an observation of member bob at 10h into a 200h world.
func observe() org.Observation {
	return org.Observation{Session: "s", Member: "bob", Role: "engineer", Team: "product", Turn: 3,
		Time: clock.Time(10 * clock.Hour), Horizon: clock.Time(200 * clock.Hour),
		Budget:    &org.BudgetView{Team: "product", Initial: 20000, Spent: 0, Remaining: 20000},
		Assigned:  []org.TaskView{},
		Available: []org.TaskView{}, Upcoming: []org.TaskView{}, Approvals: []org.RequestView{}, Requests: []org.RequestView{},
		Queues: []*org.QueueView{{ID: "backlog", Order: "fifo"}, {ID: "desk", Order: "priority"}}}
}

// task is an open project task of bob's role, due at 100h.
func task(id string, effort clock.Duration, value float64) org.TaskView {
	return org.TaskView{ID: id, Kind: org.KindTask, Queue: "backlog", Role: "engineer", Status: org.StatusOpen,
		Effort: effort, Value: value, Deadline: clock.Time(100 * clock.Hour)}
}

// held is task t held by bob with spent of its effort done.
func held(t org.TaskView, spent clock.Duration) org.TaskView {
	t.Status, t.Assignee, t.Spent = org.StatusClaimed, "bob", spent
	return t
}

func ticket(id string, priority int, value float64) org.TaskView {
	return org.TaskView{ID: id, Kind: org.KindTicket, Queue: "desk", Role: "engineer", Status: org.StatusOpen,
		Effort: 45 * clock.Minute, Value: value, Priority: priority, Deadline: clock.Time(14 * clock.Hour)}
}

func decide(tb testing.TB, a agents.Agent, o org.Observation) []org.Action {
	tb.Helper()
	acts, err := a.Decide(context.Background(), o)
	if err != nil {
		tb.Fatalf("Decide: %v", err)
	}
	return acts
}

func planner() agents.Agent { return agents.NewPlanner("bob") }

// claimed returns the task the actions claim and start work on, or "".
func started(acts []org.Action) string {
	for _, a := range acts {
		if a.Type == org.ActWork {
			return a.Task
		}
	}
	return ""
}

func find(acts []org.Action, typ string) []org.Action {
	var out []org.Action
	for _, a := range acts {
		if a.Type == typ {
			out = append(out, a)
		}
	}
	return out
}

func TestPlannerChoosesWork(t *testing.T) {
	late := task("late", 4*clock.Hour, 50)
	late.Deadline = clock.Time(5 * clock.Hour) // already past
	soon := task("soon", 4*clock.Hour, 2)
	soon.Deadline = clock.Time(40 * clock.Hour)
	head := task("head", 4*clock.Hour, 4)
	head.Dependents = 1
	chain := task("chain", 3*day, 24)
	chain.Deps, chain.Waiting = []string{"head"}, []string{"head"}
	tests := []struct {
		name      string
		available []org.TaskView
		upcoming  []org.TaskView
		assigned  []org.TaskView
		want      string
	}{
		{"critical path before value", []org.TaskView{task("shiny", 4*clock.Hour, 20), head}, []org.TaskView{chain}, nil, "head"},
		{"earliest deadline first", []org.TaskView{task("later", 4*clock.Hour, 30), soon}, nil, nil, "soon"},
		{"on time before late", []org.TaskView{late, task("ok", 2*clock.Hour, 1)}, nil, nil, "ok"},
		{"value breaks ties", []org.TaskView{task("low", 4*clock.Hour, 2), task("high", 4*clock.Hour, 8)}, nil, nil, "high"},
		{"ticket before project work", []org.TaskView{task("big", day, 40), ticket("tk-1", 1, 2)}, nil, nil, "tk-1"},
		{"higher priority ticket first", []org.TaskView{ticket("tk-1", 1, 2), ticket("tk-2", 3, 2)}, nil, nil, "tk-2"},
		{"finish what it holds", []org.TaskView{task("other", day, 40)}, nil, []org.TaskView{held(task("mine", day, 2), 2*clock.Hour)}, "mine"},
		{"a ticket preempts held project work", []org.TaskView{ticket("tk-1", 1, 2)}, nil, []org.TaskView{held(task("mine", day, 2), 2*clock.Hour)}, "tk-1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := observe()
			o.Available, o.Upcoming = tc.available, tc.upcoming
			if tc.assigned != nil {
				o.Assigned = tc.assigned
			}
			acts := decide(t, planner(), o)
			if got := started(acts); got != tc.want {
				t.Fatalf("works on %q, want %q (actions %+v)", got, tc.want, acts)
			}
			claims := find(acts, org.ActClaim)
			isHeld := len(tc.assigned) > 0 && tc.assigned[0].ID == tc.want
			if !isHeld && (len(claims) != 1 || claims[0].Task != tc.want) {
				t.Errorf("claims %+v, want just %q", claims, tc.want)
			}
			if isHeld && len(claims) != 0 {
				t.Errorf("claims %+v while working on what it holds", claims)
			}
		})
	}
}

func TestPlannerWorksATicketInOneGo(t *testing.T) {
	o := observe()
	o.Available = []org.TaskView{ticket("tk-1", 1, 2)}
	acts := decide(t, planner(), o)
	w := find(acts, org.ActWork)
	if len(w) != 1 || w[0].For != "45m" {
		t.Fatalf("got %+v, want work on tk-1 for its whole 45m", acts)
	}
}

func TestPlannerFollowsReprioritization(t *testing.T) {
	p := planner()
	o := observe()
	o.Available = []org.TaskView{task("mobile", 5*day, 30), task("web", 5*day, 20)}
	if got := started(decide(t, p, o)); got != "mobile" {
		t.Fatalf("first works on %q, want mobile", got)
	}
	// The same choice after mobile's value dropped (and the first claim lost a race).
	o.Turn++
	o.Available[0].Value, o.Available[0].Priority = 5, -1
	if got := started(decide(t, p, o)); got != "web" {
		t.Fatalf("after the reprioritization works on %q, want web", got)
	}
}

func TestPlannerAsksForInformationOnce(t *testing.T) {
	p := planner()
	info := &org.InfoView{From: "omar", Topic: "status-page"}
	mine := held(task("outage-1", 2*clock.Hour, 3), 0)
	mine.NeedsInfo = info

	// Holding it: ask at once, and start working meanwhile.
	o := observe()
	o.Assigned = []org.TaskView{mine}
	acts := decide(t, p, o)
	msgs := find(acts, org.ActMessage)
	if len(msgs) != 1 || msgs[0].To != "omar" || !strings.Contains(msgs[0].Text, "status-page") {
		t.Fatalf("got %+v, want one question to omar naming status-page", acts)
	}
	if started(acts) != "outage-1" {
		t.Errorf("got %+v, want it to work while the answer comes", acts)
	}

	// The question is awaiting an answer: no second one.
	o.Turn++
	o.Assigned[0].Spent = 2 * clock.Hour
	o.Awaiting = []org.MessageView{{ID: "m1", From: "omar", Text: msgs[0].Text}}
	acts = decide(t, p, o)
	if got := find(acts, org.ActMessage); len(got) != 0 {
		t.Fatalf("asked again while the question awaits an answer: %+v", got)
	}
	if got := find(acts, org.ActComplete); len(got) != 0 {
		t.Fatalf("completed before it had the information: %+v", got)
	}

	// The answer came: complete, and never ask again.
	o.Turn++
	o.Awaiting = nil
	o.Inbox = []org.MessageView{{ID: "m2", From: "omar", Text: "INC-42", Topic: "status-page"}}
	o.Assigned[0].NeedsInfo = &org.InfoView{From: "omar", Topic: "status-page", Known: true}
	acts = decide(t, p, o)
	if got := find(acts, org.ActComplete); len(got) != 1 || got[0].Task != "outage-1" {
		t.Fatalf("got %+v, want it to complete outage-1", acts)
	}
	o.Turn++
	o.Inbox = nil
	next := ticket("outage-2", 3, 3)
	// An open task's known is the viewer's: the view says it knows.
	next.NeedsInfo = &org.InfoView{From: "omar", Topic: "status-page", Known: true}
	o.Assigned, o.Available = nil, []org.TaskView{next}
	if got := find(decide(t, p, o), org.ActMessage); len(got) != 0 {
		t.Fatalf("asked again for what omar already said: %+v", got)
	}
}

func TestPlannerAsksBeforeTakingTheTask(t *testing.T) {
	o := observe()
	up := task("dpa", 2*clock.Hour, 3)
	up.NeedsInfo = &org.InfoView{From: "lee", Topic: "data-processing"}
	up.Deps, up.Waiting = []string{"terms"}, []string{"terms"}
	o.Upcoming = []org.TaskView{up}
	acts := decide(t, planner(), o)
	if msgs := find(acts, org.ActMessage); len(msgs) != 1 || msgs[0].To != "lee" || !strings.Contains(msgs[0].Text, "data-processing") {
		t.Fatalf("got %+v, want a question to lee about data-processing ahead of the task", acts)
	}
}

func TestPlannerRequestsApprovalEarly(t *testing.T) {
	buy := task("build-servers", 2*clock.Hour, 2)
	buy.Purchase, buy.Approval = 3000, "needed"

	t.Run("on claiming", func(t *testing.T) {
		o := observe()
		o.Available = []org.TaskView{buy}
		acts := decide(t, planner(), o)
		want := []org.Action{{Type: org.ActClaim, Task: "build-servers"}, {Type: org.ActRequestApproval, Task: "build-servers"},
			{Type: org.ActWork, Task: "build-servers"}}
		if !reflect.DeepEqual(acts, want) {
			t.Fatalf("got %+v, want %+v", acts, want)
		}
	})
	t.Run("held, before any work", func(t *testing.T) {
		o := observe()
		o.Assigned = []org.TaskView{held(buy, 0)}
		acts := decide(t, planner(), o)
		if len(acts) != 2 || acts[0] != (org.Action{Type: org.ActRequestApproval, Task: "build-servers"}) || acts[1].Type != org.ActWork {
			t.Fatalf("got %+v, want request_approval then work", acts)
		}
	})
	t.Run("not while it is pending", func(t *testing.T) {
		o := observe()
		h := held(buy, 2*clock.Hour)
		h.Approval = org.RequestPending
		o.Assigned = []org.TaskView{h}
		acts := decide(t, planner(), o)
		if !reflect.DeepEqual(acts, []org.Action{{Type: org.ActWait}}) {
			t.Fatalf("got %+v, want it to wait for the decision", acts)
		}
	})
	t.Run("complete once approved", func(t *testing.T) {
		o := observe()
		h := held(buy, 2*clock.Hour)
		h.Approval = org.RequestApproved
		o.Assigned = []org.TaskView{h}
		if got := find(decide(t, planner(), o), org.ActComplete); len(got) != 1 {
			t.Fatalf("got %+v, want it completed", got)
		}
	})
	t.Run("not beyond the budget", func(t *testing.T) {
		o := observe()
		o.Budget.Remaining = 1000
		o.Available = []org.TaskView{buy}
		o.Assigned = []org.TaskView{held(buy, 0)}
		o.Assigned[0].ID = "other-purchase"
		acts := decide(t, planner(), o)
		if len(find(acts, org.ActRequestApproval)) != 0 || len(find(acts, org.ActClaim)) != 0 {
			t.Fatalf("got %+v, want no request and no claim the budget cannot cover", acts)
		}
	})
}

func TestPlannerDecidesRequests(t *testing.T) {
	o := observe()
	o.Role = "lead"
	valid := org.RequestView{ID: "r1", Task: "servers", Requester: "carol", Amount: 3000, Status: org.RequestPending, TaskAssignee: "carol", TaskPurchase: 3000}
	wrongAmount := valid
	wrongAmount.ID, wrongAmount.Amount = "r2", 9000
	notHeld := valid
	notHeld.ID, notHeld.TaskAssignee = "r3", "dave"
	tooDear := valid
	tooDear.ID, tooDear.Amount, tooDear.TaskPurchase = "r4", 50000, 50000
	own := valid
	own.ID, own.Requester, own.TaskAssignee = "r5", "bob", "bob"
	o.Approvals = []org.RequestView{valid, wrongAmount, notHeld, tooDear, own}
	acts := decide(t, planner(), o)
	got := map[string]org.Action{}
	for _, a := range acts {
		if a.Request != "" {
			got[a.Request] = a
		}
	}
	if got["r1"].Type != org.ActApprove {
		t.Errorf("valid r1: got %+v, want approve", got["r1"])
	}
	for id, why := range map[string]string{"r2": "amount", "r3": "hold", "r4": "budget"} {
		if a := got[id]; a.Type != org.ActReject || !strings.Contains(a.Reason, why) {
			t.Errorf("%s: got %+v, want a reject whose reason mentions %q", id, a, why)
		}
	}
	if a, ok := got["r5"]; ok {
		t.Errorf("own request r5: got %+v, want no decision (either would break separation of duties)", a)
	}
	if acts[0].Request == "" {
		t.Errorf("decisions should come first, got %+v", acts)
	}
}

func TestPlannerSpreadsAmongEqualOptions(t *testing.T) {
	o := observe()
	o.Available = []org.TaskView{task("a", 4*clock.Hour, 4), task("b", 4*clock.Hour, 4), task("c", 4*clock.Hour, 4), task("d", 4*clock.Hour, 4)}
	picks := map[string]bool{}
	for _, m := range []string{"m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8"} {
		o.Member = m
		picks[started(decide(t, agents.NewPlanner(m), o))] = true
	}
	if len(picks) < 3 {
		t.Fatalf("8 members picked only %v among 4 equal tasks", picks)
	}
}

func TestPlannerWaitsForADownQueue(t *testing.T) {
	o := observe()
	o.Queues[0].DownUntil = clock.Time(14 * clock.Hour)
	o.Assigned = []org.TaskView{held(task("api", day, 8), 0)}
	acts := decide(t, planner(), o)
	want := []org.Action{{Type: org.ActWait, Until: int64(14 * clock.Hour)}}
	if !reflect.DeepEqual(acts, want) {
		t.Fatalf("got %+v, want %+v", acts, want)
	}
}

func TestPlannerHoldsAnUnaffordableTicketHeadingItsQueue(t *testing.T) {
	o := observe()
	o.Budget.Remaining = 500
	big := ticket("large-9", 0, 6)
	big.Queue, big.Purchase, big.Approval = "backlog", 40000, "needed"
	o.Available = []org.TaskView{big, task("spec", 4*clock.Hour, 4)}
	acts := decide(t, planner(), o)
	claims := find(acts, org.ActClaim)
	if len(claims) != 2 || started(acts) != "spec" || len(find(acts, org.ActRequestApproval)) != 0 {
		t.Fatalf("got %+v, want it to take large-9 off the queue without asking to buy it, and work on spec", acts)
	}
}

func TestPlannerIsDeterministic(t *testing.T) {
	obs := scenario("bob")
	if a, b := play(t, planner(), obs), play(t, planner(), obs); !reflect.DeepEqual(a, b) {
		t.Fatalf("same observations, different actions:\n%v\n%v", a, b)
	}
}
