package tests

import (
	"encoding/json"
	"testing"

	"github.com/corpsim/corpsim/sim/app"
)

// TestMeetingsEval: `corpsim eval --world meetings --json` over seeds 1-3
// with each baseline on every seat. The oracle books every meeting right
// (its outcome mean is the maximum, so it is the maximum on every seed),
// diligent (which asks the attendees) comes within 10% of it, and greedy
// (which books the first free slot without asking) is at least 25% below
// diligent.
func TestMeetingsEval(t *testing.T) {
	mean := map[string]float64{}
	var max float64
	for _, agent := range []string{"oracle", "diligent", "greedy"} {
		out, errs, code := runCLI(t, "eval", "--world", "meetings", "--agents", agent, "--seeds", "3", "--json")
		var res app.EvalResult
		if code != 0 || json.Unmarshal([]byte(out), &res) != nil || res.OutcomeMean == nil || res.OutcomeMax == nil {
			t.Fatalf("eval --agents %s exited %d: %s%s", agent, code, out, errs)
		}
		mean[agent], max = *res.OutcomeMean, *res.OutcomeMax
		t.Logf("%s: outcome_mean %.2f of %.2f, per seed %v", agent, *res.OutcomeMean, *res.OutcomeMax, res.OutcomeScores)
	}
	if mean["oracle"] < max-1e-9 {
		t.Errorf("oracle outcome_mean %.2f, want outcome_max %.2f", mean["oracle"], max)
	}
	if mean["diligent"] < 0.9*mean["oracle"] {
		t.Errorf("diligent %.2f is not within 10%% of oracle %.2f", mean["diligent"], mean["oracle"])
	}
	if mean["greedy"] > 0.75*mean["diligent"] {
		t.Errorf("greedy %.2f is not 25%% below diligent %.2f", mean["greedy"], mean["diligent"])
	}
}
