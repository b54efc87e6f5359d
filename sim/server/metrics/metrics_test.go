package metrics_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/sim/server/metrics"
)

func event(tb testing.TB, typ string, v any) events.Event {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return events.Event{Type: typ, Payload: b}
}

func TestAppendedAndTurns(t *testing.T) {
	m := metrics.New(func() (map[string]int, map[string]int) {
		return map[string]int{"running": 2, "paused": 1}, map[string]int{"builtin": 5, "remote": 1}
	})
	m.Appended("s", []events.Event{
		event(t, payload.EvActionRejected, payload.ActionRejected{Kind: "policy", Rule: "dependencies-first"}),
		event(t, payload.EvActionRejected, payload.ActionRejected{Kind: "policy", Rule: "dependencies-first"}),
		event(t, payload.EvActionRejected, payload.ActionRejected{Kind: "malformed"}),
		event(t, payload.EvTurnTimeout, payload.TurnTimeout{Turn: 1}),
		event(t, payload.EvTurnFailed, payload.TurnFailed{Turn: 4, Reason: "connection refused"}),
		event(t, "turn", map[string]int{"turn": 2}),
	}, 3*time.Millisecond)
	m.Appended("s", []events.Event{event(t, payload.EvTurnTimeout, payload.TurnTimeout{Turn: 3})}, time.Millisecond)
	m.Turn("s", "bob", 20*time.Millisecond, false)
	m.Turn("s", "bob", time.Second, true)

	want := `
# HELP corpsim_actions_rejected_total Actions refused by the engine (action.rejected events), by kind (malformed, unknown, state, policy) and the policy rule (empty for other kinds).
# TYPE corpsim_actions_rejected_total counter
corpsim_actions_rejected_total{kind="malformed",rule=""} 1
corpsim_actions_rejected_total{kind="policy",rule="dependencies-first"} 2
# HELP corpsim_events_appended_total Events made durable in the event log (every session of this server since it started).
# TYPE corpsim_events_appended_total counter
corpsim_events_appended_total 7
# HELP corpsim_turn_errors_total Turns a member's agent could not decide, its backend failing (turn.failed events).
# TYPE corpsim_turn_errors_total counter
corpsim_turn_errors_total 1
# HELP corpsim_turn_timeouts_total Turns a member did not answer within its budget (turn.timeout events).
# TYPE corpsim_turn_timeouts_total counter
corpsim_turn_timeouts_total 2
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		metrics.Rejections, metrics.EventsAppended, metrics.TurnErrors, metrics.TurnTimeouts); err != nil {
		t.Error(err)
	}
	for _, c := range []struct {
		name string
		want int
	}{{metrics.AppendSeconds, 1}, {metrics.TurnSeconds, 1}, {metrics.Sessions, 1}, {metrics.Seats, 1}} {
		if n, err := testutil.GatherAndCount(m.Registry(), c.name); err != nil || n == 0 {
			t.Errorf("%s: %d series, %v", c.name, n, err)
		}
	}
	gauges := `
# HELP corpsim_seats Seats of the sessions not yet ended, by kind (builtin agents, remote agents, the server's llm agent).
# TYPE corpsim_seats gauge
corpsim_seats{kind="builtin"} 5
corpsim_seats{kind="llm"} 0
corpsim_seats{kind="remote"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(gauges), metrics.Seats); err != nil {
		t.Error(err)
	}
	if n, _ := testutil.GatherAndCount(m.Registry(), metrics.Sessions); n != len(metrics.SessionStatuses) {
		t.Errorf("got %d session series, want one per status (%d)", n, len(metrics.SessionStatuses))
	}
}

func TestAdapters(t *testing.T) {
	m := metrics.New(nil)
	a := m.Adapter("openenv")
	a.Opened()
	a.Opened()
	a.Closed()
	a.Stepped()
	a.Stepped()
	a.Stepped()
	a.Failed("INVALID_JSON")
	m.Adapter("mcp").Failed("-32602")
	var none *metrics.Metrics
	none.Adapter("nemo").Stepped() // a nil recorder records nothing, and does not panic
	want := `
# HELP corpsim_adapter_errors_total Errors a protocol adapter answered, by the protocol's own code.
# TYPE corpsim_adapter_errors_total counter
corpsim_adapter_errors_total{adapter="mcp",code="-32602"} 1
corpsim_adapter_errors_total{adapter="openenv",code="INVALID_JSON"} 1
# HELP corpsim_adapter_sessions Sessions (or connections) a protocol adapter holds open now.
# TYPE corpsim_adapter_sessions gauge
corpsim_adapter_sessions{adapter="mcp"} 0
corpsim_adapter_sessions{adapter="nemo"} 0
corpsim_adapter_sessions{adapter="openenv"} 1
# HELP corpsim_adapter_steps_total Steps, tool calls or acts a protocol adapter served.
# TYPE corpsim_adapter_steps_total counter
corpsim_adapter_steps_total{adapter="mcp"} 0
corpsim_adapter_steps_total{adapter="nemo"} 0
corpsim_adapter_steps_total{adapter="openenv"} 3
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		metrics.AdapterSessions, metrics.AdapterSteps, metrics.AdapterErrors); err != nil {
		t.Error(err)
	}
}
