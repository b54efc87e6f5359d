package analyze_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/analyze"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

// mustShipped plays a shipped world with greedy agents and loads the log.
func mustShipped(tb testing.TB, name string, seed uint64) *analyze.Session {
	return mustPlayed(tb, name, seed, simtest.Greedy)
}

// mustPlayed plays a shipped world with answer and loads the log.
func mustPlayed(tb testing.TB, name string, seed uint64, answer func(sim.Turn) (sim.Answer, bool)) *analyze.Session {
	tb.Helper()
	src, err := worlds.Source(name)
	if err != nil {
		tb.Fatal(err)
	}
	w, err := worlds.Load(name+".yaml", src)
	if err != nil {
		tb.Fatal(err)
	}
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: seed, Session: "s"})
	if err != nil {
		tb.Fatal(err)
	}
	e.Start()
	var evs []events.Event
	if err := sim.Play(e, func(b []events.Event) bool { evs = append(evs, b...); return true }, answer, 0); err != nil {
		tb.Fatal(err)
	}
	s, err := analyze.Load(func(yield func(events.Event, error) bool) {
		for _, ev := range evs {
			if !yield(ev, nil) {
				return
			}
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// refund is billing-support's rule: an annual plan in full, a monthly one
// half (rounded down).
func refund(amount int64, plan string) int64 {
	if plan == "annual" {
		return amount
	}
	return amount / 2
}

func asInt(x any) int64 {
	switch v := x.(type) {
	case int64:
		return v
	case float64:
		return int64(v)
	case int:
		return int64(v)
	}
	return -1
}

// On billing-support greedy reads the CRM's copy of an invoice first,
// which is often stale: the trace of a case with a wrong outcome shows the
// copy the completing member read (its values are the ones its refund was
// computed from), the invoice as billing — the authoritative system — had
// it (its values give the expected refund), what was written and what was
// wanted, and says so in its summary and its text.
func TestTraceOfAWrongOutcome(t *testing.T) {
	s := mustShipped(t, "billing-support", 1)
	checked := 0
	for _, c := range s.State.Cases {
		ct, err := s.Case(c.ID)
		if err != nil {
			t.Fatal(err)
		}
		// The refund step (its task now: a reopened case redoes it as a
		// new task) carries the invoice outcome.
		var st *analyze.CaseStepTrace
		for i := range ct.Steps {
			if task := s.State.Task(ct.Steps[i].Task); task != nil && task.Spec.Step == "refund" && slices.Contains(c.Steps, task.ID) {
				st = &ct.Steps[i]
			}
		}
		if st == nil || st.Outcome == nil {
			t.Fatalf("case %s: its refund step has no outcome trace", c.ID)
		}
		ot := st.Outcome
		if !ot.Wrong {
			continue
		}
		checked++
		if ot.By != st.DoneBy || ot.Record != "invoice" || ot.ID != c.Attributes["invoice"] {
			t.Errorf("case %s: outcome of %s %s by %s; want invoice %v by %s", c.ID, ot.Record, ot.ID, ot.By, c.Attributes["invoice"], st.DoneBy)
		}
		var inv *analyze.RecordSeen
		for i := range ot.Authoritative {
			if a := &ot.Authoritative[i]; a.Record == "invoice" && a.ID == ot.ID {
				inv = a
			}
		}
		if inv == nil || inv.System != "billing" || !inv.Authoritative {
			t.Fatalf("case %s: authoritative records %+v; want billing's invoice %s, marked authoritative", c.ID, ot.Authoritative, ot.ID)
		}
		if got, want := refund(asInt(inv.Fields["amount"]), fmt.Sprint(inv.Fields["plan"])), asInt(ot.Expected["refunded"]); got != want {
			t.Errorf("case %s: the authoritative invoice gives a refund of %d, the expected one is %d", c.ID, got, want)
		}
		// A copy it read (the first of duplicates, as greedy takes it) is
		// what its refund came from.
		wrote := asInt(ot.AtDone["refunded"])
		var copyRead *analyze.RecordSeen
		for i := range ot.Read {
			r := &ot.Read[i]
			if r.System == "crm" && r.CopyOf == "invoice" && r.Fields["invoice"] == ot.ID &&
				refund(asInt(r.Fields["amount"]), fmt.Sprint(r.Fields["plan"])) == wrote {
				copyRead = r
			}
			if r.At.Seq == 0 || (st.Done != nil && r.At.Seq > st.Done.Seq) {
				t.Errorf("case %s: read at seq %d, after the completion at %d", c.ID, r.At.Seq, st.Done.Seq)
			}
		}
		if copyRead == nil {
			t.Fatalf("case %s: reads %+v; want %s's read of a CRM copy of %s whose values give the %d it wrote", c.ID, ot.Read, ot.By, ot.ID, wrote)
		}
		if len(ot.Writes) == 0 || ot.Writes[len(ot.Writes)-1].Member != ot.By {
			t.Errorf("case %s: writes %+v; want %s's", c.ID, ot.Writes, ot.By)
		}
		for _, want := range []string{"read crm account " + copyRead.ID, "billing invoice " + ot.ID + " (authoritative) had",
			fmt.Sprintf("%s wrote refunded %d", ot.By, wrote), fmt.Sprintf("wanted refunded %d", asInt(ot.Expected["refunded"]))} {
			if !strings.Contains(ot.Summary, want) {
				t.Errorf("case %s: summary %q lacks %q", c.ID, ot.Summary, want)
			}
		}
		var b bytes.Buffer
		ct.WriteText(&b)
		for _, want := range []string{"WRONG OUTCOME", "read", "crm account " + copyRead.ID + " (copy of invoice)", "billing invoice " + ot.ID + " (authoritative) at completion", ot.Summary} {
			if !strings.Contains(b.String(), want) {
				t.Errorf("case %s: trace text lacks %q:\n%s", c.ID, want, b.String())
			}
		}
	}
	if checked == 0 {
		t.Fatal("greedy left no wrong outcome on billing-support seed 1")
	}
	t.Logf("%d wrong outcomes traced", checked)
}

// cheating answers every turn as a cheater of the member's own would.
func cheating() func(sim.Turn) (sim.Answer, bool) {
	cheaters := map[string]*agents.Cheater{}
	return func(tn sim.Turn) (sim.Answer, bool) {
		c := cheaters[tn.Member]
		if c == nil {
			c = &agents.Cheater{}
			cheaters[tn.Member] = c
		}
		acts, _ := c.Decide(context.Background(), tn.Observation)
		return sim.Answer{Member: tn.Member, Turn: tn.Observation.Turn, Actions: acts}, true
	}
}

// The diagnosis of a content world names wrong outcomes and collateral
// damage as causes: with cheaters on billing-support, wrong_outcome holds
// the value of the cases whose step was completed with its outcome unmet
// (naming who completed them), collateral the penalty of the writes no
// case asked for (naming the writers), and the causes add up.
func TestDiagnoseWrongOutcomesAndCollateral(t *testing.T) {
	s := mustPlayed(t, "billing-support", 1, cheating())
	d := s.Diagnose()
	checkCasesAddUp(t, s, d)
	card := policies.Score(s.State)
	if card.WrongOutcomes == 0 || card.Collateral == 0 {
		t.Fatalf("the cheaters left %d wrong outcomes and %d collateral writes; the test needs both", card.WrongOutcomes, card.Collateral)
	}
	wantLost, count, lost := 0.0, map[string]int{}, map[string]bool{}
	for _, oc := range card.Outcomes {
		if oc.Wrong {
			if !lost[oc.Case] { // a case's value is lost once, however many of its steps are wrong
				wantLost += s.State.Case(oc.Case).Value
			}
			lost[oc.Case] = true
			count[oc.By]++
		}
		for _, r := range oc.Redone { // each completion its requester reopened is a wrong outcome too
			count[r.By]++
		}
	}
	by := map[string]bool{}
	for m, n := range count {
		by[m+": "+analyze.Plural(n, "wrong outcome")] = true
	}
	wo, ok := cause(d, analyze.CauseWrongOutcome)
	if !ok || wo.Points < wantLost-1e-6 {
		t.Errorf("wrong_outcome = %+v (%v); want at least the %v points of the wrongly completed cases", wo, ok, wantLost)
	}
	if len(wo.Detail) != len(by) {
		t.Errorf("wrong_outcome detail %+v; want %v", wo.Detail, by)
	}
	for _, p := range wo.Detail {
		if !by[p.What] {
			t.Errorf("wrong_outcome names %q; want one of %v", p.What, by)
		}
	}
	col, ok := cause(d, analyze.CauseCollateral)
	if want := float64(card.Collateral) * s.World.Scoring.ViolationPenalty; !ok || col.Points != want {
		t.Errorf("collateral = %+v (%v); want %v points", col, ok, want)
	}
	named := 0
	for _, m := range s.State.Members {
		for _, p := range col.Detail {
			if m.Collateral > 0 && strings.HasPrefix(p.What, m.ID+": ") {
				named++
			}
		}
	}
	if named == 0 || named != len(col.Detail) {
		t.Errorf("collateral detail %+v; want each writer of collateral damage named", col.Detail)
	}
}

// A reply judged wrong says what its doer told the requester: with
// cheaters on billing-support some replies hedge ("305 or 610"), and their
// traces quote every message the reply was judged on.
func TestReplyTraceQuotesWhatWasTold(t *testing.T) {
	s := mustPlayed(t, "billing-support", 1, cheating())
	hedged, right := 0, 0
	for _, c := range s.State.Cases {
		ct, err := s.Case(c.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range ct.Steps {
			ot := st.Outcome
			if ot == nil || ot.Kind != worlds.KindReply || !ot.Done {
				continue
			}
			want := fmt.Sprint(ot.Expected["carries"])
			if len(ot.Unmet) == 0 {
				right++
				if len(ot.Told) == 0 || !strings.Contains(ot.Summary, "as wanted") {
					t.Errorf("%s: met, told %q, summary %q", st.Task, ot.Told, ot.Summary)
				}
				continue
			}
			if len(ot.Told) == 0 {
				if !strings.Contains(ot.Summary, "no message naming the case") {
					t.Errorf("%s: nothing told, summary %q", st.Task, ot.Summary)
				}
				continue
			}
			for _, m := range ot.Told {
				if !strings.Contains(ot.Summary, strconv.Quote(m)) {
					t.Errorf("%s: summary %q does not quote %q", st.Task, ot.Summary, m)
				}
			}
			if slices.ContainsFunc(ot.Told, func(m string) bool { return org.ContainsWord(m, want) }) {
				hedged++ // the right value, and another
			}
		}
	}
	if hedged == 0 || right == 0 {
		t.Fatalf("%d hedged replies and %d right ones traced; the test needs both", hedged, right)
	}
	t.Logf("%d hedged replies and %d right ones traced", hedged, right)
}

// On access-requests (scoring.wrong_penalty 4) the cheaters' wrong
// outcomes cost their penalty beside the cases' lost value: wrong_outcome
// holds both, and the causes still add up to the gap between the world's
// possible value and the team score.
func TestDiagnoseWrongPenalty(t *testing.T) {
	s := mustPlayed(t, "access-requests", 1, cheating())
	d := s.Diagnose()
	checkCasesAddUp(t, s, d)
	card := policies.Score(s.State)
	pen := policies.WrongPenalties(s.State)
	if s.World.Scoring.WrongPenalty == 0 || card.WrongOutcomes == 0 || pen != float64(card.WrongOutcomes)*s.World.Scoring.WrongPenalty {
		t.Fatalf("penalty %v for %d wrong outcomes at %v each; the test needs them, one penalty each", pen, card.WrongOutcomes, s.World.Scoring.WrongPenalty)
	}
	lost := 0.0
	seen := map[string]bool{}
	for _, oc := range card.Outcomes {
		if oc.Wrong && !seen[oc.Case] {
			seen[oc.Case] = true
			lost += s.State.Case(oc.Case).Value
		}
	}
	if wo, ok := cause(d, analyze.CauseWrongOutcome); !ok || wo.Points < lost+pen-1e-6 {
		t.Errorf("wrong_outcome = %+v (%v); want at least the cases' %v points and the %v of penalties", wo, ok, lost, pen)
	}
}

// A meeting's trace says what was wanted (the attendees, the window and
// the length, as the step's view shows them) and what was booked at
// completion: the lines were empty, a meeting having no fields.
func TestTraceOfAMeeting(t *testing.T) {
	s := mustShipped(t, "meetings", 1)
	ct, err := s.Case("syncs-1")
	if err != nil {
		t.Fatal(err)
	}
	ot := ct.Steps[0].Outcome
	if ot == nil || ot.Kind != policies.OutcomeMeeting || !ot.Done {
		t.Fatalf("outcome %+v, want a meeting completed", ot)
	}
	if ot.Expected["attendees"] != "eli, ema" || ot.Expected["length"] != "30m" || ot.Expected["from"] == nil || ot.Expected["to"] == nil {
		t.Errorf("wanted %v: want the attendees eli, ema, the window and 30m", ot.Expected)
	}
	if ot.AtDone["meeting"] != "mtg-1" || ot.AtDone["attendees"] != "eli, ema" || ot.AtDone["start"] == nil || ot.AtDone["end"] == nil {
		t.Errorf("at completion %v: want mtg-1 of eli, ema with its start and end", ot.AtDone)
	}
	var b bytes.Buffer
	ct.WriteText(&b)
	for _, line := range strings.Split(b.String(), "\n") {
		if f := strings.Fields(line); len(f) > 0 && (f[0] == "wanted" && len(f) == 1 || f[0] == "at" && len(f) == 2) {
			t.Errorf("an empty line %q in\n%s", line, b.String())
		}
	}
}
