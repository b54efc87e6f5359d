package worlds

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
)

// TestLoadLimits: a file that asks too much of the process is refused with
// its position, the limit and the flag that raises it, before it can
// exhaust memory.
func TestLoadLimits(t *testing.T) {
	deepFlow := "version: 1\nname: x\nstart: 2026-01-05T09:00:00Z\nhorizon: 1d\nroles: " + strings.Repeat("[", 100_000) + "\n"
	var deepBlock strings.Builder
	deepBlock.WriteString("version: 1\nname: x\nroles:\n")
	for i := 0; i < 200; i++ {
		deepBlock.WriteString(strings.Repeat("  ", i+1) + "a:\n")
	}
	tests := []struct {
		name string
		src  []byte
		lim  Limits
		want string
	}{
		{"100,000 nested brackets", []byte(deepFlow), Limits{},
			"w.yaml:5:72: worlds: over a limit: collections nested more than 64 deep (--max-world-depth)"},
		{"200 levels of indentation", []byte(deepBlock.String()), Limits{},
			"w.yaml:68:129: worlds: over a limit: indented more than 128 columns (nesting limit 64, --max-world-depth)"},
		{"a file over the size limit", []byte(tinyWorld), Limits{FileBytes: 900},
			"w.yaml: worlds: over a limit: the file is 983 bytes, above the limit of 900 (--max-world-bytes)"},
		{"a Poisson arrival every millisecond", mustEdit(t, withSection("arrivals:\n  - {id: a, queue: backlog, process: poisson, every: 1ms, ticket: {role: engineer, effort: 1h}}\n")...), Limits{},
			"w.yaml:41:54: arrivals[0].every: worlds: over a limit: would bring about 432000001 tickets in a session, above the limit of 2000000 (--max-arrivals); give it a count, an until or a longer gap"},
		{"a burst of a billion", mustEdit(t, withSection("arrivals:\n  - {id: a, queue: backlog, process: bursty, every: 1d, burst: 1000000000, ticket: {role: engineer, effort: 1h}}\n")...), Limits{},
			"w.yaml:41:64: arrivals[0].burst: worlds: over a limit: brings 1000000000 tickets at one instant, above the limit of 10000 (--max-burst)"},
		{"members over the limit", []byte(tinyWorld), Limits{Members: 2},
			"w.yaml:15:1: members: worlds: over a limit: 3 members, above the limit of 2 (--max-members)"},
		{"tasks over the limit", []byte(tinyWorld), Limits{Tasks: 2},
			"w.yaml:30:1: projects: worlds: over a limit: 3 tasks, above the limit of 2 (--max-tasks)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			w, err := LoadLimited("w.yaml", tt.src, tt.lim)
			if err == nil {
				t.Fatalf("got world %q and no error, want %s", w.Name, tt.want)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("error:\ngot  %s\nwant %s", got, tt.want)
			}
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
				t.Errorf("refusing it allocated %d MiB, want the refusal before the parser's tree", grew>>20)
			}
		})
	}
}

// TestLoadShapeAllowsBracketsInText: brackets in quoted or plain text and
// in comments are not nesting.
func TestLoadShapeAllowsBracketsInText(t *testing.T) {
	many := strings.Repeat("[", 200)
	src := mustEdit(t,
		"{id: spec, role: lead, effort: 1d}", `{id: spec, title: "`+many+`", role: lead, effort: 1d}`,
		"{id: api, role: engineer, effort: 3d, deps: [spec]}", "{id: api, title: '"+many+"', role: engineer, effort: 3d, deps: [spec]} # "+many,
		"version: 1\n", "version: 1\ndescription: fix "+many+" in the title\n")
	if _, err := Load("w.yaml", src); err != nil {
		t.Fatalf("Load: %v", err)
	}
}

// TestLoadLargeWorldOverALimitInParts: a large file over a limit is refused
// from its parts, naming the field, without reading its whole tree.
func TestLoadLargeWorldOverALimitInParts(t *testing.T) {
	src := Generate(GenOptions{Teams: 20, Members: 2000, Projects: 20, Tasks: 50})
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := LoadLimited("big.yaml", src, Limits{Members: 1000})
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	var list ErrorList
	if !errors.As(err, &list) || len(list) != 1 || list[0].Path != "members" || !errors.Is(err, ErrLimit) && !strings.Contains(err.Error(), ErrLimit.Error()) {
		t.Fatalf("got %v, want one refusal at members for the members limit", err)
	}
	whole, err := loadWhole("big.yaml", src)
	if err != nil || len(whole.Members) <= 1000 {
		t.Fatalf("the same file within the default limits: %v", err)
	}
	t.Logf("refused %d bytes with %d MiB allocated", len(src), (after.TotalAlloc-before.TotalAlloc)>>20)
}

