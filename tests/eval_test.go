package tests

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/corpsim/corpsim/sim/app"
)

func TestEvalPassAtK(t *testing.T) {
	tests := []struct {
		agents string
		passK  bool
		pass1  float64
	}{
		{"greedy", true, 1},
		{"idle", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.agents, func(t *testing.T) {
			res, err := app.Eval(context.Background(), app.EvalOptions{World: "startup", Agents: tt.agents, Seeds: 3}, app.RunOptions{Logger: testLogger(t)})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Scores) != 3 || len(res.Seeds) != 3 || res.Seeds[0] != 1 {
				t.Fatalf("got %d scores for seeds %v, want 3 for 1..3", len(res.Scores), res.Seeds)
			}
			var mvp *app.GoalResult
			for i := range res.Goals {
				if res.Goals[i].Goal == "project:mvp" {
					mvp = &res.Goals[i]
				}
			}
			if mvp == nil || mvp.PassK != tt.passK || mvp.PassAt1 != tt.pass1 || mvp.PassAt1 != float64(mvp.Passes)/3 {
				t.Fatalf("project:mvp goal %+v, want pass^3 %v and pass@1 %v", mvp, tt.passK, tt.pass1)
			}
			sum := 0.0
			for _, s := range res.Scores {
				sum += s
			}
			if math.Abs(sum/3-res.Mean) > 1e-9 || res.Min > res.Mean || res.Max < res.Mean {
				t.Fatalf("mean %v min %v max %v of %v", res.Mean, res.Min, res.Max, res.Scores)
			}
		})
	}
	out, errs, code := runCLI(t, "eval", "--world", "startup", "--seeds", "2", "--json")
	var res app.EvalResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil || len(res.Scores) != 2 {
		t.Fatalf("eval --json exited %d: %s%s", code, out, errs)
	}
}

// TestScoreRegrades: `corpsim score` rebuilds the final state from the log
// and gives the scorecard the run printed, with the rubric's version.
func TestScoreRegrades(t *testing.T) {
	data := t.TempDir()
	out, errs, code := runCLI(t, "run", "--world", "support-desk", "--seed", "5", "--data", data, "--json")
	var run app.RunResult
	if code != 0 || json.Unmarshal([]byte(out), &run) != nil {
		t.Fatalf("run exited %d: %s", code, errs)
	}
	out, errs, code = runCLI(t, "score", run.Session, "--data", data, "--json")
	var score app.RunResult
	if code != 0 || json.Unmarshal([]byte(out), &score) != nil {
		t.Fatalf("score exited %d: %s%s", code, out, errs)
	}
	a, b := run.Score, score.Score
	if a.TeamScore != b.TeamScore || a.Delivered != b.Delivered || a.TicketsResolved != b.TicketsResolved || b.Rubric == "" {
		t.Fatalf("re-graded %+v, the run said %+v", b, a)
	}
	if math.Abs(b.Reward-b.TeamScore) > 1e-4 {
		t.Fatalf("recorded reward %.4f does not reconcile with the re-graded score %.4f", b.Reward, b.TeamScore)
	}
	if score.StateHash != run.StateHash {
		t.Fatalf("score rebuilt state %s, the run recorded %s", score.StateHash, run.StateHash)
	}
}
