package tests

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim/app"
)

// approvalWorld: bob buys something that needs ann's approval (step 1,
// escalating after escalate) and, above 5000, cat's (step 2). ann reports to
// dan. Extra YAML is appended (interruptions).
func approvalWorld(tb testing.TB, escalate, extra string) string {
	tb.Helper()
	src := `version: 1
name: approvals
start: 2026-01-05T09:00:00Z
horizon: 10d
roles: [{id: eng}, {id: lead}, {id: director}]
teams: [{id: t, budget: 100000}]
members:
  - {id: ann, role: lead, team: t, manager: dan}
  - {id: bob, role: eng, team: t, manager: ann}
  - {id: cat, role: lead, team: t, manager: dan}
  - {id: dan, role: director, team: t}
queues: [{id: q, served_by: [eng]}]
approvals:
  - id: buy
    steps:
      - {role: lead, above: 100` + escalate + `}
projects:
  - id: p
    team: t
    queue: q
    deadline: 8d
    tasks:
      - {id: order, role: eng, effort: 1h, purchase: 3000}
      - {id: rollout, role: eng, effort: 4d, deps: [order]}
` + extra
	path := filepath.Join(tb.TempDir(), "approvals.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

func eventsOf(tb testing.TB, l events.Log, session, typ string) []events.Event {
	tb.Helper()
	var out []events.Event
	for _, ev := range readAll(tb, l, session) {
		if typ == "" || ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

func payloadOf[T any](tb testing.TB, ev events.Event) T {
	tb.Helper()
	var v T
	if err := json.Unmarshal(ev.Payload, &v); err != nil {
		tb.Fatalf("seq %d: %v", ev.Seq, err)
	}
	return v
}

// agentFunc adapts a function to agents.Agent.
type agentFunc func(org.Observation) []org.Action

func (f agentFunc) Decide(_ context.Context, o org.Observation) ([]org.Action, error) {
	return f(o), nil
}

// TestSeparationOfDuties: ann, a lead, does a purchase task herself, asks
// for approval and approves her own request in the same turn; dan tries to
// decide a step that waits for cat. Both are refused as recorded policy
// violations; the request goes to cat, the other lead, whose approval lets
// the order complete.
func TestSeparationOfDuties(t *testing.T) {
	world := approvalWorld(t, "", "")
	src, err := os.ReadFile(world)
	if err != nil {
		t.Fatal(err)
	}
	// The order is a lead's task here, so that a lead is the requester.
	src = []byte(strings.Replace(string(src), "{id: order, role: eng,", "{id: order, role: lead,", 1))
	src = []byte(strings.Replace(string(src), "served_by: [eng]", "served_by: [eng, lead]", 1))
	if err := os.WriteFile(world, src, 0o644); err != nil {
		t.Fatal(err)
	}
	l := memlog.New()
	ann := agentFunc(func(o org.Observation) []org.Action {
		for _, task := range o.Assigned {
			if task.ID == "order" && task.Spent >= task.Effort && task.Approval == "needed" {
				return []org.Action{{Type: org.ActRequestApproval, Task: "order"}, {Type: org.ActApprove, Request: "r1"}, {Type: org.ActWait}}
			}
		}
		acts, _ := (&agents.Greedy{}).Decide(context.Background(), o)
		return acts
	})
	cat := agentFunc(func(o org.Observation) []org.Action {
		if len(o.Approvals) > 0 && o.Turn%2 == 0 {
			return []org.Action{{Type: org.ActApprove, Request: o.Approvals[0].ID}, {Type: org.ActWait}}
		}
		return []org.Action{{Type: org.ActWait, For: "30m"}}
	})
	dan := agentFunc(func(o org.Observation) []org.Action {
		return []org.Action{{Type: org.ActApprove, Request: "r1"}, {Type: org.ActWait, For: "20m"}}
	})
	res := mustRun(t, app.RunOptions{World: world, Seed: 1, Agents: "greedy", Log: l,
		Seats: map[string]agents.Agent{"ann": ann, "cat": cat, "dan": dan}})
	var rules []string
	for _, ev := range eventsOf(t, l, res.Session, payload.EvActionRejected) {
		p := payloadOf[payload.ActionRejected](t, ev)
		if p.Kind == "policy" {
			rules = append(rules, ev.Actor+":"+p.Rule)
		}
	}
	joined := strings.Join(rules, " ")
	if !strings.Contains(joined, "ann:separation-of-duties") {
		t.Errorf("ann approving her own request was not refused as separation-of-duties: %v", rules)
	}
	if !strings.Contains(joined, "dan:approver-authority") {
		t.Errorf("dan deciding cat's step was not refused as approver-authority: %v", rules)
	}
	req := eventsOf(t, l, res.Session, payload.EvApprovalRequested)
	if len(req) != 1 || payloadOf[payload.ApprovalRequested](t, req[0]).Steps[0].Approver != "cat" {
		t.Fatalf("want one request routed to cat, got %v", req)
	}
	granted := eventsOf(t, l, res.Session, payload.EvApprovalGranted)
	if len(granted) != 1 || granted[0].Actor != "cat" {
		t.Fatalf("want exactly one grant, by cat; got %v", granted)
	}
	if res.Score.TasksDone != 2 || res.Ended != "complete" || res.Score.Violations != len(rules) {
		t.Fatalf("the order should complete once cat approves, with %d violations: %+v", len(rules), res.Score)
	}
}

// TestEscalation: ann never answers; after escalate_after of working time the
// step goes to her manager dan, who approves, and the order completes.
func TestEscalation(t *testing.T) {
	world := approvalWorld(t, ", escalate_after: 4h", "")
	l := memlog.New()
	res := mustRun(t, app.RunOptions{World: world, Seed: 1, Agents: "greedy,ann=idle", Log: l})
	esc := eventsOf(t, l, res.Session, payload.EvApprovalEscalated)
	if len(esc) != 1 {
		t.Fatalf("got %d escalations, want 1", len(esc))
	}
	p := payloadOf[payload.ApprovalEscalated](t, esc[0])
	if p.From != "ann" || p.To != "dan" || p.Reason != "timeout" {
		t.Fatalf("escalated %+v, want ann -> dan for timeout", p)
	}
	req := eventsOf(t, l, res.Session, payload.EvApprovalRequested)[0]
	w, _, _ := app.LoadWorld(world)
	if waited := w.Calendar.WorkBetween(clockTime(req.Time), clockTime(esc[0].Time)); waited != 4*hour {
		t.Fatalf("escalated after %s of working time, want 4h", waited)
	}
	granted := eventsOf(t, l, res.Session, payload.EvApprovalGranted)
	if len(granted) != 1 || granted[0].Actor != "dan" {
		t.Fatalf("want dan to grant the escalated step, got %v", granted)
	}
	if res.Score.TasksDone != 2 || len(res.Score.Unverified) != 0 {
		t.Fatalf("the order should complete and verify: %+v", res.Score)
	}
}

// TestLeaveAndDelegation: ann goes on leave with cat as her delegate while
// bob's request waits for her: the step moves to cat ("leave"), a request
// made during the leave is routed to cat directly, and ann is back (and
// asked to decide again) when her leave ends.
func TestLeaveAndDelegation(t *testing.T) {
	extra := `interruptions:
  - {at: 2h, kind: leave, member: ann, for: 2d, delegate: cat}
`
	world := approvalWorld(t, "", extra)
	l := memlog.New()
	// bob asks at once (the task has 1h of work; he asks first).
	bob := agentFunc(func(o org.Observation) []org.Action {
		acts, _ := (&agents.Greedy{}).Decide(context.Background(), o)
		return acts
	})
	// cat waits until she is the approver; ann never decides before leaving.
	res := mustRun(t, app.RunOptions{World: world, Seed: 1, Agents: "greedy,ann=idle", Log: l,
		Seats: map[string]agents.Agent{"bob": bob}})
	left := eventsOf(t, l, res.Session, payload.EvMemberLeft)
	if len(left) != 1 || left[0].Actor != "ann" {
		t.Fatalf("want ann's leave recorded once, got %v", left)
	}
	lp := payloadOf[payload.MemberLeft](t, left[0])
	if lp.Delegate != "cat" {
		t.Fatalf("leave %+v, want delegate cat", lp)
	}
	var routed []string
	for _, ev := range eventsOf(t, l, res.Session, "") {
		switch ev.Type {
		case payload.EvApprovalEscalated:
			p := payloadOf[payload.ApprovalEscalated](t, ev)
			routed = append(routed, p.From+"->"+p.To+":"+p.Reason)
		case payload.EvApprovalRequested:
			p := payloadOf[payload.ApprovalRequested](t, ev)
			routed = append(routed, "requested:"+p.Steps[0].Approver)
		}
	}
	joined := strings.Join(routed, " ")
	if !strings.Contains(joined, "cat") {
		t.Fatalf("nothing reached the delegate cat: %v", routed)
	}
	granted := eventsOf(t, l, res.Session, payload.EvApprovalGranted)
	if len(granted) != 1 || granted[0].Actor != "cat" {
		t.Fatalf("want cat to grant as ann's delegate, got %d grants", len(granted))
	}
	if granted[0].Time >= int64(lp.Until) {
		t.Fatalf("cat granted at %d, after ann was back at %d", granted[0].Time, lp.Until)
	}
	back := eventsOf(t, l, res.Session, payload.EvMemberReturned)
	if len(back) != 1 || back[0].Actor != "ann" || back[0].Time != int64(lp.Until) {
		t.Fatalf("want ann back at %d, got %v", lp.Until, back)
	}
	if res.Score.TasksDone != 2 {
		t.Fatalf("both tasks should complete: %+v", res.Score)
	}
}

const hour = clockDuration(3600000)

type clockDuration = clock.Duration

func clockTime(ms int64) clock.Time { return clock.Time(ms) }

// TestHandoffAndEscalate: bob hands his task back to the queue and claims it
// again; a handoff to someone who cannot take it is refused; when ann sits on
// his request, bob escalates it to her manager dan, who approves.
func TestHandoffAndEscalate(t *testing.T) {
	world := approvalWorld(t, "", "")
	l := memlog.New()
	step := 0
	bob := agentFunc(func(o org.Observation) []org.Action {
		step++
		switch step {
		case 1:
			return []org.Action{{Type: org.ActClaim, Task: "order"}, {Type: org.ActHandoff, Task: "order", To: "cat"}, {Type: org.ActHandoff, Task: "order"}}
		}
		for _, r := range o.Requests {
			if r.Status == org.RequestPending && r.Approver == "ann" {
				return []org.Action{{Type: org.ActEscalate, Request: r.ID}, {Type: org.ActWait}}
			}
		}
		acts, _ := (&agents.Greedy{}).Decide(context.Background(), o)
		for i := range acts {
			if acts[i].Type == org.ActWait && acts[i].For == "" {
				acts[i].For = "1h" // look again in an hour: ann may still be sitting on it
			}
		}
		return acts
	})
	res := mustRun(t, app.RunOptions{World: world, Seed: 1, Agents: "greedy,ann=idle", Log: l, Seats: map[string]agents.Agent{"bob": bob}})
	handed := eventsOf(t, l, res.Session, payload.EvTaskHandedOff)
	if len(handed) != 1 || payloadOf[payload.TaskHandedOff](t, handed[0]).To != "" {
		t.Fatalf("want one handoff back to the queue, got %v", handed)
	}
	var refusedToCat bool
	for _, ev := range eventsOf(t, l, res.Session, payload.EvActionRejected) {
		p := payloadOf[payload.ActionRejected](t, ev)
		if p.Action.Type == org.ActHandoff && p.Action.To == "cat" && strings.Contains(p.Reason, "cannot take") {
			refusedToCat = true
		}
	}
	if !refusedToCat {
		t.Error("a handoff to cat, who cannot do an engineer's task, was not refused")
	}
	esc := eventsOf(t, l, res.Session, payload.EvApprovalEscalated)
	if len(esc) != 1 {
		t.Fatalf("got %d escalations, want 1", len(esc))
	}
	if p := payloadOf[payload.ApprovalEscalated](t, esc[0]); esc[0].Actor != "bob" || p.Reason != "requested" || p.From != "ann" || p.To != "dan" {
		t.Fatalf("escalation %+v by %s, want bob's request moved from ann to dan", p, esc[0].Actor)
	}
	granted := eventsOf(t, l, res.Session, payload.EvApprovalGranted)
	if len(granted) != 1 || granted[0].Actor != "dan" || res.Score.TasksDone != 2 || len(res.Score.Unverified) != 0 {
		t.Fatalf("want dan's grant and both tasks verified; grants %v, score %+v", granted, res.Score)
	}
}
