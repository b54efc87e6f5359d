package sim_test

import (
	"testing"

	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

// failSrc is one case whose outcome's rule fails on its invoice (a modulo
// by a quantity of 0) and whose invoice is already refunded.
const failSrc = `version: 2
name: outcome-fails
start: 2026-01-05T09:00:00Z
horizon: 1d
roles: [{id: agent}]
teams: [{id: t}]
members: [{id: ana, role: agent, team: t}]
queues: [{id: q, served_by: [agent]}]
systems:
  - id: billing
    read: [agent]
    write: [agent]
    types:
      - id: invoice
        fields:
          amount: {type: money}
          qty: {type: integer}
          status: {type: enum, values: [paid, refunded]}
        records:
          - {id: inv-a, amount: 5, qty: 0, status: refunded}
cases:
  - id: refund
    queue: q
    value: 10
    attributes:
      invoice: {record: invoice}
    steps:
      - id: mark
        role: agent
        effort: 10m
        outcome: {record: invoice, set: {status: "record.amount % record.qty > 0 ? 'refunded' : 'paid'"}}
arrivals:
  - {id: a, case: refund, process: scheduled, at: [0s]}
`

// An outcome whose rule fails when its case opens expects the field
// untouched: the value the record holds, not its type's zero. It expected
// the refunded invoice paid again (an enum's zero is its first value),
// which no reading of the rule says.
func TestFailedOutcomeExpectsTheFieldUntouched(t *testing.T) {
	w, err := worlds.Load("fails.yaml", []byte(failSrc))
	if err != nil {
		t.Fatal(err)
	}
	e, err := sim.New(sim.Config{World: w, Source: []byte(failSrc), Seed: 1, Session: "s"})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	evs := drive(t, e, idle, false, 0)
	cases := openedCases(t, evs)
	if len(cases) != 1 || len(cases[0].Expected) != 1 {
		t.Fatalf("got cases %+v, want one with one expected outcome", cases)
	}
	if got := cases[0].Expected[0].Fields["status"]; got != "refunded" {
		t.Errorf("expected status %v, want refunded (the value inv-a holds)", got)
	}
}
