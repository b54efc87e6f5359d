package driver_test

import (
	"context"
	"errors"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

// stepUpWorld: alice and bob ask for purchases that carol (lead) and then
// eve (exec) approve; dan, eve's delegate, is away from 30m, eve from 2h,
// after the requests and before carol, busy planning, grants them: the
// exec step comes up for eve on leave and is escalated at once past her
// delegate (away too) to her manager zed, in the middle of carol's turn.
const stepUpWorld = `version: 1
name: step-up
start: 2026-01-05T09:00:00Z
horizon: 5d
roles: [{id: eng}, {id: lead}, {id: exec}, {id: deputy}, {id: ceo}]
teams: [{id: t, budget: 100000}]
members:
  - {id: alice, role: eng, team: t, manager: carol}
  - {id: bob, role: eng, team: t, manager: carol}
  - {id: carol, role: lead, team: t, manager: eve}
  - {id: dan, role: deputy, team: t, manager: eve}
  - {id: eve, role: exec, team: t, manager: zed}
  - {id: zed, role: ceo, team: t}
queues: [{id: q, served_by: [eng]}, {id: lq, served_by: [lead]}]
approvals:
  - {id: spend, steps: [{role: lead, above: 500}, {role: exec, above: 1000}]}
projects:
  - id: p
    team: t
    queue: q
    deadline: 4d
    tasks:
      - {id: buy1, role: eng, effort: 1h, purchase: 3000, approval: spend, value: 5}
      - {id: buy2, role: eng, effort: 1h, purchase: 2500, approval: spend, value: 5}
  - id: lp
    team: t
    queue: lq
    deadline: 4d
    tasks:
      - {id: plan, role: lead, effort: 3h, value: 5}
interruptions:
  - {at: 30m, kind: leave, member: dan, for: 4d}
  - {at: 2h, kind: leave, member: eve, for: 3d, delegate: dan}
`

// TestForkPointInsideATurnWithAStepUp: an escalation the engine makes at
// once, inside a member's turn, for a step that came up for a member on
// leave (its cause the grant or the request, not the turn) is part of what
// the turn did. A fork between the turn and it, or between it and the
// turn's later actions, is refused as inside the turn (it was let through,
// and the fork lost the escalation, and with it zed's approvals, and the
// rest of carol's turn); the point it names to keep the turn continues as
// the session did.
func TestForkPointInsideATurnWithAStepUp(t *testing.T) {
	ctx := context.Background()
	const id = "01J0000000000000000000STUP"
	w, err := worlds.Load("step-up.yaml", []byte(stepUpWorld))
	if err != nil {
		t.Fatal(err)
	}
	e, err := sim.New(sim.Config{World: w, Source: []byte(stepUpWorld), Seed: 1, Session: id})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	evs := simtest.Events(t, e)
	log := memlog.New()
	if err := log.CreateSessionWith(ctx, events.SessionMeta{ID: id, World: w.Name, WorldHash: w.Hash, Seed: 1, Status: events.StatusFinished}, evs); err != nil {
		t.Fatal(err)
	}
	at := func(seq uint64) *events.Event { return &evs[seq-1] }
	stepUps := 0
	for i := range evs {
		esc := &evs[i]
		if esc.Type != payload.EvApprovalEscalated || esc.Cause == 0 {
			continue
		}
		act := at(esc.Cause)
		if act.Type != payload.EvApprovalGranted && act.Type != payload.EvApprovalRequested {
			continue // at a leave's start, on a timeout, or asked for
		}
		stepUps++
		turn := act.Cause
		if at(turn).Type != payload.EvTurn {
			t.Fatalf("event %d (%s) is not made by a turn: %d is %s", act.Seq, act.Type, turn, at(turn).Type)
		}
		var keep uint64
		for seq := turn; seq < esc.Seq; seq++ {
			err := driver.CheckForkPoint(ctx, log, id, seq)
			var inside *driver.InsideTurnError
			if !errors.As(err, &inside) || inside.Turn != turn || inside.End < esc.Seq {
				t.Fatalf("a fork at %d, between %s's turn %d and the escalation %d its %s made: %v, want refused as inside turn %d up to at least %d",
					seq, act.Actor, turn, esc.Seq, act.Type, err, turn, esc.Seq)
			}
			keep = inside.End
		}
		if err := driver.CheckForkPoint(ctx, log, id, keep); err != nil {
			t.Fatalf("a fork at %d, to keep turn %d: %v", keep, turn, err)
		}
		fe, _, err := driver.Load(ctx, log, id, keep, 0)
		if err != nil {
			t.Fatal(err)
		}
		fe.Resume() // as Driver.Fork goes on
		rest := simtest.Events(t, fe)
		if want := evs[keep:]; !same(rest, want) {
			t.Errorf("a fork at %d, keeping turn %d, made %d events that differ from the session's %d after it", keep, turn, len(rest), len(want))
			for i := range min(len(rest), len(want)) {
				if !same(rest[i:i+1], want[i:i+1]) {
					t.Errorf("first difference at seq %d: %s by %q (cause %d), want %s by %q (cause %d)",
						want[i].Seq, rest[i].Type, rest[i].Actor, rest[i].Cause, want[i].Type, want[i].Actor, want[i].Cause)
					break
				}
			}
		}
	}
	if stepUps == 0 {
		t.Fatal("no step came up for a member on leave: the world no longer tests it")
	}
}
