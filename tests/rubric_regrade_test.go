package tests

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
)

// TestOlderRubricLogRegrades: a log recorded under rubric/1 (the golden
// support-desk log as it was before rubric/2, kept in testdata/rubric1)
// still verifies to the state hash it recorded, and a rebuild re-grades
// it under today's rubric while keeping the rewards it recorded and the
// rubric they came from; on a world of format 1 the two rubrics agree.
func TestOlderRubricLogRegrades(t *testing.T) {
	lines := readGolden(t, "testdata/rubric1/support-desk-greedy-1.jsonl.gz")
	checkGoldenReplay(t, "support-desk-greedy-1-rubric1", lines, goldenSum{})
	evs := parseGolden(t, lines)
	log := memlog.New()
	ctx := context.Background()
	for i := range evs {
		evs[i].Session = "old"
	}
	if err := log.CreateSession(ctx, events.SessionMeta{ID: "old", Status: events.StatusFinished}); err != nil {
		t.Fatal(err)
	}
	if err := log.Append(ctx, "old", 0, evs); err != nil {
		t.Fatal(err)
	}
	e, err := sim.RebuildLog(ctx, log, "old", sim.Config{})
	if err != nil {
		t.Fatalf("a rubric/1 log does not rebuild: %v", err)
	}
	rec := e.Recorded()
	if !slices.Equal(rec.Rubrics, []string{"rubric/1"}) {
		t.Fatalf("recorded rubrics %v; want [rubric/1]", rec.Rubrics)
	}
	card := policies.Score(e.State())
	if card.Rubric != policies.RubricVersion || policies.RubricVersion == "rubric/1" {
		t.Fatalf("re-graded under %s; want today's rubric, not rubric/1", card.Rubric)
	}
	if math.Abs(card.Reward-rec.Team) > 1e-6 || math.Abs(card.TeamScore-rec.Team) > 1e-6 {
		t.Errorf("re-graded team score %v (reward %v); rubric/1 recorded %v", card.TeamScore, card.Reward, rec.Team)
	}
}
