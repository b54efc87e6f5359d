package analyze

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
)

// FirstActions finds each member's first action in a session's events:
// the seq of its first turn that did anything but wait (or, for a member
// that only ever waited, of its first turn). A counterfactual fork for a
// seat shares the events before it (fork at FirstActions[m]-1). Members
// with no turn are absent.
func FirstActions(evs func(yield func(*events.Event) bool)) (map[string]uint64, error) {
	first := map[string]uint64{}   // first turn that acted
	anyTurn := map[string]uint64{} // first turn at all
	var err error
	evs(func(ev *events.Event) bool {
		if ev.Type != payload.EvTurn || ev.Actor == "" {
			return true
		}
		if _, ok := anyTurn[ev.Actor]; !ok {
			anyTurn[ev.Actor] = ev.Seq
		}
		if _, ok := first[ev.Actor]; ok {
			return true
		}
		var t payload.Turn
		if e := json.Unmarshal(ev.Payload, &t); e != nil {
			err = fmt.Errorf("analyze: seq %d (turn): %w", ev.Seq, e)
			return false
		}
		for _, a := range t.Actions {
			if a.Type != org.ActWait {
				first[ev.Actor] = ev.Seq
				break
			}
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	for m, seq := range anyTurn { // order: each member's entry is its own
		if _, ok := first[m]; !ok {
			first[m] = seq
		}
	}
	return first, nil
}

// Coalition is a set of seats, sorted: the seats played as in the session
// (the others by a baseline).
type Coalition []string

// Key is the coalition as one string ("" for none).
func (c Coalition) Key() string { return strings.Join(c, ",") }

// ShapleyEstimate samples k permutations of players from seed (a PCG
// stream: the same seed gives the same permutations) and averages each
// player's marginal value(coalition before it plus it) - value(coalition
// before it). value is asked once per coalition (the results are kept), so
// it may be costly (a fork played to its end); its error stops the
// estimate. With every permutation, each estimate's values add up to
// value(all) - value(none) exactly, as true Shapley values do.
func ShapleyEstimate(players []string, k int, seed uint64, value func(Coalition) (float64, error)) (map[string]float64, error) {
	ps := slices.Clone(players)
	slices.Sort(ps)
	cache := map[string]float64{}
	v := func(c Coalition) (float64, error) {
		c = slices.Clone(c)
		slices.Sort(c)
		if x, ok := cache[c.Key()]; ok {
			return x, nil
		}
		x, err := value(c)
		if err != nil {
			return 0, err
		}
		cache[c.Key()] = x
		return x, nil
	}
	rng := rand.New(rand.NewPCG(seed, 0x5ead))
	sum := map[string]float64{}
	for range k {
		perm := slices.Clone(ps)
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		var before Coalition
		prev, err := v(before)
		if err != nil {
			return nil, err
		}
		for _, p := range perm {
			before = append(before, p)
			cur, err := v(before)
			if err != nil {
				return nil, err
			}
			sum[p] += cur - prev
			prev = cur
		}
	}
	out := map[string]float64{}
	for _, p := range ps {
		if k > 0 {
			out[p] = round6(sum[p] / float64(k))
		}
	}
	return out, nil
}
