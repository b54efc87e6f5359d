package sim_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

// A separation rule binds the steps a requester's reopening made as much
// as the first ones: in billing-support with a third agent and a
// four-eyes rule over refund and confirm, Cy refunds and Ben confirms
// requests-1 wrongly, Cara reopens both, and Ana, who did neither, redoes
// the refund. She may then not confirm it too: the rule looked only for
// the first task of each step (requests-1.refund, done by Cy), so Ana did
// requests-1.refund-r1 and requests-1.confirm-r1, both, and the case
// counted (a red team's find).
func TestSeparationBindsRedoneSteps(t *testing.T) {
	src, err := worlds.Source("billing-support")
	if err != nil {
		t.Fatal(err)
	}
	for _, edit := range []struct{ old, new string }{
		{"  - {id: ben, name: Ben, role: agent, team: support, manager: lee}\n",
			"  - {id: ben, name: Ben, role: agent, team: support, manager: lee}\n  - {id: cy, name: Cy, role: agent, team: support, manager: lee}\n"},
		{"\narrivals:\n", "\nseparation:\n  - {id: four-eyes, template: refund, distinct: [refund, confirm]}\n\narrivals:\n"},
	} {
		if !bytes.Contains(src, []byte(edit.old)) {
			t.Fatalf("billing-support has no %q", edit.old)
		}
		src = bytes.Replace(src, []byte(edit.old), []byte(edit.new), 1)
	}
	e, _ := simtest.Started(t, "billing-support.yaml", src, 1)
	const id = "requests-1"
	// Who does each step: wrongly at first, then Ana every redo, rightly.
	doer := func(c *org.Case, step string) string {
		switch {
		case c.Reopens > 0:
			return "ana"
		case step == "confirm":
			return "ben"
		}
		return "cy"
	}
	evs := drive(t, e, func(o org.Observation) sim.Answer {
		ans := sim.Answer{Member: o.Member, Turn: o.Turn, Actions: []org.Action{{Type: org.ActWait}}}
		st := e.State()
		c := st.Case(id)
		if c == nil || c.Done() {
			return ans
		}
		for _, tid := range c.Steps {
			tk := st.Task(tid)
			if tk.Status == org.StatusDone || doer(c, tk.Spec.Step) != o.Member || !st.DepsDone(tk) {
				continue
			}
			switch {
			case tk.Assignee == "":
				ans.Actions = []org.Action{{Type: org.ActClaim, Task: tid}, {Type: org.ActWork, Task: tid, For: "1d"}, {Type: org.ActWait}}
				return ans
			case tk.Assignee != o.Member || tk.Status == org.StatusInProgress || tk.Spent < tk.Effort:
				return ans
			}
			ans.Actions = nil
			for _, x := range c.Outcomes {
				switch {
				case x.Step != tk.Spec.Step || c.Reopens == 0:
				case x.Kind == "reply":
					ans.Actions = append(ans.Actions, org.Action{Type: org.ActMessage, To: "cara", Text: fmt.Sprintf("Case %s: we refunded %v.", id, x.Fields["carries"])})
				default:
					ans.Actions = append(ans.Actions, org.Action{Type: org.ActUpdate, Record: x.Record, ID: x.ID, Fields: payload.NewActionAttrs(x.Fields)})
				}
			}
			if c.Reopens == 0 && tk.Spec.Step == "confirm" {
				ans.Actions = append(ans.Actions, org.Action{Type: org.ActMessage, To: "cara", Text: "Case " + id + " is refunded."})
			}
			ans.Actions = append(ans.Actions, org.Action{Type: org.ActComplete, Task: tid}, org.Action{Type: org.ActWait})
			return ans
		}
		return ans
	}, false, 0)
	mustReplayLive(t, e, evs)
	st := e.State()
	c := st.Case(id)
	if c.Reopens != 1 {
		t.Fatalf("requests-1 reopened %d times; want once (the test proves nothing)", c.Reopens)
	}
	refund, confirm := st.Task(id+".refund-r1"), st.Task(id+".confirm-r1")
	if refund == nil || refund.Status != org.StatusDone || refund.DoneBy != "ana" {
		t.Fatalf("requests-1.refund-r1: %+v; want done by ana (the test proves nothing)", refund)
	}
	if rule, _ := st.Separated(confirm, "ana", false); rule == nil {
		t.Errorf("Ana did requests-1.refund-r1, yet no rule bars her from requests-1.confirm-r1")
	}
	if confirm.Status == org.StatusDone && confirm.DoneBy == "ana" {
		if why := policies.Verify(st, confirm); why == "" || policies.CaseValue(st, c) != 0 {
			t.Errorf("Ana did the redone refund and confirmation of requests-1 under four-eyes rule, and they count (case value %v)", policies.CaseValue(st, c))
		}
	}
}
