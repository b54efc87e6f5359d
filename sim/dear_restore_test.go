package sim_test

import (
	"context"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/simtest"
)

// TestRestoredAgentsContinueWhenBudgetsRunOut: wind-ops over 28 days
// instead of 14, where the repair budget runs low and views list the
// orders it can no longer pay after the work that can be done. A view
// moves such tasks aside in the offer index as it finds them, so a
// restored state (which has moved none) and the live one (which has) hold
// them differently: what they show, and so every continuation, must be the
// same.
func TestRestoredAgentsContinueWhenBudgetsRunOut(t *testing.T) {
	w, src := simtest.ShippedOver(t, "wind-ops", "28d")
	for _, kind := range []string{"greedy", "planner"} {
		t.Run(kind, func(t *testing.T) {
			dear := 0 // listed tasks their budget cannot pay
			restoredRunsOf(t, "wind-ops", src, 1, 3, func(past []events.Event) decider {
				seats := madeAnew(t, kind, w)
				recallPast(t, past, w, seats)
				return func(o org.Observation) sim.Answer {
					for _, v := range o.Available {
						if b := v.Charges; b != nil && v.Purchase > b.Remaining {
							dear++
						}
					}
					acts, err := seats(o.Member).Decide(context.Background(), o)
					if err != nil {
						t.Fatal(err)
					}
					return sim.Answer{Member: o.Member, Turn: o.Turn, Actions: acts}
				}
			})
			if dear == 0 {
				t.Fatal("no view listed a task its budget could not pay: the test shows nothing")
			}
			t.Logf("%d dear tasks listed", dear)
		})
	}
}
