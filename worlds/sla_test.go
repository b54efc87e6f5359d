package worlds

import (
	"testing"

	"github.com/corpsim/corpsim/clock"
)

// slaArrival is an arrival whose tickets have priority weights weights and
// sla sla (both as written after the key).
func slaArrival(weights, sla string) []string {
	return []string{lastTask, lastTask + "arrivals:\n  - {id: a, queue: backlog, process: poisson, every: 1h, ticket: {role: engineer, effort: 1h, priority: " +
		weights + ", sla: " + sla + "}}\n"}
}

func TestLoadSLAByPriority(t *testing.T) {
	w := mustLoad(t, "w.yaml", mustEdit(t, v2(slaArrival("{1: 70, 2: 25, 3: 5}", "{1: 1d, 2: 4h, 3: 1h}")...)...))
	tmpl := &w.Arrivals[0].Ticket
	for _, tt := range []struct {
		priority int
		want     clock.Duration
	}{{1, 8 * clock.Hour}, {2, 4 * clock.Hour}, {3, clock.Hour}, {4, 0}} {
		if got := tmpl.SLAFor(tt.priority); got != tt.want {
			t.Errorf("SLAFor(%d): got %s, want %s", tt.priority, got, tt.want)
		}
	}
	// A single SLA still holds for every priority.
	w = mustLoad(t, "w.yaml", mustEdit(t, slaArrival("{1: 1, 2: 1}", "4h")...))
	if got := w.Arrivals[0].Ticket.SLAFor(2); got != 4*clock.Hour {
		t.Errorf("a single SLA: got %s for priority 2, want 4h", got)
	}
	// A priority of weight 0 is never drawn and needs no entry.
	mustLoad(t, "w.yaml", mustEdit(t, v2(slaArrival("{1: 1, 2: 0}", "{1: 2h}")...)...))
}

func TestLoadSLAByPriorityErrors(t *testing.T) {
	tests := []struct {
		name  string
		edits []string
		want  string
	}{
		{"an SLA map in a version 1 file", slaArrival("{1: 1}", "{1: 4h}"),
			`w.yaml:41:118: arrivals[0].ticket.sla: an SLA by priority needs version: 2 (this file declares version 1)`},
		{"a map missing a priority the weights draw", v2(slaArrival("{1: 70, 2: 25, 3: 5}", "{1: 1d, 3: 1h}")...),
			`w.yaml:41:132: arrivals[0].ticket.sla: the SLA by priority has no entry for priority 2, which tickets can get (it lists 1, 3)`},
		{"a map without priority weights, missing priority 0", v2(lastTask, lastTask+"arrivals:\n  - {id: a, queue: backlog, process: poisson, every: 1h, ticket: {role: engineer, effort: 1h, sla: {1: 1h}}}\n"),
			`w.yaml:41:100: arrivals[0].ticket.sla: the SLA by priority has no entry for priority 0, which tickets can get (it lists 1)`},
		{"a bad duration in the map", v2(slaArrival("{1: 1, 2: 1}", "{1: 1d, 2: soon}")...),
			`w.yaml:41:135: arrivals[0].ticket.sla.2: invalid duration "soon": expected a number at "soon"`},
		{"a zero SLA in the map", v2(slaArrival("{1: 1}", "{1: 0h}")...),
			`w.yaml:41:122: arrivals[0].ticket.sla.1: must be more than zero, got "0h"`},
		{"an urgent ticket's priority missing from its map", v2(lastTask, lastTask+"interruptions:\n  - {at: 1d, kind: urgent, queue: backlog, priority: 5, ticket: {role: engineer, effort: 1h, sla: {1: 1h}}}\n"),
			`w.yaml:41:99: interruptions[0].ticket.sla: the SLA by priority has no entry for priority 5, which tickets can get (it lists 1)`},
		{"an SLA of the wrong shape", v2(slaArrival("{1: 1}", "[4h]")...),
			`w.yaml:41:118: arrivals[0].ticket.sla: expected a duration like "4h" or a mapping of priority to duration like {1: 1d, 2: 4h}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantLoadError(t, mustEdit(t, tt.edits...), tt.want)
		})
	}
}