// TestLoadValidationHoles: values and penalties that would pay for what
// they punish, and interruptions that could never happen, are refused.
func TestLoadValidationHoles(t *testing.T) {
	tests := []struct {
		name  string
		edits []string
		want  string
	}{
		{"a negative violation penalty", withSection("scoring: {violation_penalty: -5}\n"),
			"w.yaml:40:30: scoring.violation_penalty: must not be negative, got -5"},
		{"a negative SLA penalty", withSection("scoring: {sla_penalty: -1}\n"),
			"w.yaml:40:24: scoring.sla_penalty: must not be negative, got -1"},
		{"a negative budget penalty", withSection("scoring: {budget_penalty: -0.5}\n"),
			"w.yaml:40:27: scoring.budget_penalty: must not be negative, got -0.5"},
		{"a negative project value", []string{"    value: 40\n", "    value: -40\n"},
			"w.yaml:34:12: projects[0].value: must not be negative, got -40"},
		{"a negative task value", []string{"{id: spec, role: lead, effort: 1d}", "{id: spec, role: lead, effort: 1d, value: -3}"},
			"w.yaml:37:51: projects[0].tasks[0].value: must not be negative, got -3"},
		{"a negative ticket value", withSection("arrivals:\n  - {id: a, queue: backlog, process: poisson, every: 1h, ticket: {role: engineer, effort: 1h, value: -2}}\n"),
			"w.yaml:41:102: arrivals[0].ticket.value: must not be negative, got -2"},
		{"a leave after the horizon", withSection("interruptions:\n  - {at: 20d, kind: leave, member: bob, for: 1d}\n"),
			"w.yaml:41:10: interruptions[0].at: 20d falls at or after the horizon: it would never happen"},
		{"an outage at the horizon", withSection("interruptions:\n  - {at: 15d, kind: outage, queue: backlog, for: 1d}\n"),
			"w.yaml:41:10: interruptions[0].at: 15d falls at or after the horizon: it would never happen"},
		{"an arrival starting after the horizon", withSection("arrivals:\n  - {id: a, queue: backlog, process: poisson, every: 1h, start: 16d, ticket: {role: engineer, effort: 1h}}\n"),
			"w.yaml:41:65: arrivals[0].start: 16d falls at or after the horizon: the process would bring no ticket"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := Load("w.yaml", mustEdit(t, tt.edits...))
			if err == nil {
				t.Fatalf("got world %q and no error, want %s", w.Name, tt.want)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("error:\ngot  %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestLoadWarnsOfAnSLANoTicketCanMeet: a warning, with its position; the
// world still loads.
func TestLoadWarnsOfAnSLANoTicketCanMeet(t *testing.T) {
	w := mustLoad(t, "w.yaml", mustEdit(t, withSection("arrivals:\n  - {id: a, queue: backlog, process: poisson, every: 1h, ticket: {role: engineer, effort: {min: 3h, max: 5h}, sla: 2h}}\n")...))
	want := "w.yaml:41:116: arrivals[0].ticket.sla: the SLA (2h) is shorter than the work every ticket needs (3h): no ticket can meet it"
	if len(w.Warnings) != 1 || w.Warnings.Error() != want {
		t.Fatalf("warnings: got %v, want %s", w.Warnings, want)
	}
}

// TestAdmit: the load is checked on every path, and so are the tickets the
// arrivals would bring at that load.
func TestAdmit(t *testing.T) {
	desk, err := Shipped("support-desk")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		load float64
		lim  Limits
		want string // "" for admitted
	}{
		{1, Limits{}, ""},
		{2, Limits{}, ""},
		{0.5, Limits{}, ""},
		{math.NaN(), Limits{}, "load NaN is not a finite number (a load is a factor such as 0.5, 1 or 2)"},
		{math.Inf(1), Limits{}, "load +Inf is not a finite number (a load is a factor such as 0.5, 1 or 2)"},
		{0, Limits{}, "load 0 must be more than zero (a load is a factor such as 0.5, 1 or 2)"},
		{-1, Limits{}, "load -1 must be more than zero (a load is a factor such as 0.5, 1 or 2)"},
		{1e9, Limits{}, "worlds: over a limit: load 1e+09 is above the limit of 100 (--max-load)"},
		{1e300, Limits{}, "worlds: over a limit: load 1e+300 is above the limit of 100 (--max-load)"},
		{50, Limits{Arrivals: 1000}, "worlds: over a limit: at load 50 the arrivals would bring about"},
	} {
		err := desk.Admit(tt.load, tt.lim)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("Admit(%v): %v, want admitted", tt.load, err)
		case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
			t.Errorf("Admit(%v): got %v, want %s…", tt.load, err, tt.want)
		case tt.want != "" && strings.Contains(tt.want, "limit") && !errors.Is(err, ErrLimit):
			t.Errorf("Admit(%v): %v does not wrap ErrLimit", tt.load, err)
		}
	}
	bursty := mustLoad(t, "w.yaml", mustEdit(t, withSection("arrivals:\n  - {id: a, queue: backlog, process: bursty, every: 1d, burst: 500, ticket: {role: engineer, effort: 1h}}\n")...))
	if err := bursty.Admit(100, Limits{}); err == nil || !strings.Contains(err.Error(), `arrival "a" brings 50000 tickets at one instant, above the limit of 10000 (--max-burst)`) {
		t.Errorf("a burst of 500 at load 100: got %v", err)
	}
}

// TestShippedWorldsWithinLimits: every shipped world loads without a
// warning and runs at loads up to 4 within the default limits.
func TestShippedWorldsWithinLimits(t *testing.T) {
	for _, name := range Names() {
		w, err := Shipped(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(w.Warnings) > 0 {
			t.Errorf("%s: warnings %v", name, w.Warnings)
		}
		for _, load := range []float64{0.25, 1, 4} {
			if err := w.Admit(load, Limits{}); err != nil {
				t.Errorf("%s at load %v: %v", name, load, err)
			}
		}
	}
}

func TestLimitsValidate(t *testing.T) {
	if err := (Limits{}).Validate(); err != nil {
		t.Errorf("zero limits: %v", err)
	}
	if err := (Limits{Tasks: -1}).Validate(); err == nil {
		t.Error("a negative limit: no error")
	}
	if err := (Limits{MaxLoad: math.NaN()}).Validate(); err == nil {
		t.Error("a NaN load limit: no error")
	}
}
