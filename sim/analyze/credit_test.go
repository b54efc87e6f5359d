package analyze_test

import (
	"math"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim/analyze"
)

// glove is a game with a known Shapley value: a scores 6 alone, b and c
// score 0 alone, and any two of them together earn 12 more (a pair of
// gloves). Exact values: a 10, b 4, c 4 (sum: v(all) = 18).
func glove(c analyze.Coalition) (float64, error) {
	has := map[string]bool{}
	for _, p := range c {
		has[p] = true
	}
	v := 0.0
	if has["a"] {
		v += 6
	}
	if n := len(c); n >= 2 {
		v += 12
	}
	return v, nil
}

func TestShapleyEstimate(t *testing.T) {
	asked := map[string]int{}
	value := func(c analyze.Coalition) (float64, error) {
		asked[c.Key()]++
		return glove(c)
	}
	got, err := analyze.ShapleyEstimate([]string{"c", "a", "b"}, 200, 7, value)
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, p := range []string{"a", "b", "c"} {
		sum += got[p]
	}
	if math.Abs(sum-18) > 1e-5 {
		t.Errorf("estimates %v add up to %v; want v(all) - v(none) = 18", got, sum)
	}
	for p, want := range map[string]float64{"a": 10, "b": 4, "c": 4} {
		if math.Abs(got[p]-want) > 1 {
			t.Errorf("%s: estimate %v after 200 permutations; want about %v", p, got[p], want)
		}
	}
	for k, n := range asked {
		if n != 1 {
			t.Errorf("coalition %q valued %d times; want once", k, n)
		}
	}
	again, _ := analyze.ShapleyEstimate([]string{"a", "b", "c"}, 200, 7, glove)
	other, _ := analyze.ShapleyEstimate([]string{"a", "b", "c"}, 5, 8, glove)
	for _, p := range []string{"a", "b", "c"} {
		if again[p] != got[p] {
			t.Errorf("%s: %v with the same seed again; first %v", p, again[p], got[p])
		}
	}
	if other["a"] == got["a"] && other["b"] == got["b"] {
		t.Logf("another seed and k gave the same estimate %v (possible, unlikely)", other)
	}
}

func TestFirstActions(t *testing.T) {
	b := newLog(t)
	b.add(0, payload.EvTurn, "bob", 1, payload.Turn{Turn: 1, Actions: []org.Action{{Type: org.ActWait}}})  // 2
	b.add(0, payload.EvTurn, "cat", 1, payload.Turn{Turn: 1, Actions: []org.Action{{Type: org.ActWait}}})  // 3
	b.add(0, payload.EvTurn, "bob", 1, payload.Turn{Turn: 2, Actions: []org.Action{{Type: org.ActClaim}}}) // 4
	b.add(0, payload.EvTurn, "bob", 1, payload.Turn{Turn: 3, Actions: []org.Action{{Type: org.ActWork}}})  // 5
	first, err := analyze.FirstActions(func(yield func(*events.Event) bool) {
		for i := range b.evs {
			if !yield(&b.evs[i]) {
				return
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if first["bob"] != 4 || first["cat"] != 3 || len(first) != 2 {
		t.Fatalf("first actions %v; want bob #4 (its first claim), cat #3 (only waited)", first)
	}
}
