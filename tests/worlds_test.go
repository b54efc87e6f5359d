package tests

import (
	"testing"

	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/worlds"
)

// TestShippedWorldsRewardWork runs every shipped world to its horizon with
// a working team and with an idle one: the workers must score higher and
// finish something, on two seeds. The working team is greedy, except in
// the worlds with content (systems), where greedy gets content wrong by
// design and a wrong outcome may cost more than doing nothing
// (scoring.wrong_penalty): there it is diligent, the legitimate baseline.
// (support-desk-bench is a benchmark with no agent work and is run by the
// benchmarks instead.)
func TestShippedWorldsRewardWork(t *testing.T) {
	for _, name := range worlds.Names() {
		if name == "support-desk-bench" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			seeds := []uint64{1, 2}
			if name == "portfolio" {
				seeds = seeds[:1] // the large world takes a while; one seed shows it
			}
			worker := "greedy"
			if w, err := worlds.Shipped(name); err != nil {
				t.Fatal(err)
			} else if len(w.Systems) > 0 {
				worker = "diligent"
			}
			for _, seed := range seeds {
				busy := mustRun(t, app.RunOptions{World: name, Seed: seed, Agents: worker, Log: memlog.New(), CheckpointEvery: -1})
				idle := mustRun(t, app.RunOptions{World: name, Seed: seed, Agents: "idle", Log: memlog.New(), CheckpointEvery: -1})
				g, i := busy.Score, idle.Score
				t.Logf("seed %d: %s %.2f (completion %.1f%%), idle %.2f", seed, worker, g.TeamScore, 100*g.Completion, i.TeamScore)
				if g.TeamScore <= i.TeamScore {
					t.Errorf("seed %d: %s scored %.2f, idle %.2f; want %s higher", seed, worker, g.TeamScore, i.TeamScore, worker)
				}
				if g.TasksDone+g.TicketsResolved+g.CasesDone == 0 {
					t.Errorf("seed %d: %s finished nothing", seed, worker)
				}
				if i.TasksDone+i.TicketsResolved+i.CasesDone != 0 {
					t.Errorf("seed %d: an idle team finished %d tasks, %d tickets and %d cases", seed, i.TasksDone, i.TicketsResolved, i.CasesDone)
				}
			}
		})
	}
}

// TestSupportDeskCompletionFallsWithLoad runs support-desk at rising loads
// with the greedy team: the share of work completed must fall as load rises
// (averaged over seeds), which is the curve the load factor exists to study.
func TestSupportDeskCompletionFallsWithLoad(t *testing.T) {
	loads := []float64{0.25, 1, 2}
	seeds := []uint64{1, 2, 3}
	var means []float64
	for _, load := range loads {
		sum := 0.0
		arrived := 0
		for _, seed := range seeds {
			res := mustRun(t, app.RunOptions{World: "support-desk", Seed: seed, Load: load, Agents: "greedy", Log: memlog.New(), CheckpointEvery: -1})
			sum += res.Score.Completion
			arrived += res.Score.Tickets
		}
		mean := sum / float64(len(seeds))
		means = append(means, mean)
		t.Logf("load %.2f: %d tickets arrived over %d seeds, completion %.1f%%", load, arrived, len(seeds), 100*mean)
	}
	for i := 1; i < len(means); i++ {
		if means[i] >= means[i-1] {
			t.Fatalf("completion at load %g is %.3f, not below %.3f at load %g", loads[i], means[i], means[i-1], loads[i-1])
		}
	}
	if spread := means[0] - means[len(means)-1]; spread < 0.2 {
		t.Fatalf("completion only falls by %.3f from load %g to %g; the load factor barely matters", spread, loads[0], loads[len(loads)-1])
	}
}

// TestLoadScalesArrivals checks the load factor itself: twice the load
// brings about twice the tickets.
func TestLoadScalesArrivals(t *testing.T) {
	count := map[float64]int{}
	for _, load := range []float64{0.5, 1, 2} {
		res := mustRun(t, app.RunOptions{World: "support-desk", Seed: 9, Load: load, Agents: "idle", Log: memlog.New(), CheckpointEvery: -1})
		count[load] = res.Score.Tickets
	}
	for _, pair := range [][2]float64{{0.5, 1}, {1, 2}} {
		lo, hi := count[pair[0]], count[pair[1]]
		if ratio := float64(hi) / float64(lo); ratio < 1.6 || ratio > 2.4 {
			t.Errorf("load %g brought %d tickets, load %g %d: ratio %.2f, want about 2", pair[0], lo, pair[1], hi, ratio)
		}
	}
}
