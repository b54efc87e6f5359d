package tests

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/worlds"
)

// TestClaimsWorld: the claims world validates; over seeds 1..5 the team
// scores rank idle < random < greedy <= planner (means); the dense rewards
// of greedy, planner and cheater sessions add up to their team scores; and
// greedy's completion falls as load rises 0.5 -> 1 -> 2.
func TestClaimsWorld(t *testing.T) {
	src, err := worlds.Source("claims")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "claims.yaml")
	if err := os.WriteFile(file, src, 0o600); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, "worlds", "validate", file) // fails the test unless it exits 0
	run := func(agents string, seed uint64, load float64) *app.RunResult {
		return mustRun(t, app.RunOptions{World: "claims", Seed: seed, Agents: agents, Load: load, Ephemeral: true, CheckpointEvery: -1})
	}
	mean := map[string]float64{}
	for _, agents := range []string{"idle", "random", "greedy", "planner"} {
		var scores []string
		for seed := uint64(1); seed <= 5; seed++ {
			s := run(agents, seed, 1).Score
			mean[agents] += s.TeamScore / 5
			scores = append(scores, fmt.Sprintf("%.1f", s.TeamScore))
		}
		t.Logf("%s: team scores %s, mean %.2f", agents, strings.Join(scores, " "), mean[agents])
	}
	if !(mean["idle"] < mean["random"] && mean["random"] < mean["greedy"] && mean["greedy"] <= mean["planner"]) {
		t.Errorf("mean team scores idle %.2f, random %.2f, greedy %.2f, planner %.2f: want idle < random < greedy <= planner",
			mean["idle"], mean["random"], mean["greedy"], mean["planner"])
	}

	for _, agents := range []string{"greedy", "planner", "cheater"} {
		l := memlog.New()
		res := mustRun(t, app.RunOptions{World: "claims", Seed: 2, Agents: agents, Log: l, CheckpointEvery: -1})
		sum := 0.0
		for _, ev := range eventsOf(t, l, res.Session, payload.EvReward) {
			sum += payloadOf[payload.Reward](t, ev).Team
		}
		if math.Abs(sum-res.Score.TeamScore) > 1e-4 || res.Score.Cases == 0 {
			t.Errorf("%s: rewards sum to %.6f, team score %.6f (%d cases)", agents, sum, res.Score.TeamScore, res.Score.Cases)
		}
	}

	var completion []float64
	for _, load := range []float64{0.5, 1, 2} {
		c := 0.0
		for seed := uint64(1); seed <= 2; seed++ {
			c += run("greedy", seed, load).Score.Completion / 2
		}
		completion = append(completion, c)
	}
	t.Logf("greedy completion at loads 0.5, 1, 2: %.3f", completion)
	if !(completion[0] > completion[1] && completion[1] > completion[2]) {
		t.Errorf("greedy completion %.3f at loads 0.5, 1, 2: want it falling", completion)
	}
}
