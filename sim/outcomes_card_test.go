package sim_test

import (
	"slices"
	"testing"

	"github.com/corpsim/corpsim/policies"
)

// checkOutcomeCards checks the scorecard's breakdown of the scripted
// session of TestBillingSupportOutcomeVerification: the case of step has
// one card, completed by member, half right (refunded set, status not), a
// wrong outcome naming status; every other case's card is not done; the
// cards add up to the scorecard's outcome figures.
func checkOutcomeCards(t *testing.T, sc policies.Scorecard, step, member string) {
	t.Helper()
	if len(sc.Outcomes) != int(sc.OutcomeMax) {
		t.Fatalf("%d outcome cards, outcome max %v; want one card per outcome", len(sc.Outcomes), sc.OutcomeMax)
	}
	sum, wrong := 0.0, 0
	for _, oc := range sc.Outcomes {
		sum += oc.Score
		if oc.Wrong {
			wrong++
		}
		if oc.Task != step {
			if oc.Done || oc.Score != 0 || oc.By != "" {
				t.Errorf("card of %s (not completed) is %+v; want not done, score 0", oc.Task, oc)
			}
			continue
		}
		if !oc.Done || oc.By != member || oc.Template != "refund" || oc.Record != "invoice" || oc.Step != "refund" {
			t.Errorf("card of %s is %+v; want done by %s, template and step refund, record invoice", step, oc, member)
		}
		if oc.Right != 1 || oc.Fields != 2 || oc.Score != 0.5 || !oc.Wrong || !slices.Equal(oc.Unmet, []string{"status"}) {
			t.Errorf("card of %s: right %d of %d, score %v, wrong %v, unmet %v; want 1 of 2, 0.5, wrong, unmet [status]",
				step, oc.Right, oc.Fields, oc.Score, oc.Wrong, oc.Unmet)
		}
	}
	if sum != sc.Outcome || wrong != sc.WrongOutcomes {
		t.Errorf("cards add up to outcome %v with %d wrong; the scorecard has %v and %d", sum, wrong, sc.Outcome, sc.WrongOutcomes)
	}
}
