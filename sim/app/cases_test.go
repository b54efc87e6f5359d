package app_test

import (
	"context"
	"math"
	"testing"

	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim/app"
)

// runScore runs the claims world once in memory and returns its scorecard.
func runScore(tb testing.TB, seed uint64, load float64) policies.Scorecard {
	tb.Helper()
	res, err := app.Run(context.Background(), app.RunOptions{World: "claims", Seed: seed, Load: load, Agents: "planner", Ephemeral: true})
	if err != nil {
		tb.Fatal(err)
	}
	if len(res.Score.Templates) != 1 || res.Score.Templates[0].Cases == 0 {
		tb.Fatalf("claims seed %d load %g: templates %+v, want the claim template's cases", seed, load, res.Score.Templates)
	}
	return res.Score
}

// TestEvalCaseGoals: eval of a world with cases has a goal per case
// template, case_sla:<template>, passing in the runs where at least 90% of
// the template's cases were done within their SLA, with the mean share
// within SLA; the other goals are still there.
func TestEvalCaseGoals(t *testing.T) {
	res, err := app.Eval(context.Background(), app.EvalOptions{World: "claims", Agents: "planner", Seeds: 3, FirstSeed: 1}, app.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	passes, share := 0, 0.0
	for seed := uint64(1); seed <= 3; seed++ {
		c := runScore(t, seed, 1).Templates[0]
		s := float64(c.InSLA) / float64(c.Cases)
		share += s / 3
		if s >= 0.9 {
			passes++
		}
	}
	got := map[string]app.GoalResult{}
	for _, g := range res.Goals {
		got[g.Goal] = g
	}
	g, ok := got["case_sla:claim"]
	if !ok {
		t.Fatalf("goals %+v: no case_sla:claim", res.Goals)
	}
	if g.Passes != passes || g.Share == nil || math.Abs(*g.Share-share) > 1e-9 {
		t.Errorf("case_sla:claim = %+v (share %v), want %d passes and share %.4f", g, g.Share, passes, share)
	}
	for _, want := range []string{"budget", "project:portal"} {
		if g, ok := got[want]; !ok || g.Share != nil {
			t.Errorf("goal %s = %+v, %v; want it, without a share", want, g, ok)
		}
	}
}

// TestSweepTemplates: a sweep of a world with cases reports, per load, each
// template's cases done and opened as the runs' scorecards count them, and
// more cases open at a higher load.
func TestSweepTemplates(t *testing.T) {
	res, err := app.Sweep(context.Background(), app.SweepOptions{World: "claims", Loads: []float64{0.5, 2}, Agents: []string{"planner"}, Seeds: 1}, app.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Points) != 2 {
		t.Fatalf("points %+v", res.Points)
	}
	for _, p := range res.Points {
		card := runScore(t, 1, p.Load)
		// The on-time rate counts cases as completion does: done within
		// their SLA, over all the work.
		inTime := card.OnTime + card.TicketsInSLA + card.CasesInSLA
		if want := float64(inTime) / float64(card.Tasks+card.Tickets+card.Cases); card.CasesInSLA == 0 || math.Abs(p.OnTime-want) > 1e-9 || p.OnTime > p.Completion+1e-6 {
			t.Errorf("load %g: on time %g, completion %g; the run's scorecard says %d of %d tasks, tickets and cases in time (%g), %d cases in SLA",
				p.Load, p.OnTime, p.Completion, inTime, card.Tasks+card.Tickets+card.Cases, want, card.CasesInSLA)
		}
		c := card.Templates[0]
		if len(p.Templates) != 1 {
			t.Fatalf("load %g: templates %+v", p.Load, p.Templates)
		}
		tc := p.Templates[0]
		if tc.Template != "claim" || tc.Opened != float64(c.Cases) || tc.Done != float64(c.Done) || math.Abs(tc.Completion-float64(c.Done)/float64(c.Cases)) > 1e-9 {
			t.Errorf("load %g: %+v, the run's scorecard %+v", p.Load, tc, c)
		}
	}
	if lo, hi := res.Points[0].Templates[0], res.Points[1].Templates[0]; hi.Opened <= lo.Opened {
		t.Errorf("load 2 opened %g cases, load 0.5 %g: want more at the higher load", hi.Opened, lo.Opened)
	}
}
