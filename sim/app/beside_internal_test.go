package app

import (
	"context"
	"sync/atomic"
	"testing"
)

// TestEphemeralLogsCompressBeside holds run --ephemeral, eval and sweep to
// in-memory logs that hand their sealed blocks to the compressors' workers
// (memlog.Options.Beside), so that the driver, which appends the batch its
// turns wait for on its own goroutine, does not wait for s2. memlog's own
// tests cover both ways of compressing; only this one sees the wiring.
func TestEphemeralLogsCompressBeside(t *testing.T) {
	var handed atomic.Int64
	saved := compressBeside
	compressBeside = func(work func()) {
		handed.Add(1)
		saved(work)
	}
	t.Cleanup(func() { compressBeside = saved })
	ctx := context.Background()
	for _, c := range []struct {
		name string
		run  func() error
	}{
		{"run", func() error {
			_, err := Run(ctx, RunOptions{World: "support-desk", Seed: 1, Agents: "greedy", Ephemeral: true})
			return err
		}},
		{"eval", func() error {
			_, err := Eval(ctx, EvalOptions{World: "support-desk", Agents: "greedy", Seeds: 1, FirstSeed: 1}, RunOptions{})
			return err
		}},
		{"sweep", func() error {
			_, err := Sweep(ctx, SweepOptions{World: "support-desk", Loads: []float64{1}, Agents: []string{"greedy"}, Seeds: 1}, RunOptions{})
			return err
		}},
	} {
		before := handed.Load()
		if err := c.run(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		// support-desk's 3,500-odd events fill several 64 KiB blocks.
		if n := handed.Load() - before; n == 0 {
			t.Errorf("%s: no sealed block of its in-memory log was handed to the compressors", c.name)
		} else {
			t.Logf("%s: %d blocks compressed beside", c.name, n)
		}
	}
}
