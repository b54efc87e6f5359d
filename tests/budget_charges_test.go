package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/sim/simtest"
)

// TestAgentsSeeTheBudgetTheirWorkCharges runs wind-ops over 28 days
// instead of 14: long enough for the fleet's repair budget (team assets)
// to run low while the operators, of teams warsaw and chicago with budgets
// of their own, complete the repair orders it pays for. The orders' views
// show that budget (charges), so greedy and the planner leave an order it
// cannot pay for alone: no within-budget refusal. Before the views showed
// it they compared each order with their own team's budget and asked the
// rules again every turn (greedy: 1,127 violations; over 112 days, 145,044
// and a team score of −143,603 instead of +8,948). A worked order handed
// over at a shift's end is taken without asking to work on it again. And
// greedy no longer takes orders nobody can pay for, so it never holds more
// at a shift's end than it can hand over in time: no violation at all
// (greedy broke the handover rule 15 times before).
func TestAgentsSeeTheBudgetTheirWorkCharges(t *testing.T) {
	_, longer := simtest.ShippedOver(t, "wind-ops", "28d")
	file := filepath.Join(t.TempDir(), "wind-ops-28d.yaml")
	if err := os.WriteFile(file, longer, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, agents := range []string{"greedy", "planner"} {
		t.Run(agents, func(t *testing.T) {
			l := memlog.New()
			res := mustRun(t, app.RunOptions{World: file, Seed: 1, Agents: agents, Log: l, CheckpointEvery: -1})
			budget, worked, orders := 0, 0, 0
			for _, ev := range eventsOf(t, l, res.Session, payload.EvActionRejected) {
				p := payloadOf[payload.ActionRejected](t, ev)
				switch {
				case p.Rule == "within-budget":
					budget++
				case strings.Contains(p.Reason, "no effort left"):
					worked++
				}
			}
			for _, ev := range eventsOf(t, l, res.Session, payload.EvTaskCompleted) {
				if strings.HasSuffix(payloadOf[payload.TaskCompleted](t, ev).Task, ".order") {
					orders++
				}
			}
			t.Logf("%s: %d events, team score %.1f, %d orders completed, %d rejections", agents, res.Events, res.Score.TeamScore, orders, res.Score.Rejections)
			if res.Score.Violations != 0 {
				t.Errorf("%d violations; want none", res.Score.Violations)
			}
			if budget != 0 || worked != 0 {
				t.Errorf("%d within-budget refusals and %d refused works on worked tasks; want none", budget, worked)
			}
			if orders == 0 {
				t.Error("no repair order completed: the test no longer spends the budget")
			}
		})
	}
}
