package worlds

import (
	"testing"
)

const lastTask = "      - {id: servers, role: engineer, effort: 2h, purchase: 3000, deps: [spec]}\n"

// withSection appends YAML after tinyWorld's last line.
func withSection(extra string) []string { return []string{lastTask, lastTask + extra} }

// TestLoadErrorsDynamic covers the sections that make a world move:
// arrivals, interruptions, NPC behaviour, reporting lines, queue order.
func TestLoadErrorsDynamic(t *testing.T) {
	tests := []struct {
		name  string
		edits []string
		want  string
	}{
		{"unknown arrival process", withSection("arrivals:\n  - {id: a, queue: backlog, process: steady, every: 1h, ticket: {role: engineer, effort: 1h}}\n"),
			`w.yaml:41:38: arrivals[0].process: unknown process "steady" (expected poisson, scheduled or bursty)`},
		{"bursty without a burst size", withSection("arrivals:\n  - {id: a, queue: backlog, process: bursty, every: 1d, ticket: {role: engineer, effort: 1h}}\n"),
			`w.yaml:41:5: arrivals[0].burst: a bursty process needs burst: the number of tickets per burst`},
		{"ticket effort distribution with mean and min", withSection("arrivals:\n  - {id: a, queue: backlog, process: poisson, every: 1h, ticket: {role: engineer, effort: {mean: 1h, min: 10m}}}\n"),
			`w.yaml:41:91: arrivals[0].ticket.effort: give either mean (exponential) or both min and max (uniform)`},
		// A distribution's keys are named (they were "expected one of ,
		// mean, min, max, " and "expected one of , , , , ").
		{"unknown key in a duration distribution", withSection("arrivals:\n  - {id: a, queue: backlog, process: poisson, every: 1h, ticket: {role: engineer, effort: {men: 1h}}}\n"),
			`w.yaml:41:92: arrivals[0].ticket.effort.men: unknown field "men" (expected one of mean, min, max)`},
		{"unknown key in an amount distribution", withSection("arrivals:\n  - {id: a, queue: backlog, process: poisson, every: 1h, ticket: {role: engineer, effort: 1h, purchase: {min: 50, maximum: 1500}}}\n"),
			`w.yaml:41:115: arrivals[0].ticket.purchase.maximum: unknown field "maximum" (expected one of mean, min, max)`},
		{"ticket effort of the wrong shape", withSection("arrivals:\n  - {id: a, queue: backlog, process: poisson, every: 1h, ticket: {role: engineer, effort: [1h]}}\n"),
			`w.yaml:41:91: arrivals[0].ticket.effort: expected a duration like "2h" or a distribution like {mean: 2h} or {min: 1h, max: 3h}`},
		{"arrival into an unknown queue", withSection("arrivals:\n  - {id: a, queue: desk, process: poisson, every: 1h, ticket: {role: engineer, effort: 1h}}\n"),
			`w.yaml:41:20: arrivals[0].queue: unknown queue "desk" (defined: backlog)`},
		{"information from a member who does not know it", withSection("arrivals:\n  - {id: a, queue: backlog, process: poisson, every: 1h, ticket: {role: engineer, effort: 1h, info: {from: frank, topic: secrets}}}\n"),
			`w.yaml:41:122: arrivals[0].ticket.info.topic: frank does not know topic "secrets" (an NPC's npc.knows lists what it can tell)`},
		{"unknown interruption kind", withSection("interruptions:\n  - {at: 1d, kind: meteor}\n"),
			`w.yaml:41:20: interruptions[0].kind: unknown kind "meteor" (expected reprioritize, leave, outage, change or urgent)`},
		{"leave delegated to oneself", withSection("interruptions:\n  - {at: 1d, kind: leave, member: bob, for: 1d, delegate: bob}\n"),
			`w.yaml:41:59: interruptions[0].delegate: bob cannot delegate to themselves`},
		{"outage without a length", withSection("interruptions:\n  - {at: 1d, kind: outage, queue: backlog}\n"),
			`w.yaml:41:5: interruptions[0].for: missing duration (for example "2h", "30m" or "3d")`},
		{"reprioritize without a new value", withSection("interruptions:\n  - {at: 1d, kind: reprioritize, task: api}\n"),
			`w.yaml:41:5: interruptions[0]: reprioritize needs a new value or priority`},
		// A field the interruption's kind does not read was ignored:
		// an outage's delegate, a reprioritization's length.
		{"an outage with a delegate", withSection("interruptions:\n  - {at: 1d, kind: outage, queue: backlog, for: 4h, delegate: bob}\n"),
			`w.yaml:41:63: interruptions[0].delegate: outage does not read delegate (read by leave): leave it out`},
		{"a reprioritization with a length", withSection("interruptions:\n  - {at: 1d, kind: reprioritize, task: api, value: 9, for: 2d}\n"),
			`w.yaml:41:60: interruptions[0].for: reprioritize does not read for (read by leave and outage): leave it out`},
		{"a leave with an effort", withSection("interruptions:\n  - {at: 1d, kind: leave, member: bob, for: 1d, effort: +1d}\n"),
			`w.yaml:41:57: interruptions[0].effort: leave does not read effort (read by change): leave it out`},
		{"reporting lines that loop", []string{"{id: alice, name: Alice, role: lead, team: product}", "{id: alice, name: Alice, role: lead, team: product, manager: bob}",
			"{id: bob, name: Bob, role: engineer, team: product}", "{id: bob, name: Bob, role: engineer, team: product, manager: alice}"},
			`w.yaml:16:66: members[0].manager: reporting lines loop: alice -> bob -> alice`},
		{"unknown queue order", []string{"{id: backlog, served_by: [lead, engineer]}", "{id: backlog, served_by: [lead, engineer], order: lifo}"},
			`w.yaml:24:55: queues[0].order: unknown order "lifo" (expected fifo or priority)`},
		{"malformed escalation delay", []string{"{role: lead, above: 500}", "{role: lead, above: 500, escalate_after: soon}"},
			`w.yaml:28:50: approvals[0].steps[0].escalate_after: invalid duration "soon": expected a number at "soon"`},
		{"project starting after its deadline", []string{"    deadline: 12d\n", "    deadline: 12d\n    start: 13d\n"},
			`w.yaml:36:12: projects[0].start: project "mvp" starts at or after its deadline`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := Load("w.yaml", mustEdit(t, tt.edits...))
			if err == nil {
				t.Fatalf("Load: got world %q and no error, want %s", w.Name, tt.want)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("Load error:\ngot  %s\nwant %s", got, tt.want)
			}
		})
	}
}
