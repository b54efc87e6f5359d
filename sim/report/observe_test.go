package report_test

import (
	"bytes"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim/analyze"
	"github.com/corpsim/corpsim/sim/report"
)

// TestObserveIsAdd: a report built in the analysis's pass (NewBuilderOn,
// Observe on analyze.LoadWith's state) is the page a builder of its own
// makes from the same events with Add, byte for byte, in worlds with
// projects, tickets, approvals, cases, systems and meetings.
func TestObserveIsAdd(t *testing.T) {
	for _, name := range []string{"startup", "support-desk", "product-launch", "portfolio", "procurement", "access-requests", "claims", "wind-ops", "meetings", "billing-support"} {
		t.Run(name, func(t *testing.T) {
			w, src := mustWorld(t, name, nil)
			evs := drive(t, w, src, 7)
			s := mustAnalysis(t, evs)
			_, want := mustReport(t, w, evs, report.Options{Session: "s", Explain: s})

			var b *report.Builder
			observed := 0
			s2, err := analyze.LoadWith(func(yield func(events.Event, error) bool) {
				for _, ev := range evs {
					if !yield(ev, nil) {
						return
					}
				}
			}, analyze.LoadOptions{Events: uint64(len(evs)), Observe: func(s *analyze.Session, ev *events.Event, typed any) error {
				if b == nil {
					b = report.NewBuilderOn(s.World, s.State, report.Options{Session: "s"})
				}
				observed++
				return b.Observe(ev, typed)
			}})
			if err != nil {
				t.Fatal(err)
			}
			if observed != len(evs) {
				t.Fatalf("observed %d events of %d", observed, len(evs))
			}
			b.SetExplainer(s2)
			var got bytes.Buffer
			if err := b.Report().WriteHTML(&got); err != nil {
				t.Fatal(err)
			}
			if got.String() != want {
				i := 0
				for i < min(got.Len(), len(want)) && got.String()[i] == want[i] {
					i++
				}
				t.Fatalf("the pages differ at byte %d of %d/%d:\nobserved: %.200q\nadded:    %.200q", i, got.Len(), len(want), got.String()[i:], want[i:])
			}
		})
	}
}
