package sim_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/policies"

	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

// A member who writes every invoice's amount to 0 before their cases open
// (collateral writes, each charged at the violation penalty) does not make
// "refund 0" what those cases expect: from log format 7 a case's outcomes
// are computed from the records as the seed and the cases' own steps left
// them (org.TruthOf). In format 6 they were computed from the record as it
// stood, so the corruption made every blind "refund 0" right (a red team
// scored 114 against diligent's 122 without reading a record).
func TestCollateralWritesDoNotChangeWhatCasesExpect(t *testing.T) {
	expected := func(format int, corrupt bool) (map[string]string, int) {
		w, e := billingSeed1(t, format)
		e.Start()
		written := false
		evs := drive(t, e, func(o org.Observation) sim.Answer {
			ans := sim.Answer{Member: o.Member, Turn: o.Turn, Actions: []org.Action{{Type: org.ActWait}}}
			if corrupt && !written && o.Member == "ana" {
				written = true
				ans.Actions = nil
				for i := range org.MaxActions {
					ans.Actions = append(ans.Actions, org.Action{Type: org.ActUpdate, Record: "invoice", ID: fmt.Sprintf("inv-%d", i),
						Fields: payload.NewActionAttrs(payload.Attrs{"amount": 0})})
				}
			}
			return ans
		}, false, 0)
		out, collateral := map[string]string{}, 0
		for _, ev := range evs {
			switch ev.Type {
			case payload.EvCaseOpened:
				p := decode[payload.CaseOpened](t, ev)
				b, _ := json.Marshal(p.Expected)
				out[p.Case] = string(b)
			case payload.EvRecordWritten:
				if decode[payload.RecordWritten](t, ev).Collateral {
					collateral++
				}
			}
		}
		if corrupt {
			mustReplayLive(t, e, evs)
			// A checkpoint keeps the truths: restored, the state hashes
			// the same and reads the same truth.
			st, err := org.Restore(w, e.State().Snapshot())
			if err != nil {
				t.Fatal(err)
			}
			if st.Hash() != e.State().Hash() {
				t.Fatal("the state restored from its snapshot hashes otherwise")
			}
			for i := range org.MaxActions {
				id := fmt.Sprintf("inv-%d", i)
				a, _ := st.TruthOf("invoice", id)
				b, _ := e.State().TruthOf("invoice", id)
				if fmt.Sprint(a) != fmt.Sprint(b) {
					t.Fatalf("%s restored reads the truth %v; the state it was taken of %v", id, a, b)
				}
			}
		}
		return out, collateral
	}
	clean, _ := expected(0, false)
	corrupted, collateral := expected(0, true)
	if collateral == 0 || len(clean) == 0 {
		t.Fatalf("%d collateral writes, %d cases: the test proves nothing", collateral, len(clean))
	}
	for c, want := range clean {
		if got := corrupted[c]; got != want {
			t.Errorf("case %s after %d collateral writes expects %s; the same case without them %s", c, collateral, got, want)
		}
	}
	// Format 6 sessions are judged as they were.
	clean6, _ := expected(6, false)
	corrupted6, _ := expected(6, true)
	changed := 0
	for c, want := range clean6 {
		if corrupted6[c] != want {
			changed++
		}
	}
	if changed == 0 {
		t.Error("in format 6 no case expected otherwise after the collateral writes; the corruption this guards against did not happen")
	}
}

// A case whose refund was wrong is reopened and only the refund redone; the
// confirmation and note that stood (their outcomes met) count once the redo
// does, from log format 7 (policies' redoneAs). In format 6 they kept
// depending on the replaced refund, which never counts again: fixing only
// what was wrong earned nothing for the rest, and getting the rest wrong
// too earned more. The dense rewards add up to the final score both ways.
func TestStepsThatStoodCountOnceTheirRedoDoes(t *testing.T) {
	play := func(format int) (float64, int, *sim.Engine, []events.Event) {
		w, e := billingSeed1(t, format)
		seats := map[string]agents.Agent{}
		for _, m := range w.Members {
			a, err := agents.New("diligent", agents.Options{Seed: 1, Member: m.ID, World: w})
			if err != nil {
				t.Fatal(err)
			}
			seats[m.ID] = a
		}
		skewed := map[string]bool{} // the invoices whose first refund was written off by one
		e.Start()
		var evs []events.Event
		err := sim.Play(e, func(b []events.Event) bool { evs = append(evs, b...); return true }, func(tn sim.Turn) (sim.Answer, bool) {
			acts, _ := seats[tn.Member].Decide(context.Background(), tn.Observation)
			for i, a := range acts {
				if a.Type != org.ActUpdate || a.Record != "invoice" || skewed[a.ID] {
					continue
				}
				fields := a.Fields.Attrs()
				var v float64
				switch x := fields["refunded"].(type) {
				case float64:
					v = x
				case int64:
					v = float64(x)
				case int:
					v = float64(x)
				default:
					continue
				}
				fields["refunded"] = v + 1
				acts[i].Fields = payload.NewActionAttrs(fields)
				skewed[a.ID] = true
			}
			return sim.Answer{Member: tn.Member, Turn: tn.Observation.Turn, Actions: acts}, true
		}, 0)
		if err != nil {
			t.Fatal(err)
		}
		reopened := 0
		for _, ev := range evs {
			if ev.Type == payload.EvCaseReopened {
				reopened++
			}
		}
		sc := policies.Score(e.State())
		if d := sc.TeamScore - e.State().Reward; math.Abs(d) > 1e-6 {
			t.Errorf("format %d: team score %v, dense rewards sum to %v", format, sc.TeamScore, e.State().Reward)
		}
		return sc.TeamScore, reopened, e, evs
	}
	score7, reopened, e, evs := play(0)
	score6, _, _, _ := play(6)
	if reopened == 0 {
		t.Fatal("no case was reopened: the test proves nothing")
	}
	mustReplayLive(t, e, evs)
	if score7 <= score6 {
		t.Errorf("%d cases reopened for their refund alone: team score %v in format 7, %v in format 6; want the steps that stood to count in 7", reopened, score7, score6)
	}
	for _, u := range policies.Score(e.State()).Unverified {
		if strings.Contains(u, "and the step was redone as a new task)") {
			t.Errorf("a step that stood does not count: %s", u)
		}
	}
	t.Logf("%d reopened; team score %v (format 7), %v (format 6)", reopened, score7, score6)
}

// billingSeed1 makes an engine of billing-support, seed 1, recording log
// format format (0: the current one).
func billingSeed1(t *testing.T, format int) (*worlds.World, *sim.Engine) {
	t.Helper()
	w, err := worlds.Shipped("billing-support")
	if err != nil {
		t.Fatal(err)
	}
	src, _ := worlds.Source("billing-support")
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: 1, Session: "s", LogFormat: format})
	if err != nil {
		t.Fatal(err)
	}
	return w, e
}
