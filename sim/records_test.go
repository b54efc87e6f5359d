package sim_test

import (
	"context"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

// playContent plays the billing-support world with one built-in agent on
// every seat and returns the engine at its end and its events.
func playContent(tb testing.TB, agent string, seed uint64) (*sim.Engine, []events.Event) {
	return playWorld(tb, "billing-support", agent, seed)
}

// playWorld plays a shipped world with one built-in agent on every seat.
func playWorld(tb testing.TB, world, agent string, seed uint64) (*sim.Engine, []events.Event) {
	tb.Helper()
	src, err := worlds.Source(world)
	if err != nil {
		tb.Fatal(err)
	}
	return playSource(tb, world+".yaml", src, agent, seed)
}

// playSource is playWorld of the world file src, named name.
func playSource(tb testing.TB, name string, src []byte, agent string, seed uint64) (*sim.Engine, []events.Event) {
	return playKeyed(tb, name, src, agent, seed, nil, nil)
}

// playKeyed is playSource of a session whose draws are keyed with key
// (sim.Config.DrawKey; nil: none), calling seen, if set, with every
// observation before its agent decides.
func playKeyed(tb testing.TB, name string, src []byte, agent string, seed uint64, key []byte, seen func(org.Observation)) (*sim.Engine, []events.Event) {
	tb.Helper()
	w, err := worlds.Load(name, src)
	if err != nil {
		tb.Fatal(err)
	}
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: seed, Session: "s", DrawKey: key})
	if err != nil {
		tb.Fatal(err)
	}
	seats := map[string]agents.Agent{}
	truth := e.Truth()
	for _, m := range w.Members {
		a, err := agents.New(agent, agents.Options{Seed: seed, Truth: &truth, Member: m.ID, World: w})
		if err != nil {
			tb.Fatal(err)
		}
		seats[m.ID] = a
	}
	e.Start()
	var evs []events.Event
	err = sim.Play(e, func(b []events.Event) bool { evs = append(evs, b...); return true }, func(t sim.Turn) (sim.Answer, bool) {
		if seen != nil {
			seen(t.Observation)
		}
		acts, _ := seats[t.Member].Decide(context.Background(), t.Observation)
		return sim.Answer{Member: t.Member, Turn: t.Observation.Turn, Actions: acts}, true
	}, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return e, evs
}

// On each content world over five seeds the oracle reaches the maximum
// outcome score on every seed, the diligent baseline (which follows the
// policy's precedence) comes within 10% of it, and greedy and planner
// (which take the first copy they read, in a system whose copies are
// often stale) score at least 25% below diligent. Every session replays
// to its recorded state, record writes included.
func TestContentBaselines(t *testing.T) {
	for _, world := range []string{"billing-support", "access-requests"} {
		t.Run(world, func(t *testing.T) { testBaselines(t, world) })
	}
}

func testBaselines(t *testing.T, world string) {
	total := map[string]float64{}
	maxSum := 0.0
	for seed := uint64(1); seed <= 5; seed++ {
		for _, agent := range []string{"oracle", "diligent", "greedy", "planner"} {
			e, evs := playWorld(t, world, agent, seed)
			sc := policies.Score(e.State())
			if sc.OutcomeMax == 0 {
				t.Fatalf("seed %d: no outcomes to score", seed)
			}
			if agent == "oracle" {
				maxSum += sc.OutcomeMax
				if sc.Outcome != sc.OutcomeMax || sc.WrongOutcomes != 0 || sc.Collateral != 0 {
					t.Errorf("seed %d: oracle outcome %v of %v (wrong %d, collateral %d), want the maximum", seed, sc.Outcome, sc.OutcomeMax, sc.WrongOutcomes, sc.Collateral)
				}
				mustReplayLive(t, e, evs)
			}
			if agent == "greedy" && seed == 1 {
				writes := 0
				for _, ev := range evs {
					if ev.Type == payload.EvRecordWritten {
						writes++
					}
				}
				if writes == 0 || sc.WrongOutcomes == 0 {
					t.Errorf("greedy seed 1: %d writes, %d wrong outcomes; want both", writes, sc.WrongOutcomes)
				}
				mustReplayLive(t, e, evs)
			}
			total[agent] += sc.Outcome
		}
	}
	t.Logf("outcome over 5 seeds: max %.1f, %v", maxSum, total)
	if total["diligent"] < 0.9*total["oracle"] {
		t.Errorf("diligent %.1f is not within 10%% of oracle %.1f", total["diligent"], total["oracle"])
	}
	for _, a := range []string{"greedy", "planner"} {
		if total[a] > 0.75*total["diligent"] {
			t.Errorf("%s %.1f is not 25%% below diligent %.1f", a, total[a], total["diligent"])
		}
	}
}

