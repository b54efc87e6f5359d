package worlds

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
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
		{"a task value a score cannot sum", []string{"{id: spec, role: lead, effort: 1d}", "{id: spec, role: lead, effort: 1d, value: 1e308}"},
			"w.yaml:37:51: projects[0].tasks[0].value: 1e+308 is larger than 1e+12: a score adds up millions of them"},
		{"a penalty a score cannot sum", withSection("scoring: {sla_penalty: 2e12}\n"),
			"w.yaml:40:24: scoring.sla_penalty: 2e+12 is larger than 1e+12: a score adds up millions of them"},
		{"a fraction of a budget", []string{"budget: 20000}", "budget: 1.5}"}, "w.yaml:14:42: teams[0].budget: expected an integer, got 1.5"},
		{"a ticket priority with a fraction", withSection("arrivals:\n  - {id: a, queue: backlog, process: poisson, every: 1h, ticket: {role: engineer, effort: 1h, priority: {1: 3, 2.9: 1}}}\n"),
			"w.yaml:41:112: arrivals[0].ticket.priority: expected an integer key, got 2.9"},
		{"a budget past an integer", []string{"budget: 20000}", "budget: 1e400}"}, "w.yaml:14:42: teams[0].budget: number 1e400 is out of range for an integer"},
		{"a negative ticket value", withSection("arrivals:\n  - {id: a, queue: backlog, process: poisson, every: 1h, ticket: {role: engineer, effort: 1h, value: -2}}\n"),
			"w.yaml:41:102: arrivals[0].ticket.value: must not be negative, got -2"},
		{"a leave after the horizon", withSection("interruptions:\n  - {at: 20d, kind: leave, member: bob, for: 1d}\n"),
			"w.yaml:41:10: interruptions[0].at: 20d falls at or after the horizon: it would never happen"},
		{"an outage at the horizon", withSection("interruptions:\n  - {at: 15d, kind: outage, queue: backlog, for: 1d}\n"),
			"w.yaml:41:10: interruptions[0].at: 15d falls at or after the horizon: it would never happen"},
		{"an arrival that ends before it starts", withSection("arrivals:\n  - {id: a, queue: backlog, process: poisson, every: 1h, start: 2d, until: 1d, ticket: {role: engineer, effort: 1h}}\n"),
			"w.yaml:41:76: arrivals[0].until: 1d is not after the process's start (2d): it would bring no ticket"},
		{"an arrival's until that does not parse", withSection("arrivals:\n  - {id: a, queue: backlog, process: poisson, every: 1h, start: 2d, until: bogus, ticket: {role: engineer, effort: 1h}}\n"),
			`w.yaml:41:76: arrivals[0].until: invalid duration "bogus": expected a number at "bogus"`},
		{"a burst below one", withSection("arrivals:\n  - {id: a, queue: backlog, process: bursty, every: 1d, burst: -4, ticket: {role: engineer, effort: 1h}}\n"),
			"w.yaml:41:64: arrivals[0].burst: burst must be at least 1, got -4"},
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

