package sim_test

import (
	"slices"
	"testing"

	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/simtest"
)

// Agents are told what happened: an observation lists the notes of the
// interruptions that have happened (news), the latest first, none before
// the first. product-launch's notes ("Partners need webhooks", "CI is
// down", ...) reached no observation: they were in the log alone.
func TestObservationsTellTheNews(t *testing.T) {
	e, w := simtest.Started(t, "product-launch.yaml", simtest.Source(t, "product-launch"), 1)
	first := w.Horizon
	for _, in := range w.Interruptions {
		if in.Note != "" {
			first = min(first, in.At)
		}
	}
	seen := map[string]bool{}
	turns, before := 0, 0
	decide := func(turn sim.Turn) (sim.Answer, bool) {
		o := turn.Observation
		turns++
		// What has happened by the time of the last event, the latest first.
		var want []org.NewsView
		for i, in := range w.Interruptions {
			if e.State().Fired[i] && in.Note != "" {
				want = append(want, org.NewsView{At: in.At, Kind: in.Kind, Note: in.Note})
			}
		}
		slices.SortStableFunc(want, func(a, b org.NewsView) int { return int(b.At - a.At) })
		want = want[:min(len(want), org.MaxNews)]
		if !slices.Equal(o.News, want) {
			t.Fatalf("turn %d of %s at %d: news %+v, want %+v", o.Turn, o.Member, o.Time, o.News, want)
		}
		if o.Time < first {
			before++
			if len(o.News) > 0 {
				t.Fatalf("%s is told %+v at %d, before anything happened (%d)", o.Member, o.News, o.Time, first)
			}
		}
		for _, n := range o.News {
			seen[n.Note] = true
		}
		return simtest.Greedy(turn)
	}
	if err := sim.Play(e, nil, decide, 0); err != nil {
		t.Fatal(err)
	}
	fired := 0
	for i, in := range w.Interruptions {
		if in.Note == "" || !e.State().Fired[i] {
			continue
		}
		fired++
		if !seen[in.Note] {
			t.Errorf("no observation told %q (%s at %d)", in.Note, in.Kind, in.At)
		}
	}
	if fired < 3 || before == 0 || turns == 0 {
		t.Fatalf("%d interruptions with a note fired, %d of %d turns before the first: the test saw too little", fired, before, turns)
	}
}
