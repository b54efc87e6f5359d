package policies

import (
	"fmt"
	"maps"
	"math"
	"testing"
)

// The bonus split must not depend on the map's iteration order: its sum is
// a float sum, whose value depends on the order of its terms. These shares
// sum to 2 in member order (1e16+1-1e16+1) but to anything from 0 to 2 in
// another, so a split summed in map order differs between calls.
func TestSplitBonusIgnoresMapOrder(t *testing.T) {
	by := map[string]float64{"a": 1e16, "b": 1, "c": -1e16, "d": 1}
	for i := range 40 {
		by[fmt.Sprintf("z%02d", i)] = math.Ldexp(1, -i) // more keys: more orders
	}
	want := maps.Clone(by)
	splitBonus(want, 10)
	for range 200 {
		got := maps.Clone(by)
		splitBonus(got, 10)
		for id, x := range want {
			if math.Float64bits(got[id]) != math.Float64bits(x) {
				t.Fatalf("member %s: got %v, want %v (the split changed with the map's order)", id, got[id], x)
			}
		}
	}
}
