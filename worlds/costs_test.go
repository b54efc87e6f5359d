package worlds

import (
	"testing"

	"github.com/corpsim/corpsim/clock"
)

func TestLoadCosts(t *testing.T) {
	w := mustLoad(t, "w.yaml", []byte(tinyWorld))
	if w.Costs != nil || w.ActionCosts() != DefaultCosts() {
		t.Errorf("a world without costs: got %+v, want the defaults", w.ActionCosts())
	}
	w = mustLoad(t, "w.yaml", mustEdit(t, v2("name: tiny\n", "name: tiny\ncosts: {claim: 1m, complete: 0s, work: 30m}\nmessage_latency: 2h\n")...))
	want := DefaultCosts()
	want.Claim, want.Complete, want.Work, want.MessageLatency = clock.Minute, 0, 30*clock.Minute, 2*clock.Hour
	if got := w.ActionCosts(); got != want {
		t.Errorf("costs: got %+v, want %+v", got, want)
	}
}

func TestLoadCostErrors(t *testing.T) {
	costs := func(s string) []string { return v2("name: tiny\n", "name: tiny\n"+s) }
	tests := []struct {
		name  string
		edits []string
		want  string
	}{
		{"costs in a version 1 file", []string{"name: tiny\n", "name: tiny\ncosts: {claim: 1m}\n"},
			`w.yaml:3:8: costs: costs needs version: 2 (this file declares version 1)`},
		{"message latency in a version 1 file", []string{"name: tiny\n", "name: tiny\nmessage_latency: 1m\n"},
			`w.yaml:3:18: message_latency: message_latency needs version: 2 (this file declares version 1)`},
		{"an unknown action", costs("costs: {claim: 1m, lunch: 1h}\n"),
			`w.yaml:3:20: costs.lunch: unknown field "lunch" (expected one of turn, claim, work, complete, request_approval, decide, message, handoff, escalate)`},
		{"a bad duration", costs("costs: {claim: soon}\n"),
			`w.yaml:3:16: costs.claim: invalid duration "soon": expected a number at "soon"`},
		{"a turn of no time", costs("costs:\n  turn: 0m\n"),
			`w.yaml:4:9: costs.turn: must be more than zero, got "0m"`},
		{"a work span of no time", costs("costs: {work: 0h}\n"),
			`w.yaml:3:15: costs.work: must be more than zero, got "0h"`},
		{"a bad latency", costs("message_latency: 5\n"),
			`w.yaml:3:18: message_latency: invalid duration "5": missing unit after "5" (expected w, d, h, m, s or ms)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantLoadError(t, mustEdit(t, tt.edits...), tt.want)
		})
	}
}