// TestLoadWarnsOfAProjectAfterTheHorizon: a project that starts at or
// after the horizon loads, with a warning (it was accepted in silence).
func TestLoadWarnsOfAProjectAfterTheHorizon(t *testing.T) {
	w := mustLoad(t, "w.yaml", mustEdit(t, "    deadline: 12d\n", "    deadline: 30d\n    start: 20d\n"))
	want := `w.yaml:36:12: projects[0].start: 20d falls at or after the horizon: project "mvp" never starts in this world's sessions`
	if len(w.Warnings) != 1 || w.Warnings.Error() != want {
		t.Fatalf("warnings: got %v, want %s", w.Warnings, want)
	}
	// portfolio cut to 10 days: one warning for its 26 later projects.
	src, err := Source("portfolio")
	if err != nil {
		t.Fatal(err)
	}
	w = mustLoad(t, "portfolio.yaml", []byte(strings.Replace(string(src), "horizon: 60d", "horizon: 10d", 1)))
	if len(w.Warnings) != 1 || !strings.Contains(w.Warnings.Error(), `project "p11" (and 25 projects after it) never starts`) {
		t.Fatalf("portfolio to 10 days: warnings %v", w.Warnings)
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

// pathological returns files of about size bytes that cost the YAML
// library far more than their size: long flow collections, brackets
// nested within the depth limit, one huge scalar, a mapping of many keys,
// aliases, and long block lists of entries that are not what the schema
// wants.
func pathological(size int) map[string][]byte {
	rep := func(head, unit, tail string) []byte {
		var b bytes.Buffer
		b.WriteString(head)
		for b.Len() < size-len(tail)-len(unit) {
			b.WriteString(unit)
		}
		b.WriteString(tail)
		return b.Bytes()
	}
	numbered := func(head, format, tail string) []byte {
		var b bytes.Buffer
		b.WriteString(head)
		for i := 0; b.Len() < size-len(tail)-64; i++ {
			fmt.Fprintf(&b, format, i)
		}
		b.WriteString(tail)
		return b.Bytes()
	}
	return map[string][]byte{
		"a flow sequence":             rep("version: 1\nname: x\nmembers: [", "1,", "1]\n"),
		"a flow mapping":              rep("version: 1\nname: x\nmembers: {", "a: 1, ", "a: 1}\n"),
		"a flow mapping of many keys": numbered("version: 1\nname: x\nmembers: {", "k%d: 1, ", "a: 1}\n"),
		"nested brackets":             rep("version: 1\nname: x\ntags: [", strings.Repeat("[", 60)+strings.Repeat("]", 60)+",", "1]\n"),
		"empty flow sequences":        rep("version: 1\nname: x\ntags: [", "[],", "1]\n"),
		"a quoted scalar":             rep("version: 1\nname: \"", "aaaaaaaa", "\"\n"),
		"a plain scalar":              rep("version: 1\nname: ", "aaaaaaaa", "\n"),
		"a mapping of many keys":      numbered("version: 1\n", "k%07d: 1\n", ""),
		"keys of an entry":            numbered("version: 1\nname: x\nmembers:\n- id: a\n", "  k%07d: 1\n", ""),
		"aliases":                     rep("version: 1\nname: x\nx: &a [1]\ntags: [", "*a,", "1]\n"),
		"a list of scalars":           rep("version: 1\nname: x\nmembers:\n", "- a\n", ""),
		"a list of empty mappings":    rep("version: 1\nname: x\nmembers:\n", "- {}\n", ""),
		"a list of wrong members":     rep("version: 1\nname: x\nmembers:\n", "- {id: a, role: r, agent: x}\n", ""),
		"a list of long entries":      rep("version: 1\nname: x\nmembers:\n- {id: a, skills: [", "s,", "s]}\n"),
	}
}

// TestPathologicalWorldFiles: 8 MB files (the server's message limit)
// shaped to cost the YAML library the most are refused, naming a limit,
// with the memory they take to refuse bounded: before the node budget
// they took from 1 to 10 GB each (a flow sequence: 9.7 GB allocated, 4.9
// GB resident, 2.5 minutes).
func TestPathologicalWorldFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 8 MB files")
	}
	const bound = 256 << 20
	for name, src := range pathological(8 << 20) {
		t.Run(name, func(t *testing.T) {
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := LoadLimited("w.yaml", src, Limits{})
			runtime.ReadMemStats(&after)
			grew := after.TotalAlloc - before.TotalAlloc
			if err == nil || !strings.Contains(err.Error(), ErrLimit.Error()) {
				t.Fatalf("got %v, want a refusal naming a limit", err)
			}
			if grew > bound {
				t.Errorf("refusing %d bytes allocated %d MiB, want at most %d", len(src), grew>>20, bound>>20)
			}
			msg := err.Error()
			t.Logf("%d MiB allocated: %.160s", grew>>20, msg)
		})
	}
}

// TestNodesLimit: a file over the node limit that cannot be read in parts
// is refused from the pre-scan, naming the limit and its flag; with the
// limit raised it loads. A block mapping of more keys than the parser can
// take in time is refused at the key over the bound.
func TestNodesLimit(t *testing.T) {
	w := Generate(GenOptions{Seed: 3, Teams: 4, Members: 200, Projects: 4, Tasks: 100})
	var v any
	if err := yaml.Unmarshal(w, &v); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(v) // JSON: flow style, never read in parts
	if err != nil {
		t.Fatal(err)
	}
	n := countNodes(js)
	_, err = LoadLimited("w.json", js, Limits{Nodes: n - 1})
	want := fmt.Sprintf("w.json: worlds: over a limit: about %d YAML nodes, above the limit of %d read at once (--max-world-nodes)", n, n-1)
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("got %v, want %s…", err, want)
	}
	if _, err := LoadLimited("w.json", js, Limits{Nodes: n}); err != nil {
		t.Fatalf("within the limit: %v", err)
	}
	var keys strings.Builder
	keys.WriteString("version: 1\nname: x\nknows:\n")
	for i := range maxMapKeys + 1 {
		fmt.Fprintf(&keys, "  k%d: v\n", i)
	}
	_, err = Load("w.yaml", []byte(keys.String()))
	want = fmt.Sprintf("w.yaml:%d:3: worlds: over a limit: a mapping with more than %d keys", maxMapKeys+4, maxMapKeys)
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
}

