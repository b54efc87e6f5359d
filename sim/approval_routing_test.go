package sim_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/simtest"
)

// timed is one scripted move of a member: its actions at its first turn
// at or after At.
type timed struct {
	At   clock.Duration
	Acts []org.Action
}

// playTimed plays src with seed 1: each member in script makes its moves
// in order, each at its first turn at or after the move's time, waiting
// in between; the others wait. It returns the events and the final state.
func playTimed(tb testing.TB, src string, script map[string][]timed) ([]events.Event, *org.State) {
	tb.Helper()
	e, _ := simtest.Started(tb, "w.yaml", []byte(src), 1)
	var out []events.Event
	err := sim.Play(e, func(b []events.Event) bool {
		for i := range b {
			out = append(out, b[i].Clone())
		}
		return true
	}, func(tn sim.Turn) (sim.Answer, bool) {
		ans := sim.Answer{Member: tn.Member, Turn: tn.Observation.Turn, Actions: []org.Action{}}
		moves := script[tn.Member]
		switch {
		case len(moves) == 0:
		case clock.Time(moves[0].At) > e.Now():
			ans.Actions = []org.Action{{Type: org.ActWait, Until: int64(moves[0].At)}}
		default:
			ans.Actions = moves[0].Acts
			script[tn.Member] = moves[1:]
		}
		return ans, true
	}, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return out, e.State()
}

// approvalStory is what the events say about approvals, purchases and
// refusals, a line each.
func approvalStory(tb testing.TB, evs []events.Event) string {
	tb.Helper()
	var b strings.Builder
	for _, ev := range evs {
		switch ev.Type {
		case payload.EvApprovalRequested:
			var p payload.ApprovalRequested
			mustJSON(tb, ev.Payload, &p)
			var to []string
			for _, st := range p.Steps {
				to = append(to, st.Approver)
			}
			fmt.Fprintf(&b, "%s requested %s for %s -> %s\n", ev.Actor, p.Request, p.Task, strings.Join(to, ", "))
		case payload.EvApprovalEscalated:
			var p payload.ApprovalEscalated
			mustJSON(tb, ev.Payload, &p)
			fmt.Fprintf(&b, "escalated %s step %d %s -> %s (%s)\n", p.Request, p.Step, p.From, p.To, p.Reason)
		case payload.EvApprovalGranted:
			var p payload.ApprovalDecided
			mustJSON(tb, ev.Payload, &p)
			fmt.Fprintf(&b, "%s granted %s step %d\n", ev.Actor, p.Request, p.Step)
		case payload.EvTaskHandedOff:
			var p payload.TaskHandedOff
			mustJSON(tb, ev.Payload, &p)
			fmt.Fprintf(&b, "%s handed %s to %s\n", ev.Actor, p.Task, p.To)
		case payload.EvTaskCompleted:
			var p payload.TaskCompleted
			mustJSON(tb, ev.Payload, &p)
			fmt.Fprintf(&b, "%s completed %s\n", ev.Actor, p.Task)
		case payload.EvActionRejected:
			var p payload.ActionRejected
			mustJSON(tb, ev.Payload, &p)
			fmt.Fprintf(&b, "%s refused %s: %s\n", ev.Actor, p.Action.Type, p.Reason)
		}
	}
	return b.String()
}

const handoverWorld = `version: 1
name: handover
start: 2026-01-05T09:00:00Z
horizon: 3d
roles: [{id: eng}, {id: lead}]
teams: [{id: t, budget: 10000}]
members:
  - {id: alice, role: eng, team: t}
  - {id: bob, role: eng, team: t}
  - {id: carol, role: lead, team: t}
queues: [{id: q, served_by: [eng]}]
approvals:
  - {id: spend, steps: [{role: lead, above: 500}]}
projects:
  - id: p
    team: t
    queue: q
    deadline: 3d
    tasks:
      - {id: buy, role: eng, effort: 1h, purchase: 3000, approval: spend}
`

// TestHandedOverPurchaseNeedsItsHoldersRequest: the rubric counts a
// purchase only when the member who asked for its approval completes it,
// so the colleague a task is handed to must be able to ask again, and may
// not complete it on the request of the member who handed it over (which
// the rubric would not count, its purchase charged all the same).
func TestHandedOverPurchaseNeedsItsHoldersRequest(t *testing.T) {
	claim := []org.Action{{Type: org.ActClaim, Task: "buy"}, {Type: org.ActRequestApproval, Task: "buy"}}
	handoff := []org.Action{{Type: org.ActHandoff, Task: "buy", To: "bob"}}
	work := []org.Action{{Type: org.ActWork, Task: "buy"}}
	complete := []org.Action{{Type: org.ActComplete, Task: "buy"}}
	request := []org.Action{{Type: org.ActRequestApproval, Task: "buy"}}
	approve := func(r string) []org.Action { return []org.Action{{Type: org.ActApprove, Request: r}} }
	h := clock.Hour
	tests := []struct {
		name   string
		script map[string][]timed
		want   string
		done   int
	}{
		{"approved, then handed over", map[string][]timed{
			"alice": {{0, claim}, {h, handoff}},
			"carol": {{h / 2, approve("r1")}, {2*h + h/2, approve("r2")}},
			"bob":   {{2 * h, request}, {3 * h, work}, {5 * h, complete}},
		}, `alice requested r1 for buy -> carol
carol granted r1 step 0
alice handed buy to bob
bob requested r2 for buy -> carol
carol granted r2 step 0
bob completed buy
`, 1},
		{"pending, then handed over", map[string][]timed{
			"alice": {{0, claim}, {h, handoff}},
			"carol": {{3 * h, approve("r1")}, {3*h + h/2, approve("r2")}},
			"bob":   {{2 * h, request}, {4 * h, work}, {6 * h, complete}},
		}, `alice requested r1 for buy -> carol
alice handed buy to bob
bob requested r2 for buy -> carol
carol granted r1 step 0
carol granted r2 step 0
bob completed buy
`, 1},
		{"completed on the request of whoever handed it over", map[string][]timed{
			"alice": {{0, claim}, {h, handoff}},
			"carol": {{h / 2, approve("r1")}},
			"bob":   {{2 * h, work}, {4 * h, complete}},
		}, `alice requested r1 for buy -> carol
carol granted r1 step 0
alice handed buy to bob
bob refused complete: task "buy" buys for 3000; its approval request r1 is alice's, who no longer holds it: ask again
`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, st := playTimed(t, handoverWorld, tt.script)
			if got := approvalStory(t, evs); got != tt.want {
				t.Errorf("events:\n%s\nwant:\n%s", got, tt.want)
			}
			c := policies.Score(st)
			if c.TasksDone != tt.done || len(c.Unverified) > 0 {
				t.Errorf("verified %d, unverified %q; want %d verified, none unverified", c.TasksDone, c.Unverified, tt.done)
			}
		})
	}
}

