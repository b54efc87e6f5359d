package sim_test

import (
	"slices"
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
)

// TestSLAByPriority: a ticket's deadline is its drawn priority's SLA from
// its arrival, and its SLA breach is counted when it passes.
func TestSLAByPriority(t *testing.T) {
	src := []byte(`version: 2
name: sla
start: 2026-01-05T09:00:00Z
horizon: 2d
roles: [{id: eng}]
teams: [{id: t, budget: 100}]
members: [{id: alice, role: eng, team: t}]
queues: [{id: q, served_by: [eng]}]
arrivals:
  - id: a
    queue: q
    process: scheduled
    at: [0s, 30m, 1h, 90m, 2h, 150m, 3h, 210m]
    ticket: {role: eng, effort: 1h, priority: {1: 1, 2: 1}, sla: {1: 6h, 2: 2h}}
`)
	e := startedEngine(t, "sla.yaml", src)
	evs := drive(t, e, func(o org.Observation) sim.Answer { // nobody works: every ticket breaches
		return sim.Answer{Member: o.Member, Turn: o.Turn, Actions: []org.Action{}}
	}, false, 0)
	mustReplay(t, evs)
	seen := map[int]int{}
	breached := 0
	for _, ev := range evs {
		switch ev.Type {
		case payload.EvTaskCreated:
			var p payload.TaskCreated
			mustJSON(t, ev.Payload, &p)
			want := map[int]clock.Duration{1: 6 * clock.Hour, 2: 2 * clock.Hour}[p.Task.Priority]
			if got := e.State().World.Calendar.WorkBetween(clock.Time(ev.Time), p.Deadline); got != want {
				t.Errorf("%s (priority %d): SLA %s, want %s", p.Task.ID, p.Task.Priority, got, want)
			}
			seen[p.Task.Priority]++
		case payload.EvSLABreached:
			breached++
		}
	}
	if seen[1] == 0 || seen[2] == 0 || seen[1]+seen[2] != 8 {
		t.Errorf("tickets by priority: got %v, want 8 of priorities 1 and 2 both", seen)
	}
	if breached != 8 {
		t.Errorf("SLA breaches: got %d, want 8", breached)
	}
	// The scorecard breaks them down by priority.
	want := []policies.PrioritySLA{{Priority: 1, Tickets: seen[1], SLABreaches: seen[1]}, {Priority: 2, Tickets: seen[2], SLABreaches: seen[2]}}
	if got := policies.Score(e.State()).SLAByPriority; !slices.Equal(got, want) {
		t.Errorf("scorecard SLA by priority: got %+v, want %+v", got, want)
	}
	// A world without an SLA by priority has no breakdown.
	if got := policies.Score(mustEngine(t, 1).State()).SLAByPriority; got != nil {
		t.Errorf("startup's scorecard SLA by priority: got %+v, want none", got)
	}
}
