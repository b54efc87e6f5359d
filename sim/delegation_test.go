package sim_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

// delegationWorld: dave, the director, is on leave from leaveAt for 3d
// with deputy as delegate, limited to payouts below 50000; ceo manages
// dave when withManager. alice needs approval for a small payout (1000)
// and a big one (90000).
func delegationWorld(tb testing.TB, leaveAt string, withManager bool) (*worlds.World, []byte) {
	tb.Helper()
	manager, ceo := "", ""
	if withManager {
		manager, ceo = ", manager: ceo", "  - {id: ceo, role: exec, team: t}\n"
	}
	src := []byte(`version: 2
name: delegation
start: 2026-01-05T09:00:00Z
horizon: 5d
roles: [{id: eng}, {id: director}, {id: lead}, {id: exec}]
teams: [{id: t, budget: 1000000}]
members:
  - {id: alice, role: eng, team: t}
` + ceo + `  - {id: dave, role: director, team: t` + manager + `}
  - {id: deputy, role: lead, team: t}
queues: [{id: q, served_by: [eng]}]
approvals:
  - {id: payouts, steps: [{role: director}]}
projects:
  - id: p
    team: t
    queue: q
    deadline: 5d
    tasks:
      - {id: small, role: eng, effort: 1h, purchase: 1000}
      - {id: big, role: eng, effort: 1h, purchase: 90000}
interruptions:
  - {at: ` + leaveAt + `, kind: leave, member: dave, delegate: deputy, for: 3d, delegate_limit: {below: 50000, chains: [payouts]}}
`)
	w, err := worlds.Load("delegation.yaml", src)
	if err != nil {
		tb.Fatal(err)
	}
	return w, src
}

// playDelegation runs the world: alice waits 30m, then claims both tasks
// and asks for both approvals (r1 small, r2 big); deputy, once, when an
// approval first waits for it, tries to approve r2 then r1; everyone else
// waits.
func playDelegation(tb testing.TB, w *worlds.World, src []byte) []events.Event {
	tb.Helper()
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: 1, Session: "s"})
	if err != nil {
		tb.Fatal(err)
	}
	e.Start()
	turns := map[string]int{}
	tried := false
	return drive(tb, e, func(o org.Observation) sim.Answer {
		turns[o.Member]++
		ans := sim.Answer{Member: o.Member, Turn: o.Turn, Actions: []org.Action{}}
		switch {
		case o.Member == "alice" && turns["alice"] == 1:
			ans.Actions = []org.Action{{Type: org.ActWait, For: "30m"}}
		case o.Member == "alice" && turns["alice"] == 2:
			ans.Actions = []org.Action{{Type: org.ActClaim, Task: "small"}, {Type: org.ActClaim, Task: "big"},
				{Type: org.ActRequestApproval, Task: "small"}, {Type: org.ActRequestApproval, Task: "big"}}
		case o.Member == "deputy" && len(o.Approvals) > 0 && !tried:
			tried = true
			ans.Actions = []org.Action{{Type: org.ActApprove, Request: "r2"}, {Type: org.ActApprove, Request: "r1"}}
		}
		return ans
	}, false, 0)
}

// summary lists what the log says about routing and decisions, one line
// per approval event and delegation-limit refusal.
func summary(tb testing.TB, evs []events.Event) string {
	tb.Helper()
	var b strings.Builder
	for _, ev := range evs {
		switch ev.Type {
		case payload.EvApprovalRequested:
			var p payload.ApprovalRequested
			mustJSON(tb, ev.Payload, &p)
			fmt.Fprintf(&b, "requested %s %s -> %s delegated=%v\n", p.Request, p.Task, p.Steps[0].Approver, p.Steps[0].Delegated)
		case payload.EvApprovalEscalated:
			var p payload.ApprovalEscalated
			mustJSON(tb, ev.Payload, &p)
			fmt.Fprintf(&b, "escalated %s %s -> %s (%s)\n", p.Request, p.From, p.To, p.Reason)
		case payload.EvApprovalGranted:
			var p payload.ApprovalDecided
			mustJSON(tb, ev.Payload, &p)
			fmt.Fprintf(&b, "granted %s by %s\n", p.Request, ev.Actor)
		case payload.EvActionRejected:
			var p payload.ActionRejected
			mustJSON(tb, ev.Payload, &p)
			if p.Rule == "delegation-limit" {
				fmt.Fprintf(&b, "refused %s %s: %s\n", ev.Actor, p.Action.Request, p.Reason)
			}
		}
	}
	return b.String()
}

func mustJSON(tb testing.TB, data []byte, v any) {
	tb.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		tb.Fatal(err)
	}
}

func TestDelegationLimit(t *testing.T) {
	const refusal = "refused deputy r2: deputy stands in for dave (director) only below 50000 on chains payouts; request r2 is 90000 on chain payouts\n"
	tests := []struct {
		name        string
		leaveAt     string
		withManager bool
		want        string
	}{
		{"requested during the leave: the big payout goes to the manager", "0s", true,
			"requested r1 small -> deputy delegated=true\n" +
				"requested r2 big -> ceo delegated=true\n" +
				refusal +
				"granted r1 by deputy\n"},
		{"requested during the leave, no manager: the big payout waits for dave", "0s", false,
			"requested r1 small -> deputy delegated=true\n" +
				"requested r2 big -> dave delegated=false\n" +
				refusal +
				"granted r1 by deputy\n"},
		{"pending when the leave starts: escalated by the limit", "1h", true,
			"requested r1 small -> dave delegated=false\n" +
				"requested r2 big -> dave delegated=false\n" +
				"escalated r1 dave -> deputy (leave)\n" +
				"escalated r2 dave -> ceo (delegate_limit)\n" +
				refusal +
				"granted r1 by deputy\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, src := delegationWorld(t, tt.leaveAt, tt.withManager)
			evs := playDelegation(t, w, src)
			if got := summary(t, evs); got != tt.want {
				t.Errorf("log:\ngot\n%swant\n%s", got, tt.want)
			}
			mustReplay(t, evs)
		})
	}
}

// mustReplay rebuilds a session from its events: Apply accepts every one
// of them (routing, escalations and decisions recomputed from the state)
// and the recorded state hash matches.
func mustReplay(tb testing.TB, evs []events.Event) {
	tb.Helper()
	seq := func(yield func(events.Event, error) bool) {
		for _, ev := range evs {
			if !yield(ev, nil) {
				return
			}
		}
	}
	if _, err := sim.Rebuild(seq, "s", sim.Config{}); err != nil {
		tb.Fatalf("replay: %v", err)
	}
}
