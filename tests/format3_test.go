package tests

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

// Log format 3 records what a simulated colleague serving queues does in
// fewer events (ticket.served, ticket.resolved, member.waiting with seen)
// than format 2 (a turn, task.claimed, work.started, work.finished,
// task.completed). It is a change of the record, not of the company: the
// same world, seed and agents recorded in either format do the same work.
// Every task ends with the same status, holder, done time and spent
// effort, the scorecards are equal, and format 3 holds fewer events. Both
// logs replay to the state hash they record.
func TestFormat3RecordsTheSameWork(t *testing.T) {
	cases := []goldenCase{
		{world: "npc-desk", file: "npc-desk.yaml", agent: "greedy", seed: 1},
		{world: "npc-desk", file: "npc-desk.yaml", agent: "greedy", seed: 2},
		{world: "npc-desk", file: "npc-desk.yaml", agent: "planner", seed: 3},
		{world: "same-instant", file: "same-instant.yaml", agent: "greedy", seed: 1},
		{world: "same-instant", file: "same-instant.yaml", agent: "random", seed: 4},
		{world: "support-desk", agent: "greedy", seed: 1},
		{world: "startup", agent: "greedy", seed: 1},        // NPC approvers wait without turns
		{world: "procurement", agent: "planner", seed: 2},   // approvals, escalations, budgets
		{world: "product-launch", agent: "greedy", seed: 1}, // an NPC away, delegation
		{world: "billing-support", agent: "diligent", seed: 1},
		{world: "meetings", agent: "diligent", seed: 1},
	}
	for _, c := range cases {
		t.Run(c.name(), func(t *testing.T) {
			c2, c3 := c, c
			c2.format, c3.format = 2, 3
			ev2, ev3 := playGoldenCase(t, c2), playGoldenCase(t, c3)
			sameWork(t, 2, 3, ev2, ev3)
			n2, n3 := typeCounts(ev2), typeCounts(ev3)
			npcServes := n3[payload.EvTicketServed] > 0
			if c.file != "" && !npcServes {
				t.Fatalf("format 3 recorded no ticket.served: %v", n3)
			}
			if npcServes && len(ev3) >= len(ev2) || len(ev3) > len(ev2) {
				t.Errorf("format 3 holds %d events, format 2 %d: want fewer", len(ev3), len(ev2))
			}
			if n2[payload.EvTicketServed]+n2[payload.EvTicketResolved] != 0 {
				t.Errorf("format 2 recorded format-3 events: %v", n2)
			}
			t.Logf("format 2: %d events, format 3: %d (%v)", len(ev2), len(ev3), n3)
		})
	}
}

