package sim_test

import (
	"bytes"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/driver"
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
		evs += count(b, e)
	}
	b.ReportMetric(float64(evs)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkSupportDeskBench runs the support-desk-bench world, cut to 10,000
// tickets, in process: the engine and its NPC servers, no log, no bus; the
// retired tickets hashed on the driver's sequencer, as a run's are.
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
		e, _ := sim.New(sim.Config{World: w, Source: src, Seed: 42, Session: "s", NewSequencer: driver.NewSequencer})
		e.Start()
		evs += count(b, e)
	}
	b.ReportMetric(float64(evs)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(10000*b.N)/b.Elapsed().Seconds(), "tickets/s")
}

// count plays e to its end with greedy agents and returns how many events
// it made, keeping none of them: what a benchmark of the engine measures
// is the engine, not a slice of every event growing beside it.
func count(b *testing.B, e *sim.Engine) int {
	n := 0
	err := sim.Play(e, func(evs []events.Event) bool { n += len(evs); return true },
		func(t sim.Turn) (sim.Answer, bool) { return greedy(t.Observation), true }, 0)
	if err != nil {
		b.Fatal(err)
	}
	return n
}