// TestLargeFileMistakesInParts: a file over the node limit, read in parts,
// reports its mistakes where reading it whole does — the same line,
// column, path and message for one in a part or in the rest of the file,
// the same path and message (without a position) for one the validator
// finds — without ever holding the whole file's tree; and an entry over
// the limit on its own is named.
func TestLargeFileMistakesInParts(t *testing.T) {
	// Parts of 32 KB, a limit of 20,000 nodes: the file is read in parts
	// of about 10,000 nodes.
	const parts = 32 << 10
	src := Generate(GenOptions{Seed: 3, Teams: 10, Members: 1000, Projects: 20, Tasks: 50, Chains: 4})
	lim := Limits{Nodes: 20_000}.WithDefaults()
	if n := countNodes(src); n <= lim.Nodes || len(src) < 3*parts {
		t.Fatalf("precondition: the file has %d nodes and %d bytes; want it over %d nodes and in parts", n, len(src), lim.Nodes)
	}
	sequential, err := load("w.yaml", src, parts, lim, nil)
	if err != nil {
		t.Fatalf("the file without mistakes: %v", err)
	}
	// Parts decoded at once, or last to first, give the same world.
	for _, par := range runners {
		if got, err := load("w.yaml", src, parts, lim, par.run); err != nil || !reflect.DeepEqual(got, sequential) {
			t.Fatalf("the file without mistakes, parts decoded %s: got a different world or %v", par.name, err)
		}
	}
	edit := func(old, new string) []byte {
		t.Helper()
		if bytes.Count(src, []byte(old)) < 1 {
			t.Fatalf("no %q in the file", old)
		}
		return bytes.Replace(src, []byte(old), []byte(new), 1)
	}
	twice := func(a, b [2]string) []byte {
		t.Helper()
		once := edit(a[0], a[1])
		if bytes.Count(once, []byte(b[0])) < 1 {
			t.Fatalf("no %q in the file", b[0])
		}
		return bytes.Replace(once, []byte(b[0]), []byte(b[1]), 1)
	}
	for _, tt := range []struct {
		name   string
		src    []byte
		placed bool // the whole reading's line and column too
	}{
		{"an unknown field of a member in a later part", edit("{id: m00700, role:", "{id: m00700, rle:"), true},
		{"a wrong type in a task of a later project", edit("{id: p15-t7, role: designer, effort: ", "{id: p15-t7, role: designer, value: [1], effort: "), true},
		{"a YAML syntax error in a part", edit("{id: m00500, role:", "{id: m00500,, role:"), true},
		{"an unknown field after the lists", append(bytes.Clone(src), "colour: blue\n"...), true},
		{"an escaped control character outside the lists", edit("description: Generated world with 10 teams, 1000 members and 20 projects of 50 tasks.\n", `description: "Generated\x01 world"`+"\n"), true},
		{"a member naming an unknown role", edit("{id: m00900, role: engineer", "{id: m00900, role: enginer"), false},
		{"mistakes in two parts: the first in the file wins", twice([2]string{"{id: m00300, role:", "{id: m00300, rle:"},
			[2]string{"{id: p15-t7, role: designer, effort: ", "{id: p15-t7, role: designer, value: [1], effort: "}), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want, werr := loadWhole("w.yaml", tt.src)
			if werr == nil {
				t.Fatalf("precondition: the edited file loads whole (%q)", want.Name)
			}
			_, err := load("w.yaml", tt.src, parts, lim, nil)
			var got, whole ErrorList
			if !errors.As(err, &got) || !errors.As(werr, &whole) {
				t.Fatalf("got %v, want an ErrorList like the whole reading's %v", err, werr)
			}
			g, w := *got[0], *whole[0]
			if !tt.placed {
				w.Line, w.Column = 0, 0
			}
			if g != w {
				t.Errorf("in parts: %s\nwhole:    %s", &g, &w)
			}
			for _, par := range runners {
				perr := func() error { _, err := load("w.yaml", tt.src, parts, lim, par.run); return err }()
				if perr == nil || perr.Error() != err.Error() {
					t.Errorf("parts decoded %s: %v\none at a time: %v", par.name, perr, err)
				}
			}
		})
	}
	// A project of 5,000 tasks is one entry, over a limit of 20,000 nodes.
	big := Generate(GenOptions{Seed: 3, Members: 20, Projects: 2, Tasks: 5000})
	_, err = LoadLimited("w.yaml", big, Limits{Nodes: 20_000})
	if err == nil || !strings.Contains(err.Error(), "projects[0]: worlds: over a limit: the part of the list read at once from here holds about") ||
		!strings.Contains(err.Error(), "(--max-world-nodes); split an entry this large") {
		t.Fatalf("a project over the limit on its own: got %v", err)
	}
}

