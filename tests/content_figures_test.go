package tests

import (
	"context"
	"testing"

	"github.com/corpsim/corpsim/sim/app"
)

// TestContentFigures runs `corpsim eval --seeds 5` in process on each
// content world, one agent for every seat at a time, and checks the
// figures the issue asks for: the oracle at the maximum outcome score on
// every seed, diligent within 10% of it, greedy at least 25% below
// diligent.
func TestContentFigures(t *testing.T) {
	for _, world := range []string{"billing-support", "access-requests"} {
		t.Run(world, func(t *testing.T) {
			mean := map[string]float64{}
			for _, agent := range []string{"oracle", "diligent", "greedy"} {
				res, err := app.Eval(context.Background(), app.EvalOptions{World: world, Agents: agent, Seeds: 5, Parallel: 1}, app.RunOptions{Logger: testLogger(t)})
				if err != nil {
					t.Fatal(err)
				}
				if res.OutcomeMean == nil || res.OutcomeMax == nil || len(res.OutcomeScores) != 5 {
					t.Fatalf("%s: outcome_mean %v, outcome_max %v, per seed %v", agent, res.OutcomeMean, res.OutcomeMax, res.OutcomeScores)
				}
				mean[agent] = *res.OutcomeMean
				if agent == "oracle" && *res.OutcomeMean != *res.OutcomeMax {
					t.Errorf("oracle outcome_mean %v, outcome_max %v; want the maximum on every seed (%v)", *res.OutcomeMean, *res.OutcomeMax, res.OutcomeScores)
				}
			}
			t.Logf("outcome_mean %v", mean)
			if mean["diligent"] < 0.9*mean["oracle"] {
				t.Errorf("diligent %v is not within 10%% of oracle %v", mean["diligent"], mean["oracle"])
			}
			if mean["greedy"] > 0.75*mean["diligent"] {
				t.Errorf("greedy %v is not 25%% below diligent %v", mean["greedy"], mean["diligent"])
			}
		})
	}
}
