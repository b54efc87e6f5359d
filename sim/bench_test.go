package sim_test

import (
	"bytes"
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

// BenchmarkSupportDeskBench runs the support-desk-bench world, cut to 10,000
// tickets, in process: the engine and its NPC servers, no log, no bus.
func BenchmarkSupportDeskBench(b *testing.B) {
	src, err := worlds.Source("support-desk-bench")
	if err != nil {
		b.Fatal(err)
	}
	src = bytes.Replace(src, []byte("count: 200000"), []byte("count: 10000"), 1)
	w, err := worlds.Load("bench.yaml", src)
	if err != nil {
		b.Fatal(err)
	}
	var evs int
	for i := 0; i < b.N; i++ {
		e, _ := sim.New(sim.Config{World: w, Source: src, Seed: 42, Session: "s"})
		e.Start()
		evs += len(drive(b, e, greedy, false, 0))
	}
	b.ReportMetric(float64(evs)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(10000*b.N)/b.Elapsed().Seconds(), "tickets/s")
}