// TestLargeFileNotCutSaysWhere: a file over the node limit that cannot be
// read a part at a time because of one line says which line and why — an
// unclosed bracket where it opened, a quote where it is — rather than only
// that the file is too large.
func TestLargeFileNotCutSaysWhere(t *testing.T) {
	const parts = 32 << 10
	src := Generate(GenOptions{Seed: 3, Teams: 10, Members: 1000, Projects: 20, Tasks: 50})
	lim := Limits{Nodes: 20_000}.WithDefaults()
	if _, err := load("w.yaml", src, parts, lim, nil); err != nil || countNodes(src) <= lim.Nodes {
		t.Fatalf("precondition: the file is over the limit and loads in parts: %v", err)
	}
	for _, tc := range []struct {
		name, old, new string
		at             string // what the error points at, in new
		want           string
	}{
		{"a bracket left open", "  - {id: m00500, role: engineer, team: team10}\n", "  - {id: m00500, role: engineer, team: team10\n",
			"{", `the "{" opened here does not close on its line (is its closing bracket missing?)`},
		{"a quote", "  - {id: m00500, role: ", "  - {id: m00500, name: 'Ann', role: ",
			"'", `"'" is not read a part at a time`},
		{"a bracket closing nothing", "  - {id: m00500, role: engineer, team: team10}", "  - {id: m00500, role: engineer, team: team10}]",
			"]", `the "]" here closes no bracket opened on its line`},
		{"a quote after accents (columns are characters)", "  - {id: m00500, role: ", "  - {id: m00500, name: Zoë Ærø, nick: 'Z', role: ",
			"'", `"'" is not read a part at a time`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !bytes.Contains(src, []byte(tc.old)) {
				t.Fatalf("the generated world has no %q", tc.old)
			}
			bad := bytes.Replace(src, []byte(tc.old), []byte(tc.new), 1)
			line := bytes.Count(bad[:bytes.Index(bad, []byte(tc.new))], []byte("\n")) + 1
			col := utf8.RuneCountInString(tc.new[:strings.Index(tc.new, tc.at)]) + 1
			_, err := load("w.yaml", bad, parts, lim, nil)
			var errs ErrorList
			if !errors.As(err, &errs) {
				t.Fatalf("got %v, want an ErrorList", err)
			}
			e := errs[0]
			if e.Line != line || e.Column != col || !strings.HasPrefix(e.Msg, ErrLimit.Error()) ||
				!strings.Contains(e.Msg, "above the limit of") || !strings.Contains(e.Msg, "this file cannot be read in parts because of this spot: "+tc.want) {
				t.Errorf("got %s\nwant line %d, column %d: …because of this spot: %s", e, line, col, tc.want)
			}
		})
	}
}

// TestLimitsRaisedAndRaise: what a session records of its limits (those
// above the defaults) and how a resume combines them with the operator's.
func TestLimitsRaisedAndRaise(t *testing.T) {
	run := Limits{Burst: 12_000, Members: 10, MaxLoad: 200}
	if got, want := run.Raised(), (Limits{Burst: 12_000, MaxLoad: 200}); got != want {
		t.Errorf("Raised: got %+v, want %+v (a lowered limit is not recorded)", got, want)
	}
	if got := (Limits{}).Raised(); got != (Limits{}) {
		t.Errorf("Raised of the defaults: got %+v, want none", got)
	}
	rec := run.Raised()
	for _, tt := range []struct {
		op, want Limits
	}{
		{Limits{}, Limits{Burst: 12_000, MaxLoad: 200}},
		{Limits{Burst: 20_000, Tasks: 5}, Limits{Burst: 20_000, Tasks: 5, MaxLoad: 200}},
		{Limits{Burst: 50, MaxLoad: 2}, Limits{Burst: 12_000, MaxLoad: 200}},
	} {
		if got := tt.op.Raise(rec); got != tt.want {
			t.Errorf("%+v.Raise(%+v): got %+v, want %+v", tt.op, rec, got, tt.want)
		}
	}
}

