package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/analyze"
	"github.com/corpsim/corpsim/sim/report"
)

// driveCheaters plays billing-support with a cheater on every seat (it
// leaves wrong outcomes and collateral writes) and returns the events.
func driveCheaters(tb testing.TB, seed uint64) []events.Event {
	tb.Helper()
	w, src := mustWorld(tb, "billing-support", nil)
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: seed, Session: "s"})
	if err != nil {
		tb.Fatal(err)
	}
	e.Start()
	cheaters := map[string]*agents.Cheater{}
	var evs []events.Event
	err = sim.Play(e, func(b []events.Event) bool { evs = append(evs, b...); return true }, func(t sim.Turn) (sim.Answer, bool) {
		c := cheaters[t.Member]
		if c == nil {
			c = &agents.Cheater{}
			cheaters[t.Member] = c
		}
		acts, _ := c.Decide(context.Background(), t.Observation)
		return sim.Answer{Member: t.Member, Turn: t.Observation.Turn, Actions: acts}, true
	}, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return evs
}

// TestReportOutcomes: the outcomes section of a billing-support session
// adds up to the scorecard (per step: outcomes, completed, score, mean,
// wrong), lists each wrong outcome with the trace's summary of what its
// completer read and needed, and every collateral write of the log with
// who made it and what it changed, in the page and in the JSON; a world
// without systems has no section.
func TestReportOutcomes(t *testing.T) {
	w, _ := mustWorld(t, "billing-support", nil)
	evs := driveCheaters(t, 1)
	s := mustAnalysis(t, evs)
	r, page := mustReport(t, w, evs, report.Options{Session: "s", Explain: s})
	o := r.Outcomes
	if o == nil || len(o.Steps) == 0 {
		t.Fatalf("outcomes section %+v; want a row per outcome step", o)
	}
	card := r.Score
	var outcomes, wrong, listed int
	var score float64
	steps := map[string]bool{}
	for _, row := range o.Steps {
		if row.Template != "refund" || steps[row.Step] {
			t.Errorf("row %s/%s: want one row per step of refund", row.Template, row.Step)
		}
		steps[row.Step] = true
		outcomes, wrong, score, listed = outcomes+row.Outcomes, wrong+row.Wrong, score+row.Score, listed+len(row.WrongCases)
		if want := row.Score / float64(row.Outcomes); fmt.Sprintf("%.4f", row.Mean) != fmt.Sprintf("%.4f", want) {
			t.Errorf("%s: mean %v; want %v", row.Step, row.Mean, want)
		}
	}
	if !steps["refund"] || float64(outcomes) != card.OutcomeMax || wrong != card.WrongOutcomes || fmt.Sprintf("%.4f", score) != fmt.Sprintf("%.4f", card.Outcome) {
		t.Errorf("rows %v add up to %d outcomes, score %v, %d wrong; want the scorecard's %v outcomes, score %v, %d wrong (and a refund row)",
			steps, outcomes, score, wrong, card.OutcomeMax, card.Outcome, card.WrongOutcomes)
	}
	if card.WrongOutcomes == 0 || listed == 0 {
		t.Fatalf("no wrong outcomes listed (%d on the scorecard); the cheaters should leave some", card.WrongOutcomes)
	}
	for _, row := range o.Steps {
		for _, wc := range row.WrongCases {
			ct, err := s.Case(wc.Case)
			if err != nil {
				t.Fatal(err)
			}
			var ot *analyze.OutcomeTrace
			for _, st := range ct.Steps {
				if st.Task == wc.Task {
					ot = st.Outcome
				}
			}
			if ot == nil || !ot.Wrong || wc.Summary != ot.Summary || wc.Summary == "" || wc.By != ot.By {
				t.Errorf("wrong outcome %+v; want the trace's (%+v)", wc, ot)
			}
			li := `<li class="wrong-outcome" data-case="` + wc.Case + `" data-task="` + wc.Task + `">`
			i := strings.Index(page, li)
			if i < 0 {
				t.Errorf("the page has no entry for wrong outcome %s", wc.Case)
				continue
			}
			if entry := html.UnescapeString(page[i:min(len(page), i+2000)]); !strings.Contains(entry, wc.Summary) {
				t.Errorf("the entry of %s lacks its summary %q", wc.Case, wc.Summary)
			}
		}
	}
	var collateral []string
	for _, ev := range evs {
		if ev.Type != payload.EvRecordWritten {
			continue
		}
		var p payload.RecordWritten
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if p.Collateral {
			collateral = append(collateral, fmt.Sprintf("%d %s %s %s", ev.Seq, ev.Actor, p.Record, p.ID))
		}
	}
	if len(collateral) == 0 || o.Collateral != len(collateral) || len(o.Writes) != len(collateral) {
		t.Fatalf("collateral: section %d (%d listed), log %v; want the same, at least one", o.Collateral, len(o.Writes), collateral)
	}
	for i, wr := range o.Writes {
		if got := fmt.Sprintf("%d %s %s %s", wr.Seq, wr.Member, wr.Record, wr.ID); got != collateral[i] || len(wr.After) == 0 {
			t.Errorf("collateral write %d is %q (after %v); the log has %q", i, got, wr.After, collateral[i])
		}
		if !strings.Contains(page, fmt.Sprintf(`<tr data-seq="%d"><td>%s</td><td>%s</td><td>%s</td><td>%s %s</td>`, wr.Seq, wr.Wall, wr.Member, wr.Op, wr.Record, wr.ID)) {
			t.Errorf("the page's collateral table lacks write %d", wr.Seq)
		}
	}
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var j struct {
		Score struct {
			Outcomes []struct{ Case string } `json:"outcomes"`
		} `json:"score"`
		Outcomes struct {
			Wrong int `json:"wrong"`
			Steps []struct {
				WrongCases []struct{ Summary string } `json:"wrong_cases"`
			} `json:"steps"`
			Writes []struct{ Member string } `json:"collateral_writes"`
		} `json:"outcomes"`
	}
	if err := json.Unmarshal(buf.Bytes(), &j); err != nil {
		t.Fatal(err)
	}
	if len(j.Score.Outcomes) != len(card.Outcomes) || j.Outcomes.Wrong != card.WrongOutcomes || len(j.Outcomes.Writes) != len(collateral) ||
		len(j.Outcomes.Steps) != len(o.Steps) || len(j.Outcomes.Steps[0].WrongCases) != len(o.Steps[0].WrongCases) ||
		len(o.Steps[0].WrongCases) > 0 && j.Outcomes.Steps[0].WrongCases[0].Summary != o.Steps[0].WrongCases[0].Summary {
		t.Errorf("JSON report %s\nlacks the section's figures", buf.String())
	}

	w, src := mustWorld(t, "product-launch", nil)
	evs = drive(t, w, src, 1)
	r, page = mustReport(t, w, evs, report.Options{Session: "s"})
	if r.Outcomes != nil || strings.Contains(page, `id="outcomes"`) {
		t.Error("a world without systems has an outcomes section")
	}
}