// leaveWorld: alice buys; carol (lead, managed by eve) approves above 500,
// eve (exec, managed by zed) above 1000; dan is a deputy managed by eve.
// The leaves are edited in.
const leaveWorld = `version: 1
name: leaves
start: 2026-01-05T09:00:00Z
horizon: 5d
roles: [{id: eng}, {id: lead}, {id: exec}, {id: deputy}, {id: ceo}]
teams: [{id: t, budget: 100000}]
members:
  - {id: alice, role: eng, team: t}
  - {id: carol, role: lead, team: t, manager: eve}
  - {id: dan, role: deputy, team: t, manager: eve}
  - {id: eve, role: exec, team: t, manager: zed}
  - {id: zed, role: ceo, team: t}
queues: [{id: q, served_by: [eng]}]
approvals:
  - {id: spend, steps: [{role: lead, above: 500}, {role: exec, above: 1000}]}
projects:
  - id: p
    team: t
    queue: q
    deadline: 5d
    tasks:
      - {id: buy, role: eng, effort: 1h, purchase: 800, approval: spend}
      - {id: big, role: eng, effort: 1h, purchase: 3000, approval: spend}
interruptions:
`

// TestApprovalStepsGoToWhoStandsIn: a step never waits for a member on
// leave while someone stands in (the delegate, else the manager), whether
// the leave began before the request (it is routed so), before the step
// came up (it goes on when it does), or while it waited (it is escalated):
// as a step pending at the leave's start is escalated.
func TestApprovalStepsGoToWhoStandsIn(t *testing.T) {
	h := clock.Hour
	ask := func(task string) []org.Action {
		return []org.Action{{Type: org.ActClaim, Task: task}, {Type: org.ActRequestApproval, Task: task}}
	}
	approve := []org.Action{{Type: org.ActApprove, Request: "r1"}}
	tests := []struct {
		name, leaves string
		script       map[string][]timed
		want         string
	}{
		{"approver away without a delegate", `  - {at: 1h, kind: leave, member: carol, for: 2d}
`, map[string][]timed{"alice": {{2 * h, ask("buy")}}, "eve": {{3 * h, approve}}}, `alice requested r1 for buy -> eve
eve granted r1 step 0
`},
		{"the delegate away too", `  - {at: 1h, kind: leave, member: dan, for: 2d}
  - {at: 2h, kind: leave, member: carol, for: 2d, delegate: dan}
`, map[string][]timed{"alice": {{3 * h, ask("buy")}}, "eve": {{4 * h, approve}}}, `alice requested r1 for buy -> dan
escalated r1 step 0 dan -> eve (leave)
eve granted r1 step 0
`},
		{"a later step's approver left after the request", `  - {at: 1h, kind: leave, member: eve, for: 2d, delegate: zed}
`, map[string][]timed{"alice": {{0, ask("big")}}, "carol": {{2 * h, approve}}, "zed": {{3 * h, approve}}}, `alice requested r1 for big -> carol, eve
carol granted r1 step 0
escalated r1 step 1 eve -> zed (leave)
zed granted r1 step 1
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, _ := playTimed(t, leaveWorld+tt.leaves, tt.script)
			if got := approvalStory(t, evs); got != tt.want {
				t.Errorf("events:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}