// runners are Options.Parallel functions a test loads with: every part at
// once on its own goroutine, and one at a time from the last part to the
// first (the file's order reversed).
var runners = []struct {
	name string
	run  func(n int, f func(i int))
}{
	{"at once", func(n int, f func(int)) {
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { f(i) })
		}
		wg.Wait()
	}},
	{"last to first", func(n int, f func(int)) {
		for i := n - 1; i >= 0; i-- {
			f(i)
		}
	}},
}

// Weekly rotations lay out every week a member is off over the horizon,
// which a long horizon multiplies apart from the file: past
// maxRotationDays the world is refused for a limit at its rotate field,
// before the days are laid out; a horizon of ten years loads, and the
// members of one shift list share one rota.
func TestRotationDaysLimit(t *testing.T) {
	src, err := Source("wind-ops")
	if err != nil {
		t.Fatal(err)
	}
	with := func(h string) []byte { return []byte(strings.Replace(string(src), "horizon: 14d", "horizon: "+h, 1)) }
	w, err := Load("wind-ops.yaml", with("3650d"))
	if err != nil {
		t.Fatalf("ten years: %v", err)
	}
	shared := 0
	for i := range w.Members {
		for k := range w.Members {
			if i < k && w.Members[i].Team == w.Members[k].Team && w.Members[i].OnShift && w.Members[k].OnShift &&
				reflect.ValueOf(w.Members[i].Schedule).Pointer() == reflect.ValueOf(w.Members[k].Schedule).Pointer() {
				shared++
			}
		}
	}
	if shared == 0 {
		t.Error("no two members of a shift list share its rota")
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = Load("wind-ops.yaml", with("365000d"))
	runtime.ReadMemStats(&after)
	var el ErrorList
	if !errors.As(err, &el) || !slices.ContainsFunc(el, func(e *Error) bool {
		return e.Path == "teams[1].rotate" && e.Line > 0 && strings.Contains(e.Msg, ErrLimit.Error()) && strings.Contains(e.Msg, "days off over the horizon")
	}) {
		t.Fatalf("a thousand years: %v; want a limit refused at teams[1].rotate with its position", err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Errorf("refusing it allocated %d MiB, want the refusal before the days are laid out", grew>>20)
	}
}

// An integer may be written as a whole number with a fraction or an
// exponent (2.0e4); one with a fraction left is refused (above), where the
// YAML library kept its whole part.
func TestLoadWholeNumbersWrittenAsFloats(t *testing.T) {
	w := mustLoad(t, "w.yaml", mustEdit(t, "budget: 20000}", "budget: 2.0e4}"))
	if b := w.Teams[0].Budget; b != 20000 {
		t.Fatalf("budget 2.0e4 loaded as %d", b)
	}
}

// A file a session recorded is read as it was then: the checks added
// since (a value above MaxNumber, a fraction where an integer goes, a
// case expression that fails on a probe, a field an interruption's kind
// does not read) do not refuse it, so that the
// session still replays, verifies, resumes and forks.
func TestRecordedFilesSkipTheChecksAddedSince(t *testing.T) {
	for name, src := range map[string][]byte{
		"a fraction":                      mustEdit(t, "budget: 20000}", "budget: 1500.5}"),
		"a large value":                   mustEdit(t, "{id: spec, role: lead, effort: 1d}", "{id: spec, role: lead, effort: 1d, value: 1e13}"),
		"a failing when":                  caseEdit(t, "when: amount > 2000", "when: amount % 0 > 1"),
		"a deadline at the start instant": mustEdit(t, "version: 1", "version: 2", "deadline: 12d", `deadline: "2026-01-05T09:00:00Z"`),
		"a field its interruption's kind does not read": mustEdit(t,
			withSection("interruptions:\n  - {at: 1d, kind: outage, queue: backlog, for: 1d, delegate: bob}\n")...),
	} {
		if _, err := LoadLimited("w.yaml", src, Limits{}); err == nil {
			t.Errorf("%s: loaded today", name)
		}
		w, err := LoadLimited("w.yaml", src, Limits{Recorded: true})
		if err != nil {
			t.Errorf("%s, recorded: %v", name, err)
			continue
		}
		if name == "a fraction" && w.Teams[0].Budget != 1500 {
			t.Errorf("a recorded budget of 1500.5 reads %d, as the YAML library read it then (1500)", w.Teams[0].Budget)
		}
	}
}