// TestReportSaysWhatWrongOutcomesAreAbout: a wrong outcome's entry names
// what it is about as the trace does — the record for a record outcome, a
// meeting (and its criteria) or a reply — never an empty record.
func TestReportSaysWhatWrongOutcomesAreAbout(t *testing.T) {
	for _, tc := range []struct {
		world string
		evs   func(tb testing.TB) []events.Event
		want  []string // entries' beginnings after "by MEMBER: " that must occur
	}{
		{"meetings", func(tb testing.TB) []events.Event {
			w, src := mustWorld(tb, "meetings", nil)
			return drive(tb, w, src, 1)
		}, []string{"meeting, criteria unmet: "}},
		{"billing-support", func(tb testing.TB) []events.Event { return driveCheaters(tb, 1) },
			[]string{"reply, fields unmet: ", "invoice inv-"}},
	} {
		t.Run(tc.world, func(t *testing.T) {
			w, _ := mustWorld(t, tc.world, nil)
			evs := tc.evs(t)
			r, page := mustReport(t, w, evs, report.Options{Session: "s", Explain: mustAnalysis(t, evs)})
			if r.Outcomes == nil || r.Outcomes.Wrong == 0 {
				t.Fatalf("outcomes %+v; the test needs wrong outcomes", r.Outcomes)
			}
			entries := wrongEntryRE.FindAllStringSubmatch(html.UnescapeString(page), -1)
			if len(entries) == 0 {
				t.Fatal("the page lists no wrong outcome")
			}
			found := map[string]bool{}
			for _, e := range entries {
				if strings.HasPrefix(e[1], " ") || strings.HasPrefix(e[1], ",") {
					t.Errorf("wrong outcome %q names nothing it is about", e[0])
				}
				for _, want := range tc.want {
					if strings.HasPrefix(e[1], want) {
						found[want] = true
					}
				}
			}
			for _, want := range tc.want {
				if !found[want] {
					t.Errorf("no wrong outcome reads \"by M: %s…\"; entries: %q", want, entries)
				}
			}
		})
	}
}

var wrongEntryRE = regexp.MustCompile(`<li class="wrong-outcome"[^>]*><b>[^<]*</b> by [^:]*: ([^<]*)`)
