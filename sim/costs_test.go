package sim_test

import (
	"encoding/json"
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

// costsWorld is a version 2 world of one task, with extra (a costs section
// or nothing) added.
func costsWorld(tb testing.TB, extra string) (*worlds.World, []byte) {
	tb.Helper()
	src := []byte(`version: 2
name: costs
start: 2026-01-05T09:00:00Z
horizon: 2d
` + extra + `roles: [{id: eng}]
teams: [{id: t, budget: 100}]
members:
  - {id: alice, role: eng, team: t}
  - {id: bob, role: eng, team: t}
queues: [{id: q, served_by: [eng]}]
projects:
  - id: p
    team: t
    queue: q
    deadline: 2d
    tasks: [{id: t1, role: eng, effort: 3h}]
`)
	w, err := worlds.Load("costs.yaml", src)
	if err != nil {
		tb.Fatal(err)
	}
	return w, src
}

// TestActionCosts plays one turn of alice's (claim t1, message bob, work
// t1) and reads what each action cost from the log.
func TestActionCosts(t *testing.T) {
	tests := []struct {
		name                 string
		extra                string
		claim, latency, work clock.Duration // what the log must show
	}{
		{"the defaults", "", sim.MinTurnCost + sim.ClaimCost, sim.MessageLatency, sim.DefaultWorkSpan},
		{"claim 1m, latency 1h, work 45m", "costs: {claim: 1m, work: 45m}\nmessage_latency: 1h\n", sim.MinTurnCost + clock.Minute, clock.Hour, 45 * clock.Minute},
		{"a turn of 3m and a free claim", "costs: {turn: 3m, claim: 0s}\n", 3 * clock.Minute, sim.MessageLatency, sim.DefaultWorkSpan},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, src := costsWorld(t, tt.extra)
			e, err := sim.New(sim.Config{World: w, Source: src, Seed: 1, Session: "s"})
			if err != nil {
				t.Fatal(err)
			}
			e.Start()
			done := false
			evs := drive(t, e, func(o org.Observation) sim.Answer {
				if o.Member != "alice" || done {
					return sim.Answer{Member: o.Member, Turn: o.Turn, Actions: []org.Action{{Type: org.ActWait}}}
				}
				done = true
				return sim.Answer{Member: o.Member, Turn: o.Turn, Actions: []org.Action{
					{Type: org.ActClaim, Task: "t1"},
					{Type: org.ActMessage, To: "bob", Text: "I took t1"},
					{Type: org.ActWork, Task: "t1"},
				}}
			}, false, 0)
			mustReplay(t, evs)
			var claimed payload.TaskClaimed
			var sent payload.MessageSent
			var started payload.WorkStarted
			var claimAt int64 = -1
			for _, ev := range evs {
				var err error
				switch ev.Type {
				case payload.EvTaskClaimed:
					claimAt = ev.Time
					err = json.Unmarshal(ev.Payload, &claimed)
				case payload.EvMessageSent:
					err = json.Unmarshal(ev.Payload, &sent)
				case payload.EvWorkStarted:
					err = json.Unmarshal(ev.Payload, &started)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if claimAt < 0 {
				t.Fatal("no task.claimed in the log")
			}
			if got := claimed.BusyUntil.Sub(clock.Time(claimAt)); got != tt.claim {
				t.Errorf("turn and claim: got %s, want %s", got, tt.claim)
			}
			if got := sent.DeliverAt.Sub(sent.BusyUntil); got != tt.latency {
				t.Errorf("message latency: got %s, want %s", got, tt.latency)
			}
			if started.Work != tt.work {
				t.Errorf("work without for: got %s, want %s", started.Work, tt.work)
			}
		})
	}
}