// In format 3 a serving colleague's stints are ticket.served and
// ticket.resolved: a format-3 log whose ticket.resolved names a member
// that is not a simulated colleague, or a ticket it does not hold, does
// not replay.
func TestFormat3RefusesAForgedResolution(t *testing.T) {
	evs := playGoldenCase(t, goldenCase{world: "npc-desk", file: "npc-desk.yaml", agent: "greedy", seed: 1})
	i := slices.IndexFunc(evs, func(ev events.Event) bool { return ev.Type == payload.EvTicketResolved })
	if i < 0 {
		t.Fatal("no ticket.resolved")
	}
	other := "s1" // a colleague that does not hold the ticket
	if evs[i].Actor == "s1" {
		other = "s2"
	}
	for _, tc := range []struct{ actor, want string }{
		{"ann", "ann is not a simulated colleague"},
		{"s3x", `unknown actor "s3x"`},
		{other, other + " does not hold task"},
	} {
		forged := slices.Clone(evs[:i+1])
		forged[i].Actor = tc.actor
		_, err := sim.Rebuild(seqOf(forged), "golden", sim.Config{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("actor %s: Rebuild gave %v, want an error saying %q", tc.actor, err, tc.want)
		}
	}
}

// sameWork checks that the logs evA and evB, the same session recorded
// in formats a and b, did the same work: every task ends alike (status,
// holder, done time, spent effort, breach), the scorecards are equal, and
// so are the dense rewards, which sum to the score.
func sameWork(t *testing.T, a, b int, evA, evB []events.Event) {
	t.Helper()
	stA, stB := replayed(t, evA), replayed(t, evB)
	if len(stA.Tasks()) != len(stB.Tasks()) {
		t.Fatalf("format %d keeps %d tasks, format %d %d", a, len(stA.Tasks()), b, len(stB.Tasks()))
	}
	for i, x := range stA.Tasks() {
		if got, want := taskOutcome(stB.Tasks()[i]), taskOutcome(x); got != want {
			t.Errorf("task %d: format %d %s, format %d %s", i, b, got, a, want)
		}
	}
	sA, sB := policies.Score(stA), policies.Score(stB)
	if math.Abs(sA.TeamScore-sB.TeamScore) > 1e-9 || sA.TicketsResolved != sB.TicketsResolved || sA.SLABreaches != sB.SLABreaches {
		t.Errorf("scores: format %d %.6f (%d resolved, %d breaches), format %d %.6f (%d, %d)",
			b, sB.TeamScore, sB.TicketsResolved, sB.SLABreaches, a, sA.TeamScore, sA.TicketsResolved, sA.SLABreaches)
	}
	if rA, rB := rewardSum(t, evA), rewardSum(t, evB); math.Abs(rA-rB) > 1e-6 || math.Abs(rB-sB.TeamScore) > 1e-6 {
		t.Errorf("dense rewards: format %d sums to %.6f, format %d to %.6f; the score is %.6f", b, rB, a, rA, sB.TeamScore)
	}
}

func replayed(tb testing.TB, evs []events.Event) *org.State {
	tb.Helper()
	e, err := sim.Rebuild(seqOf(evs), "golden", sim.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	if e.EndStateHash() == "" {
		tb.Fatal("the session did not end")
	}
	return e.State()
}

func taskOutcome(t *org.Task) string {
	return fmt.Sprintf("%s %s status %s by %s at %d, spent %d, breached %v", t.Kind, t.ID, t.Status, t.DoneBy, t.DoneAt, t.Spent, t.Breached)
}

func typeCounts(evs []events.Event) map[string]int {
	n := map[string]int{}
	for _, ev := range evs {
		n[ev.Type]++
	}
	return n
}

func rewardSum(tb testing.TB, evs []events.Event) float64 {
	tb.Helper()
	sum := 0.0
	for i := range evs {
		if evs[i].Type != payload.EvReward {
			continue
		}
		p, err := payload.As[payload.Reward](&evs[i], nil)
		if err != nil {
			tb.Fatal(err)
		}
		sum += p.Team
	}
	return sum
}

func seqOf(evs []events.Event) func(yield func(events.Event, error) bool) {
	return func(yield func(events.Event, error) bool) {
		for _, ev := range evs {
			if !yield(ev, nil) {
				return
			}
		}
	}
}

// A session recorded in format 2 goes on in format 2 when it is resumed
// from its events or from a checkpoint at the end of an instant: what it appends is what the build
// that recorded it would have appended, byte for byte (the golden
// npc-desk-greedy-1-format2 was recorded without format 3's events).
func TestFormat2SessionGoesOnInFormat2(t *testing.T) {
	for _, format := range []int{2, 3, 4, 5} {
		c := goldenCase{world: "npc-desk", file: "npc-desk.yaml", agent: "greedy", seed: 1, format: format}
		full := playGoldenCase(t, c)
		src, err := os.ReadFile(filepath.Join("testdata/worlds", c.file))
		if err != nil {
			t.Fatal(err)
		}
		w, err := worlds.Load(c.file, src)
		if err != nil {
			t.Fatal(err)
		}
		for _, at := range []int{40, len(full) / 2, len(full) - 30} {
			// At the end of an instant: what follows is due later.
			cut := at
			for full[cut].Time == full[cut-1].Time {
				cut++
			}
			e, err := sim.Rebuild(seqOf(full[:cut]), "golden", sim.Config{})
			if err != nil {
				t.Fatal(err)
			}
			hash, snap := e.Checkpoint()
			restored, err := sim.Restore(sim.Config{World: w, Source: src, Seed: c.seed, Session: "golden"}, snap, hash)
			if err != nil {
				t.Fatal(err)
			}
			for how, e := range map[string]*sim.Engine{"replayed": e, "restored from a checkpoint": restored} {
				e.Resume()
				rest := playOn(t, e, w, c)
				if diff := diffLines(goldenLines(full[cut:]), goldenLines(rest)); diff != "" {
					t.Errorf("format %d, %s at seq %d: the session goes on otherwise than it was recorded:\n%s", format, how, cut, diff)
				}
			}
		}
	}
}
