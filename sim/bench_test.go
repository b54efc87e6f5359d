package sim_test

import (
	"testing"

	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

// BenchmarkEngineGreedy runs a generated world (20 seats, 1,500 tasks) with
// greedy agents in process, without log or bus: the engine and agents alone.
func BenchmarkEngineGreedy(b *testing.B) {
	src := worlds.Generate(worlds.GenOptions{Seed: 3, Members: 20, Tasks: 1500, Chains: 30})
	w, err := worlds.Load("gen.yaml", src)
	if err != nil {
		b.Fatal(err)
	}
	var evs int
	for i := 0; i < b.N; i++ {
		e, _ := sim.New(sim.Config{World: w, Source: src, Seed: 3, Session: "s"})
		e.Start()
		evs += len(drive(b, e, greedy, false, 0))
	}
	b.ReportMetric(float64(evs)/b.Elapsed().Seconds(), "events/s")
}
