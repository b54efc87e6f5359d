package worlds

import (
	"strings"
	"testing"
)

// A YAML syntax error that comes from a quote or a bracket left open is
// reported where it opened, with the parser's own position in the message:
// the parser notices it only where the text stops making sense, a line or
// more later, and named that line and no field.
func TestSyntaxErrorNamesWhereItOpened(t *testing.T) {
	cases := []struct {
		name       string
		from, to   string
		want, also string
	}{
		{"a mapping's { not closed", "  - {id: bob, name: Bob, role: engineer, team: product}", "  - {id: bob, name: Bob, role: engineer, team: product",
			"w.yaml:18:5: members[0]: YAML syntax error: the { opened here is not closed (a missing }?); the parser stopped at line 19", ""},
		{"a quote closed by the next quote of the file", `  hours: "09:00-17:00"`, `  hours: "09:00-17:00`,
			`w.yaml:7:10: calendar.hours: YAML syntax error: the "…" string opened here runs on to line 9 (is its closing quote missing?)`, ""},
		{"a list's [ not closed", "  workdays: [mon, tue, wed, thu, fri]", "  workdays: [mon, tue, wed, thu, fri",
			"w.yaml:8:13: calendar.workdays: YAML syntax error: the [ opened here is not closed (a missing ]?)", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := strings.Replace(hintWorld, c.from, c.to, 1)
			if src == hintWorld {
				t.Fatalf("the edit %q is not in the world", c.from)
			}
			_, err := Load("w.yaml", []byte(src))
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("got %v\nwant it to begin %s", err, c.want)
			}
		})
	}
}

// What is no open quote or bracket gets no hint: an apostrophe inside a
// plain scalar, quotes in a comment or in a block scalar, a flow list
// over two lines, a string closed on its line.
func TestSyntaxHintIgnoresWhatIsNoOpening(t *testing.T) {
	src := strings.Join([]string{
		"name: Bob's desk # \"quoted\" in a comment, and a [",
		"description: |",
		`  a "block scalar" with [brackets and 'quotes`,
		"served_by: [lead,",
		"  engineer]",
		`hours: "09:00-17:00"`,
		"x: 1",
		"\tbad: tab",
	}, "\n")
	if l, c, hint := unclosedHint([]byte(src), 8, 1); hint != "" {
		t.Fatalf("got a hint at %d:%d: %s; want none", l, c, hint)
	}
	if l, c, hint := unclosedHint([]byte("a: 'it''s\nb: 1\n"), 2, 1); l != 1 || c != 4 || !strings.Contains(hint, "'…' string opened here is not closed") {
		t.Fatalf("an unclosed single-quoted string with an escaped quote: %d:%d %q", l, c, hint)
	}
	// Review: columns count characters, as the parser's do; a block
	// scalar may be a list's entry; a tab may follow a key's colon.
	for _, c := range []struct {
		name      string
		src       string
		line, col int
		wantLine  int
		wantCol   int
	}{
		{"a missing comma after a closed string of accented letters", "x: 1\nm: {id: carol, name: \"Zoë Ünal Çelik\" role: engineer}\n", 2, 40, 0, 0},
		{"a quote after accented letters", "a: [Zoë, \"Ünal\nb: 1\n", 2, 1, 1, 10},
		{"a block scalar as a list's entry", "notes:\n  - |\n    \"a quoted line\n  - fine\nx: {a: 1\ny: 2\n", 6, 2, 5, 4},
		{"a tab after the colon", "hours:\t\"09:00\nx: 1\n", 2, 1, 1, 8},
	} {
		l, col, hint := unclosedHint([]byte(c.src), c.line, c.col)
		if l != c.wantLine || col != c.wantCol {
			t.Errorf("%s: hint at %d:%d (%q); want %d:%d", c.name, l, col, hint, c.wantLine, c.wantCol)
		}
	}
}

const hintWorld = `version: 1
name: tiny
start: 2026-01-05T09:00:00Z
horizon: 5d

calendar:
  hours: "09:00-17:00"
  workdays: [mon, tue, wed, thu, fri]
  holidays: ["2026-01-19"]

roles:
  - {id: engineer, title: Engineer}

teams:
  - {id: product, name: Product, budget: 1000}

members:
  - {id: bob, name: Bob, role: engineer, team: product}
  - {id: carol, name: Carol, role: engineer, team: product}
`

// FuzzUnclosedHint: any text and position; the hint never panics and names
// a place no later than the parser's.
func FuzzUnclosedHint(f *testing.F) {
	f.Add([]byte(hintWorld), 9, 15)
	f.Add([]byte("a: 'it''s\nb: {c: \"d\\\"\n"), 2, 1)
	f.Fuzz(func(t *testing.T, src []byte, line, col int) {
		l, _, hint := unclosedHint(src, line, col)
		if hint != "" && (l < 1 || l > line) {
			t.Fatalf("hint at line %d for an error at line %d: %s", l, line, hint)
		}
	})
}

// TestHintPastALaterBracket: a YAML file's [ left open is named even when
// plain text further on holds a ] (which would seem to close it): the
// whole file's brackets are weighed for JSON alone.
func TestHintPastALaterBracket(t *testing.T) {
	src := "version: 1\nname: x\nmembers:\n  - id: a\n    skills: [go, rust\n  - {id: b, role: r, team: t}\nnote: Fix [P1] outage\n"
	_, err := Load("w.yaml", []byte(src))
	if err == nil || !strings.Contains(err.Error(), "the [ opened here is not closed") {
		t.Errorf("got %v; want the [ on line 5 named", err)
	}
}

// TestNoHintForAClosedFlow: YAML written in flow style over several lines
// with a doubled comma inside: the [ is closed on the last line, and the
// mistake is where the parser stopped.
func TestNoHintForAClosedFlow(t *testing.T) {
	src := "version: 1\nname: x\nroles: [{id: r}]\nteams: [{id: t}]\nmembers: [\n  {id: a, role: r, team: t},,\n  {id: b, role: r, team: t}\n]\n"
	_, err := Load("w.yaml", []byte(src))
	if err == nil || strings.Contains(err.Error(), "opened here") || !strings.HasPrefix(err.Error(), "w.yaml:6:") {
		t.Errorf("got %v; want the parser's place on line 6, no bracket blamed", err)
	}
}

// TestNoHintWhateverTheIndent: JSON indented with tabs or not at all, and
// YAML whose flow text runs on at its line's indent, with a doubled comma
// later: no bracket is blamed, the place is where the parser stopped.
func TestNoHintWhateverTheIndent(t *testing.T) {
	for name, src := range map[string]string{ // order: each case is its own
		"tabs.json":   "{\n\t\"version\": 1,\n\t\"name\": \"x\",\n\t\"roles\": [{\"id\": \"r\"}],,\n\t\"teams\": []\n}\n",
		"flat.json":   "{\n\"version\": 1,\n\"name\": \"x\",\n\"roles\": [{\"id\": \"r\"}],,\n\"teams\": []\n}\n",
		"runson.yaml": "version: 1\nname: x\ncalendar:\n  workdays: [mon, tue,\n  wed, thu, fri]\nroles: [{id: r}]\nmembers: [\n  {id: a, role: r},,\n  {id: b, role: r}\n]\n",
	} {
		_, err := Load(name, []byte(src))
		if err == nil || strings.Contains(err.Error(), "opened here") {
			t.Errorf("%s: got %v; want the parser's place, no bracket blamed", name, err)
		}
	}
}
