package app_test

import (
	"context"
	"slices"
	"testing"

	"github.com/corpsim/corpsim/sim/app"
)

// Seed 0 is a seed like any other (run --seed 0 plays it): eval and
// sweep given --first-seed 0 play it too, where they played seeds 1, 2, …
// without a word. A first seed left unset is still 1.
func TestFirstSeedZeroIsPlayed(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		name  string
		set   bool
		seeds []uint64
	}{{"given", true, []uint64{0, 1}}, {"unset", false, []uint64{1, 2}}} {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := app.Eval(ctx, app.EvalOptions{World: "startup", Agents: "greedy", Seeds: 2, FirstSeedSet: tt.set}, app.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(ev.Seeds, tt.seeds) {
				t.Errorf("eval played seeds %v, want %v", ev.Seeds, tt.seeds)
			}
			sw, err := app.Sweep(ctx, app.SweepOptions{World: "startup", Loads: []float64{1}, Agents: []string{"greedy"}, Seeds: 2, FirstSeedSet: tt.set}, app.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := sw.Points[0].Seeds; !slices.Equal(got, tt.seeds) {
				t.Errorf("sweep played seeds %v, want %v", got, tt.seeds)
			}
		})
	}
}
