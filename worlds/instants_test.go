package worlds

import (
	"testing"
	"time"

	"github.com/corpsim/corpsim/clock"
)

// v2 turns tinyWorld into a version 2 file, with edits after.
func v2(edits ...string) []string { return append([]string{"version: 1\n", "version: 2\n"}, edits...) }

// TestLoadInstants reads RFC 3339 instants where offsets are accepted: an
// instant inside working hours is that moment, one outside is the end of
// the working period before it, and each lands where the offset of the
// working time up to it does.
func TestLoadInstants(t *testing.T) {
	src := mustEdit(t, v2(
		"deadline: 12d", "deadline: 2026-01-21T17:00:00Z",
		lastTask, lastTask+
			"arrivals:\n  - {id: a, queue: backlog, process: scheduled, at: [\"2026-01-06T10:30:00Z\", 1d], start: 2026-01-06T09:00:00+01:00, until: 2026-01-09T12:00:00Z, ticket: {role: engineer, effort: 1h}}\n"+
			"interruptions:\n  - {at: \"2026-01-10T12:00:00Z\", kind: outage, queue: backlog, for: 1h}\n",
		"      reply: {min: 1h, max: 6h}\n", "      reply: {min: 1h, max: 6h}\n      absent: [{from: 2026-01-07T08:00:00Z, for: 1d}]\n",
	)...)
	w := mustLoad(t, "w.yaml", src)
	wall := func(ms int64) string { return w.Calendar.Wall(clock.Time(ms)).Format(time.RFC3339) }
	frank, _ := w.Member("frank")
	tests := []struct {
		field string
		got   int64
		want  string
	}{
		{"projects[0].deadline", int64(w.Projects[0].Deadline), "2026-01-21T17:00:00Z"},
		{"arrivals[0].at[0] (in working hours)", int64(w.Arrivals[0].At[0]), "2026-01-06T10:30:00Z"},
		{"arrivals[0].at[1] (an offset beside it)", int64(w.Arrivals[0].At[1]), "2026-01-05T17:00:00Z"},
		{"arrivals[0].start (08:00 UTC, before hours)", int64(w.Arrivals[0].Start), "2026-01-05T17:00:00Z"},
		{"arrivals[0].until", int64(w.Arrivals[0].Until), "2026-01-09T12:00:00Z"},
		{"interruptions[0].at (a Saturday)", int64(w.Interruptions[0].At), "2026-01-09T17:00:00Z"},
		{"members[2].npc.absent[0].from (before hours)", int64(frank.NPC.Absent[0].From), "2026-01-06T17:00:00Z"},
	}
	for _, tt := range tests {
		if got := wall(tt.got); got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.field, got, tt.want)
		}
	}
	// The same times written as offsets give the same simulated times.
	off := mustLoad(t, "w.yaml", mustEdit(t, v2(
		lastTask, lastTask+"interruptions:\n  - {at: 5d, kind: outage, queue: backlog, for: 1h}\n")...))
	if got, want := w.Projects[0].Deadline, off.Projects[0].Deadline; got != want {
		t.Errorf("deadline as an instant: got %d, want %d (12d)", got, want)
	}
	if got, want := w.Interruptions[0].At, off.Interruptions[0].At; got != want {
		t.Errorf("interruption at a Saturday instant: got %d, want %d (5d)", got, want)
	}
	// A horizon may be an instant too.
	h := mustLoad(t, "w.yaml", mustEdit(t, v2("horizon: 15d", "horizon: 2026-01-26T17:00:00Z")...))
	if got, want := h.Horizon, off.Horizon; got != want {
		t.Errorf("horizon as an instant: got %d, want %d (15d)", got, want)
	}
}

func TestLoadInstantErrors(t *testing.T) {
	at := func(s string) []string {
		return []string{lastTask, lastTask + "interruptions:\n  - {at: " + s + ", kind: outage, queue: backlog, for: 1h}\n"}
	}
	tests := []struct {
		name  string
		edits []string
		want  string
	}{
		{"an instant in a version 1 file", at("2026-01-06T10:00:00Z"),
			`w.yaml:41:10: interruptions[0].at: an RFC 3339 instant needs version: 2 (this file declares version 1)`},
		{"an instant before the start", v2(at("2026-01-02T10:00:00Z")...),
			`w.yaml:41:10: interruptions[0].at: 2026-01-02T10:00:00Z is before the world's start (2026-01-05T09:00:00Z)`},
		{"an instant past the horizon", v2(at("2026-01-27T10:00:00Z")...),
			`w.yaml:41:10: interruptions[0].at: 2026-01-27T10:00:00Z is past the horizon (2026-01-26T17:00:00Z)`},
		{"an instant that is not one", v2(at("2026-13-01T10:00:00Z")...),
			`w.yaml:41:10: interruptions[0].at: expected an RFC 3339 instant such as 2026-02-17T09:00:00Z, got "2026-13-01T10:00:00Z"`},
		{"an instant without a zone", v2(at("2026-01-06T10:00:00")...),
			`w.yaml:41:10: interruptions[0].at: expected an RFC 3339 instant such as 2026-02-17T09:00:00Z, got "2026-01-06T10:00:00"`},
		{"a deadline past the horizon", v2("deadline: 12d", "deadline: 2026-02-02T09:00:00Z"),
			`w.yaml:35:15: projects[0].deadline: 2026-02-02T09:00:00Z is past the horizon (2026-01-26T17:00:00Z)`},
		{"a deadline at the start", v2("deadline: 12d", "deadline: 2026-01-05T09:00:00Z"),
			`w.yaml:35:15: projects[0].deadline: 2026-01-05T09:00:00Z is the world's start: it must be after it`},
		{"an absence before the start", v2("      reply: {min: 1h, max: 6h}\n", "      reply: {min: 1h, max: 6h}\n      absent: [{from: 2025-12-31T09:00:00Z, for: 1d}]\n"),
			`w.yaml:23:23: members[2].npc.absent[0].from: 2025-12-31T09:00:00Z is before the world's start (2026-01-05T09:00:00Z)`},
		{"an arrival list entry past the horizon", v2(lastTask, lastTask+"arrivals:\n  - {id: a, queue: backlog, process: scheduled, at: [1d, \"2026-03-01T09:00:00Z\"], ticket: {role: engineer, effort: 1h}}\n"),
			`w.yaml:41:58: arrivals[0].at[1]: 2026-03-01T09:00:00Z is past the horizon (2026-01-26T17:00:00Z)`},
		{"a horizon at the start", v2("horizon: 15d", "horizon: 2026-01-03T09:00:00Z"),
			`w.yaml:4:10: horizon: 2026-01-03T09:00:00Z is before the world's start (2026-01-05T09:00:00Z)`},
		{"a horizon on the first night", v2("start: 2026-01-05T09:00:00Z", "start: 2026-01-05T17:00:00Z", "horizon: 15d", "horizon: 2026-01-05T20:00:00Z"),
			`w.yaml:4:10: horizon: 2026-01-05T20:00:00Z leaves no working time after the start`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantLoadError(t, mustEdit(t, tt.edits...), tt.want)
		})
	}
}
