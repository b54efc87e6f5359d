package sim_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

// scoring.wrong_penalty charges every completion of a case step with its
// outcome unmet, a completion its requester reopened included: greedy on
// billing-support (refunds from the stale CRM, so wrong, reopened and
// redone) plays the same session with and without it, and the team score
// differs by the penalty times the wrong outcomes the scorecard counts.
// The dense rewards add up to the score and the session replays to its
// recorded rewards (the diagnosis: TestDiagnoseWrongPenalty).
func TestWrongPenaltyChargesEachWrongCompletion(t *testing.T) {
	const pen = 3
	play := func(extra string) (policies.Scorecard, *sim.Engine, []events.Event) {
		src, err := worlds.Source("billing-support")
		if err != nil {
			t.Fatal(err)
		}
		// The shipped world's own penalty, replaced by the one asked for.
		shipped := []byte("  wrong_penalty: 5\n")
		if !bytes.Contains(src, shipped) {
			t.Fatalf("billing-support has no line %q", shipped)
		}
		src = bytes.Replace(src, shipped, []byte(extra), 1)
		e, evs := playSource(t, "billing-support.yaml", src, "greedy", 1)
		return policies.Score(e.State()), e, evs
	}
	free, _, evs0 := play("")
	sc, e, evs := play("  wrong_penalty: 3\n")
	reopened := 0
	for _, ev := range evs {
		if ev.Type == payload.EvCaseReopened {
			reopened++
		}
	}
	if sc.WrongOutcomes == 0 || reopened == 0 {
		t.Fatalf("%d wrong outcomes, %d reopenings: the test proves nothing", sc.WrongOutcomes, reopened)
	}
	// The same play but for the rewards paid (more of them are not zero).
	if n, n0 := countBut(evs, payload.EvReward), countBut(evs0, payload.EvReward); n != n0 || sc.Delivered != free.Delivered || sc.WrongOutcomes != free.WrongOutcomes {
		t.Fatalf("the penalty changed the play: %d events but rewards against %d, delivered %v against %v", n, n0, sc.Delivered, free.Delivered)
	}
	if got, want := sc.Penalties-free.Penalties, float64(pen*sc.WrongOutcomes); math.Abs(got-want) > 1e-6 {
		t.Errorf("the penalty added %v to the penalties; want %d wrong outcomes × %d = %v", got, sc.WrongOutcomes, pen, want)
	}
	if got, want := sc.TeamScore, free.TeamScore-float64(pen*sc.WrongOutcomes); math.Abs(got-want) > 1e-6 {
		t.Errorf("team score %v with the penalty, %v without; want %v", got, free.TeamScore, want)
	}
	if d := sc.TeamScore - e.State().Reward; math.Abs(d) > 1e-6 {
		t.Errorf("team score %v, dense rewards sum to %v", sc.TeamScore, e.State().Reward)
	}
	mustReplayLive(t, e, evs)
	t.Logf("%d wrong outcomes (%d cases reopened): team score %v without the penalty, %v with", sc.WrongOutcomes, reopened, free.TeamScore, sc.TeamScore)
}

// countBut counts the events not of type typ.
func countBut(evs []events.Event, typ string) int {
	n := 0
	for _, ev := range evs {
		if ev.Type != typ {
			n++
		}
	}
	return n
}