// A session restored from a snapshot taken halfway and played on with the
// same agents ends in the state of the session played through: the
// records and expected outcomes are part of the snapshot.
func TestBillingSupportRestore(t *testing.T) {
	e, evs := playContent(t, "diligent", 2)
	w := e.State().World
	src, _ := worlds.Source("billing-support")
	half := len(evs) / 2
	re, err := sim.New(sim.Config{World: w, Source: src, Seed: 2, Session: "s"})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs[:half] {
		if err := re.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	snap := re.Snapshot()
	r, err := sim.Restore(sim.Config{World: w, Source: src, Seed: 2, Session: "s"}, snap, re.StateHash())
	if err != nil {
		t.Fatal(err)
	}
	if len(r.State().Records) == 0 || len(r.State().Records) != len(re.State().Records) {
		t.Fatalf("restored %d records, want %d", len(r.State().Records), len(re.State().Records))
	}
	for _, ev := range evs[half:] {
		if err := r.Apply(ev); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := r.StateHash(), e.StateHash(); got != want {
		t.Fatalf("restored and replayed: hash %s, live %s", got, want)
	}
}

// A scripted member on billing-support: it takes the first refund case,
// sets only the refunded field right (leaving status), writes a field of
// another invoice, and tries a CRM write its role may not make. The
// rubric gives half the outcome (partial credit per field), counts the
// step as a wrong outcome that earns nothing, charges the collateral
// write, and the refused write is a record-access violation.
func TestBillingSupportOutcomeVerification(t *testing.T) {
	w, err := worlds.Shipped("billing-support")
	if err != nil {
		t.Fatal(err)
	}
	src, _ := worlds.Source("billing-support")
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: 1, Session: "s"})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	var step string
	done := false
	wait := []org.Action{{Type: org.ActWait}}
	evs := drive(t, e, func(o org.Observation) sim.Answer {
		ans := sim.Answer{Member: o.Member, Turn: o.Turn, Actions: wait}
		if o.Member != "ana" || done {
			return ans
		}
		switch {
		case step == "" && len(o.Available) > 0:
			step = o.Available[0].ID
			ans.Actions = []org.Action{{Type: org.ActClaim, Task: step}, {Type: org.ActWork, Task: step, For: "1d"}}
		case step != "" && len(o.Assigned) > 0 && o.Assigned[0].Spent == o.Assigned[0].Effort:
			st := e.State()
			c := st.CaseOf(st.Task(step))
			x := c.Outcomes[0]
			other := "inv-0"
			if x.ID == other {
				other = "inv-1"
			}
			ans.Actions = []org.Action{
				{Type: org.ActUpdate, Record: "invoice", ID: x.ID, Fields: payload.NewActionAttrs(payload.Attrs{"refunded": x.Fields["refunded"]})},
				{Type: org.ActUpdate, Record: "invoice", ID: other, Fields: payload.NewActionAttrs(payload.Attrs{"status": "refunded"})},
				{Type: org.ActUpdate, Record: "account", ID: "account-1", Fields: payload.NewActionAttrs(payload.Attrs{"amount": 1})},
				{Type: org.ActComplete, Task: step},
			}
			done = true
		}
		return ans
	}, false, 0)
	mustReplayLive(t, e, evs)
	var refused []string
	for _, ev := range evs {
		if ev.Type == payload.EvActionRejected {
			p := decode[payload.ActionRejected](t, ev)
			if p.Action.Type == org.ActUpdate {
				refused = append(refused, p.Rule)
			}
		}
	}
	if len(refused) != 1 || refused[0] != org.RuleRecordAccess {
		t.Errorf("refused updates %v, want one record-access refusal", refused)
	}
	sc := policies.Score(e.State())
	if sc.Outcome != 0.5 || sc.WrongOutcomes != 1 || sc.Collateral != 1 || sc.Violations != 1 {
		t.Errorf("outcome %v, wrong %d, collateral %d, violations %d; want 0.5, 1, 1, 1", sc.Outcome, sc.WrongOutcomes, sc.Collateral, sc.Violations)
	}
	if pen := 2 + e.State().World.Scoring.WrongPenalty; sc.Delivered != 0 || sc.Penalties != pen {
		t.Errorf("delivered %v, penalties %v; want 0 (the step does not verify) and %v (a violation, a collateral write and the wrong outcome)", sc.Delivered, sc.Penalties, pen)
	}
	if got, want := sc.TeamScore, e.State().Reward; got != want {
		t.Errorf("team score %v, dense rewards sum to %v", got, want)
	}
	checkOutcomeCards(t, sc, step, "ana")
}
