package sim_test

import (
	"context"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

// TestWindOpsBaselines plays the shipped wind-ops world (two 24/7 control
// rooms on rotating shifts whose handover is required, cases with a
// separation rule and approvals) with greedy and with planner seats. At
// the end of a shift they must hand work over without handing a case step
// to a colleague a separation rule bars (who would then be refused every
// turn), without leaving an approval requested by one shift for the next
// to complete (the rubric counts a purchase only when its requester
// completed it), and without sleeping through an approval until the
// handover; cases get done, but not all of them, and so does the project.
func TestWindOpsBaselines(t *testing.T) {
	src, err := worlds.Source("wind-ops")
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"greedy", "planner"} {
		t.Run(kind, func(t *testing.T) {
			e, _ := mustWorldEngine(t, "wind-ops.yaml", src, 1)
			e.Start()
			planners := map[string]*agents.Planner{}
			evs := drive(t, e, func(o org.Observation) sim.Answer {
				if kind == "greedy" {
					return greedy(o)
				}
				p := planners[o.Member]
				if p == nil {
					p = agents.NewPlanner(o.Member)
					planners[o.Member] = p
				}
				acts, _ := p.Decide(context.Background(), o)
				return sim.Answer{Member: o.Member, Turn: o.Turn, Actions: acts}
			}, false, 0)
			if v := handoverViolations(t, evs); len(v) > 0 {
				t.Errorf("%d handover violations, want none; first: %s", len(v), decode[payload.ActionRejected](t, v[0]).Reason)
			}
			refused := 0
			for _, ev := range evs {
				if ev.Type == payload.EvActionRejected && strings.HasPrefix(decode[payload.ActionRejected](t, ev).Rule, "separation/") {
					refused++
				}
			}
			if refused > 0 {
				t.Errorf("%d actions refused by a separation rule, want none", refused)
			}
			card := policies.Score(e.State())
			for _, why := range card.Unverified {
				if strings.Contains(why, "was made by") {
					t.Errorf("unverified: %s", why)
				}
			}
			if card.Cases == 0 || card.CasesDone < card.Cases/2 || card.CasesDone == card.Cases {
				t.Errorf("%d of %d cases done, want more than half and not all", card.CasesDone, card.Cases)
			}
			if len(card.Projects) != 1 || !card.Projects[0].Completed {
				t.Errorf("projects %+v, want alarm-review completed", card.Projects)
			}
			mustReplayLive(t, e, evs)
		})
	}
}
