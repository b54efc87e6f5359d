package worlds

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/corpsim/corpsim/clock"
)

// tinyWorld is a trimmed startup world: a valid file that the cases below
// break one mistake at a time. Line numbers in the expected errors count
// from its first line:
//
//	1 version          10 lead role        23 queues        30 projects
//	3 start            14 product team     24 backlog       37 spec
//	5 calendar         16 alice            25 approvals     38 api
//	6 hours            17 bob              28 lead step     39 servers
//	7 workdays         18 frank (NPC)      29 finance step
//	8 holidays         22 frank's reply
const tinyWorld = `version: 1
name: tiny
start: 2026-01-05T09:00:00Z
horizon: 15d
calendar:
  hours: "09:00-17:00"
  workdays: [mon, tue, wed, thu, fri]
  holidays: ["2026-01-19"]
roles:
  - {id: lead, title: Lead}
  - {id: engineer, title: Engineer}
  - {id: finance, title: Finance}
teams:
  - {id: product, name: Product, budget: 20000}
members:
  - {id: alice, name: Alice, role: lead, team: product}
  - {id: bob, name: Bob, role: engineer, team: product}
  - id: frank
    role: finance
    team: product
    npc:
      reply: {min: 1h, max: 6h}
queues:
  - {id: backlog, served_by: [lead, engineer]}
approvals:
  - id: purchases
    steps:
      - {role: lead, above: 500}
      - {role: finance, above: 5000}
projects:
  - id: mvp
    team: product
    queue: backlog
    value: 40
    deadline: 12d
    tasks:
      - {id: spec, role: lead, effort: 1d}
      - {id: api, role: engineer, effort: 3d, deps: [spec]}
      - {id: servers, role: engineer, effort: 2h, purchase: 3000, deps: [spec]}
`

// mustEdit applies replacements (old, new, old, new, …) to tinyWorld; each
// old must occur exactly once, so a case cannot silently test the unbroken file.
func mustEdit(tb testing.TB, edits ...string) []byte {
	tb.Helper()
	if len(edits)%2 != 0 {
		tb.Fatalf("mustEdit: odd number of arguments %d", len(edits))
	}
	src := tinyWorld
	for i := 0; i < len(edits); i += 2 {
		if n := strings.Count(src, edits[i]); n != 1 {
			tb.Fatalf("mustEdit: %q occurs %d times, want 1", edits[i], n)
		}
		src = strings.Replace(src, edits[i], edits[i+1], 1)
	}
	return []byte(src)
}

func mustLoad(tb testing.TB, name string, src []byte) *World {
	tb.Helper()
	w, err := Load(name, src)
	if err != nil {
		tb.Fatalf("Load(%s): %v", name, err)
	}
	return w
}

func TestLoadTinyWorld(t *testing.T) {
	w := mustLoad(t, "w.yaml", []byte(tinyWorld))
	if got, want := len(w.Projects[0].Tasks), 3; got != want {
		t.Errorf("tasks: got %d, want %d", got, want)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		edits []string // applied to tinyWorld; nil means src is the whole file
		src   string
		want  string
	}{
		// Decoding: unknown fields, wrong types, YAML syntax.
		{
			name:  "unknown top-level field",
			edits: []string{"name: tiny\n", "name: tiny\ncolour: blue\n"},
			want:  `w.yaml:3:1: colour: unknown field "colour" (expected one of version, name, description, start, horizon, dispatch, calendar, roles, teams, members, queues, approvals, projects, arrivals, interruptions, cases, separation, systems, policy, scoring, costs, message_latency, availability)`,
		},
		{
			name:  "unknown dispatch",
			edits: []string{"name: tiny\n", "name: tiny\ndispatch: some\n"},
			want:  `w.yaml:3:11: dispatch: unknown dispatch "some" (expected all or one)`,
		},
		{
			name:  "unknown field in a task",
			edits: []string{"effort: 3d, deps: [spec]}", "effort: 3d, deps: [spec], owner: bob}"},
			want:  `w.yaml:38:61: projects[0].tasks[1].owner: unknown field "owner" (expected one of id, title, role, effort, deps, value, purchase, approval, skill, priority, info)`,
		},
		{
			name:  "unknown field in a block-style task",
			edits: []string{"      - {id: spec, role: lead, effort: 1d}\n", "      - id: spec\n        role: lead\n        efort: 1d\n"},
			want:  `w.yaml:39:9: projects[0].tasks[0].efort: unknown field "efort" (expected one of id, title, role, effort, deps, value, purchase, approval, skill, priority, info)`,
		},
		{
			name:  "a task value that is not a number",
			edits: []string{"effort: 3d, deps: [spec]}", "effort: 3d, deps: [spec], value: .nan}"},
			want:  `w.yaml:38:68: projects[0].tasks[1].value: NaN is not a finite number`,
		},
		{
			name:  "string where an integer is expected",
			edits: []string{"budget: 20000", "budget: lots"},
			want:  `w.yaml:14:42: teams[0].budget: expected an integer, got a string`,
		},
		{
			name:  "integer out of range",
			edits: []string{"budget: 20000", "budget: 99999999999999999999"},
			want:  `w.yaml:14:42: teams[0].budget: number 99999999999999999999 is out of range for an integer`,
		},
		{
			name:  "mapping where a list is expected, flow style",
			edits: []string{"workdays: [mon, tue, wed, thu, fri]", "workdays: {mon: true}"},
			want:  `w.yaml:7:13: calendar.workdays: expected a list, got a mapping`,
		},
		{
			// Reported at the key, not at the first entry's ':' on the next line.
			name:  "mapping where a list is expected, block style",
			edits: []string{"teams:\n  - {id: product, name: Product, budget: 20000}\n", "teams:\n  product: {name: Product, budget: 20000}\n"},
			want:  `w.yaml:13:1: teams: expected a list, got a mapping`,
		},
		{
			name:  "duplicate key",
			edits: []string{"name: tiny\n", "name: tiny\nname: other\n"},
			want:  `w.yaml:3:1: name: duplicate key "name" (first at line 2)`,
		},
		{
			name:  "duplicate key inside a merged mapping",
			edits: []string{"    team: product\n    queue: backlog\n", "    <<: {team: product, queue: backlog, team: sales}\n"},
			want:  `w.yaml:32:41: projects[0].<<.team: duplicate key "team" (first at line 32)`,
		},
		{
			// 0 would read as no limit, the opposite of what it says.
			name: "an arrival's count of 0",
			src: `version: 1
name: t
start: 2026-01-05T09:00:00Z
horizon: 5d
roles: [{id: r}]
teams: [{id: t}]
members: [{id: m, role: r, team: t}]
queues: [{id: q, served_by: [r]}]
arrivals: [{id: a, queue: q, process: poisson, every: 1h, count: 0, ticket: {title: T, role: r, effort: 1h}}]
`,
			want: `w.yaml:9:66: arrivals[0].count: count must be at least 1, got 0 (leave it out for no limit)`,
		},
		{
			// A skill only a member of another role has is as unusable as
			// one nobody has: the task's role must do it.
			name:  "a skill no member of the task's role has",
			edits: []string{"{id: alice, name: Alice, role: lead, team: product}", "{id: alice, name: Alice, role: lead, team: product, skills: [go]}", "effort: 2h, purchase: 3000", "effort: 2h, skill: go, purchase: 3000"},
			want:  `w.yaml:39:58: projects[0].tasks[2].skill: task "servers" needs skill "go", which no member of role "engineer" has`,
		},
		{
			name: "YAML syntax error",
			src:  "version: 1\nname: [tiny\n",
			want: `w.yaml:2:7: name: YAML syntax error: sequence end token ']' not found`,
		},
		{
			name:  "YAML syntax error inside a task: the path where it can be known",
			edits: []string{"effort: 3d, deps: [spec]}", "effort: 3d, deps: [spec}"},
			want:  `w.yaml:38:58: projects[0].tasks[1]: YAML syntax error: ',' or ']' must be specified`,
		},
		{
			name:  "no workdays",
			edits: []string{"workdays: [mon, tue, wed, thu, fri]", "workdays: []"},
			want:  `w.yaml:7:13: calendar.workdays: an empty list: name the days worked (leave workdays out for the default)`,
		},
		{
			name:  "a tab in the indentation",
			edits: []string{"  - {id: bob,", "\t- {id: bob,"},
			want:  `w.yaml:17:1: members[1]: YAML syntax error: line 17 is indented with a tab, and YAML indents with spaces only`,
		},
		{
			name: "a byte that is not UTF-8",
			src:  "version: 1\nname: st\xffartup\n",
			want: `w.yaml:2:9: byte 0xff is not UTF-8: a world file is UTF-8 text`,
		},
		{
			name: "a control character",
			src:  "version: 1\nname: st\x00artup\n",
			want: `w.yaml:2:9: control character U+0000: a world file has none but tabs and line breaks`,
		},
		{
			// An escape makes a character the file does not hold: it
			// reached the member's name.
			name:  "a control character written as an escape",
			edits: []string{"{id: bob, name: Bob,", `{id: bob, name: "a\x01b",`},
			want:  `w.yaml:17:21: members[1].name: control character U+0001 from an escape: a world file has none but tabs and line breaks`,
		},
		{
			name:  "an ID with an escaped control character",
			edits: []string{"  - id: frank\n", "  - id: \"s\\u0007\"\n"},
			want:  `w.yaml:18:9: members[2].id: control character U+0007 from an escape: a world file has none but tabs and line breaks`,
		},
		{
			// The path shows the key's character as an escape, and holds none.
			name:  "a key with an escaped control character",
			edits: []string{"reply: {min: 1h, max: 6h}", `reply: {min: 1h, max: 6h}` + "\n      knows: {\"t\\x1b\": answer}"},
			want:  `w.yaml:23:15: members[2].npc.knows.t\x1b: control character U+001B from an escape: a world file has none but tabs and line breaks`,
		},
		{
			name:  "a control character in a !!binary value",
			edits: []string{"{id: lead, title: Lead}", "{id: lead, title: !!binary TAdk}"},
			want:  `w.yaml:10:23: roles[0].title: control character U+0007 in a !!binary value: a world file has none but tabs and line breaks`,
		},
		{
			name: "empty file",
			src:  "",
			want: `w.yaml: empty world file`,
		},
		{
			name: "only a comment",
			src:  "# nothing here\n",
			want: `w.yaml: empty world file`,
		},
		{
			name: "not a mapping",
			src:  "- version: 1\n",
			want: `w.yaml:1:1: a world file is a mapping of fields such as version, name and roles; got a list`,
		},
		{
			name: "two documents",
			src:  tinyWorld + "---\nversion: 1\n",
			want: `w.yaml:40:1: more than one YAML document; a world file holds one`,
		},

		// Top-level fields and the calendar.
		{
			name:  "wrong version",
			edits: []string{"version: 1", "version: 3"},
			want:  `w.yaml:1:10: version: unsupported version 3 (this corpsim reads versions 1 to 2)`,
		},
		{
			// A missing field is reported at the mapping that lacks it.
			name:  "missing version",
			edits: []string{"version: 1\n", ""},
			want:  `w.yaml:1:1: version: missing version (this corpsim reads versions 1 to 2)`,
		},
		{
			name:  "bad start instant",
			edits: []string{"start: 2026-01-05T09:00:00Z", "start: 2026-01-05 09:00"},
			want:  `w.yaml:3:8: start: expected an RFC 3339 instant such as 2026-01-05T09:00:00Z, got "2026-01-05 09:00"`,
		},
		{
			name:  "bad calendar hours",
			edits: []string{`hours: "09:00-17:00"`, `hours: "9am-5pm"`},
			want:  `w.yaml:6:10: calendar.hours: expected working hours like "09:00-17:00", got "9am-5pm"`,
		},
		{
			name:  "calendar hours end before they start",
			edits: []string{`hours: "09:00-17:00"`, `hours: "17:00-09:00"`},
			want:  `w.yaml:6:10: calendar.hours: the working day must start before it ends, got "17:00-09:00"`,
		},
		{
			// Calendar treats zero hours as the default 09:00-17:00; the file must not.
			name:  "calendar day of zero length",
			edits: []string{`hours: "09:00-17:00"`, `hours: "00:00-00:00"`},
			want:  `w.yaml:6:10: calendar.hours: the working day must start before it ends, got "00:00-00:00"`,
		},
		{
			name:  "unknown weekday",
			edits: []string{"workdays: [mon, tue, wed, thu, fri]", "workdays: [mon, tue, wed, thu, fry]"},
			want:  `w.yaml:7:34: calendar.workdays[4]: unknown weekday "fry" (expected mon, tue, wed, thu, fri, sat or sun)`,
		},
		{
			name:  "bad holiday date",
			edits: []string{`holidays: ["2026-01-19"]`, `holidays: ["2026-01-19", "2026-02-30"]`},
			want:  `w.yaml:8:28: calendar.holidays[1]: expected a date like 2026-01-19, got "2026-02-30"`,
		},

		// Durations.
		{
			name:  "duration with an unknown unit",
			edits: []string{"effort: 3d", "effort: 2x"},
			want:  `w.yaml:38:43: projects[0].tasks[1].effort: invalid duration "2x": unknown unit "x" (expected w, d, h, m, s or ms)`,
		},
		{
			name:  "duration without a unit",
			edits: []string{"horizon: 15d", "horizon: 15"},
			want:  `w.yaml:4:10: horizon: invalid duration "15": missing unit after "15" (expected w, d, h, m, s or ms)`,
		},
		{
			name:  "empty duration",
			edits: []string{"deadline: 12d", `deadline: ""`},
			want:  `w.yaml:35:15: projects[0].deadline: missing duration (for example "2h", "30m" or "3d")`,
		},
		{
			name:  "missing effort",
			edits: []string{"{id: api, role: engineer, effort: 3d,", "{id: api, role: engineer,"},
			want:  `w.yaml:38:9: projects[0].tasks[1].effort: missing duration (for example "2h", "30m" or "3d")`,
		},
		{
			name:  "zero effort",
			edits: []string{"effort: 3d", "effort: 0h"},
			want:  `w.yaml:38:43: projects[0].tasks[1].effort: must be more than zero, got "0h"`,
		},
		{
			// A zero horizon used to load and end every session at time 0.
			name:  "zero horizon",
			edits: []string{"horizon: 15d", "horizon: 0d"},
			want:  `w.yaml:4:10: horizon: must be more than zero, got "0d"`,
		},
		{
			name:  "NPC reply max below min",
			edits: []string{"{min: 1h, max: 6h}", "{min: 6h, max: 1h}"},
			want:  `w.yaml:22:29: members[2].npc.reply.max: max (1h) is less than min (6h)`,
		},

		// Identifiers.
		{
			name:  "duplicate member id",
			edits: []string{"{id: bob, name: Bob", "{id: alice, name: Bob"},
			want:  `w.yaml:17:10: members[1].id: duplicate member id "alice" (first defined at members[0].id)`,
		},
		{
			name:  "duplicate task id",
			edits: []string{"{id: servers,", "{id: api,"},
			want:  `w.yaml:39:14: projects[0].tasks[2].id: duplicate task id "api" (first defined at projects[0].tasks[1].id)`,
		},
		{
			name:  "invalid id characters",
			edits: []string{"{id: bob, name: Bob", "{id: Bob!, name: Bob"},
			want:  `w.yaml:17:10: members[1].id: invalid member id "Bob!": use lower-case letters, digits, '-' and '_'`,
		},

		// Dangling references.
		{
			name:  "task dependency",
			edits: []string{"effort: 3d, deps: [spec]}", "effort: 3d, deps: [spce]}"},
			want:  `w.yaml:38:54: projects[0].tasks[1].deps[0]: unknown task "spce" (defined: api, servers, spec)`,
		},
		{
			name:  "member team",
			edits: []string{"role: engineer, team: product}", "role: engineer, team: prod}"},
			want:  `w.yaml:17:48: members[1].team: unknown team "prod" (defined: product)`,
		},
		{
			// bob was the only engineer: the tasks that need one say so too.
			name:  "member role",
			edits: []string{"role: engineer, team: product}", "role: engneer, team: product}"},
			want: `w.yaml:17:32: members[1].role: unknown role "engneer" (defined: engineer, finance, lead)
w.yaml:38:25: projects[0].tasks[1].role: task "api" needs role "engineer", which no agent seat holds
w.yaml:39:29: projects[0].tasks[2].role: task "servers" needs role "engineer", which no agent seat holds`,
		},
		{
			name:  "project queue",
			edits: []string{"queue: backlog", "queue: frontlog"},
			want:  `w.yaml:33:12: projects[0].queue: unknown queue "frontlog" (defined: backlog)`,
		},
		{
			name:  "project team",
			edits: []string{"    team: product\n    queue", "    team: sales\n    queue"},
			want:  `w.yaml:32:11: projects[0].team: unknown team "sales" (defined: product)`,
		},
		{
			name:  "queue served_by role",
			edits: []string{"served_by: [lead, engineer]", "served_by: [lead, enginer]"},
			want: `w.yaml:24:37: queues[0].served_by[1]: unknown role "enginer" (defined: engineer, finance, lead)
w.yaml:38:25: projects[0].tasks[1].role: task "api" needs role "engineer", which does not serve queue "backlog"
w.yaml:39:29: projects[0].tasks[2].role: task "servers" needs role "engineer", which does not serve queue "backlog"`,
		},
		{
			name:  "approval step role",
			edits: []string{"{role: finance, above: 5000}", "{role: cfo, above: 5000}"},
			want:  `w.yaml:29:16: approvals[0].steps[1].role: unknown role "cfo" (defined: engineer, finance, lead)`,
		},
		{
			name:  "task approval chain",
			edits: []string{"purchase: 3000,", "purchase: 3000, approval: purchse,"},
			want:  `w.yaml:39:77: projects[0].tasks[2].approval: unknown approval chain "purchse" (defined: purchases)`,
		},

		// The task graph.
		{
			name: "dependency cycle of three tasks",
			edits: []string{
				"{id: spec, role: lead, effort: 1d}", "{id: spec, role: lead, effort: 1d, deps: [servers]}",
				"purchase: 3000, deps: [spec]}", "purchase: 3000, deps: [api]}",
			},
			want: `w.yaml:38:54: projects[0].tasks[1].deps[0]: dependency cycle: spec -> servers -> api -> spec`,
		},
		{
			// Reported once, not also as a cycle api -> api.
			name:  "self dependency",
			edits: []string{"effort: 3d, deps: [spec]}", "effort: 3d, deps: [spec, api]}"},
			want:  `w.yaml:38:60: projects[0].tasks[1].deps[1]: task "api" depends on itself`,
		},

		// Roles nobody can play.
		{
			name: "approval chain naming a role nobody holds",
			edits: []string{
				"  - {id: finance, title: Finance}\n", "  - {id: finance, title: Finance}\n  - {id: cfo, title: CFO}\n",
				"{role: finance, above: 5000}", "{role: cfo, above: 5000}",
			},
			want: `w.yaml:30:16: approvals[0].steps[1].role: approval chain "purchases" names role "cfo", which no member holds`,
		},
		{
			// frank holds finance, but NPCs take no work from queues.
			name:  "queue nobody serves",
			edits: []string{"queues:\n", "queues:\n  - {id: ops, served_by: [finance]}\n"},
			want:  `w.yaml:24:26: queues[0].served_by: nobody serves queue "ops": no agent seat holds any of the roles finance`,
		},
		{
			// A task whose role does not serve its project's queue can never be claimed.
			name:  "task role does not serve the project's queue",
			edits: []string{"served_by: [lead, engineer]", "served_by: [lead]"},
			want: `w.yaml:38:25: projects[0].tasks[1].role: task "api" needs role "engineer", which does not serve queue "backlog"
w.yaml:39:29: projects[0].tasks[2].role: task "servers" needs role "engineer", which does not serve queue "backlog"`,
		},

		// Purchases.
		{
			name:  "purchase without a chain when there are two chains",
			edits: []string{"projects:\n", "  - id: travel\n    steps: [{role: lead, above: 0}]\nprojects:\n"},
			want:  `w.yaml:41:9: projects[0].tasks[2].approval: task "servers" makes a purchase: name its approval chain`,
		},
		{
			name:  "approval chain without a purchase",
			edits: []string{"{id: api, role: engineer, effort: 3d,", "{id: api, role: engineer, effort: 3d, approval: purchases,"},
			want:  `w.yaml:38:57: projects[0].tasks[1].approval: task "api" names an approval chain but makes no purchase`,
		},

		// JSON is read as the same schema, with positions.
		{
			name: "JSON with a dangling reference",
			src: `{"version": 1, "name": "j", "start": "2026-01-05T09:00:00Z", "horizon": "5d",
 "roles": [{"id": "eng"}], "teams": [{"id": "t"}],
 "members": [{"id": "bob", "role": "eng", "team": "tteam"}]}`,
			want: `w.yaml:3:51: members[0].team: unknown team "tteam" (defined: t)`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := []byte(tt.src)
			if tt.edits != nil {
				src = mustEdit(t, tt.edits...)
			}
			w, err := Load("w.yaml", src)
			if err == nil {
				t.Fatalf("Load: got world %q and no error, want %s", w.Name, tt.want)
			}
			if w != nil {
				t.Errorf("Load: got a world with the error, want nil")
			}
			var list ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("Load: got error %T %v, want a non-empty ErrorList", err, err)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("Load error:\ngot  %s\nwant %s", got, tt.want)
			}
			// Read a part at a time (as a large file is), the same file
			// gives the same errors.
			if _, err := load("w.yaml", src, 1, Limits{}, nil); err == nil || err.Error() != tt.want {
				t.Errorf("load in parts: got error %v, want %s", err, tt.want)
			}
		})
	}
}

func TestErrorString(t *testing.T) {
	tests := []struct {
		name string
		err  *Error
		want string
	}{
		{"everything", &Error{File: "a.yaml", Line: 3, Column: 7, Path: "teams[0].budget", Msg: "bad"}, "a.yaml:3:7: teams[0].budget: bad"},
		{"no position", &Error{File: "a.yaml", Path: "start", Msg: "bad"}, "a.yaml: start: bad"},
		{"no path", &Error{File: "a.yaml", Line: 1, Column: 1, Msg: "bad"}, "a.yaml:1:1: bad"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLoadJSON(t *testing.T) {
	src := []byte(`{
  "version": 1,
  "name": "json-world",
  "start": "2026-01-05T09:00:00Z",
  "horizon": "5d",
  "calendar": {"hours": "08:00-16:00", "workdays": ["mon", "tue", "wed", "thu", "fri"]},
  "roles": [{"id": "eng", "title": "Engineer"}, {"id": "lead"}],
  "teams": [{"id": "core", "name": "Core", "budget": 1000}],
  "members": [
    {"id": "bob", "role": "eng", "team": "core"},
    {"id": "ann", "role": "lead", "team": "core", "npc": {"reply": {"min": "30m", "max": "2h"}}}
  ],
  "queues": [{"id": "q", "served_by": ["eng"]}],
  "approvals": [{"id": "spend", "steps": [{"role": "lead", "above": 100}]}],
  "projects": [{
    "id": "p", "team": "core", "queue": "q", "value": 5, "deadline": "3d",
    "tasks": [
      {"id": "a", "role": "eng", "effort": "1d"},
      {"id": "b", "role": "eng", "effort": "2h", "deps": ["a"], "purchase": 200}
    ]
  }],
  "scoring": {"late_half_life": "2d", "violation_penalty": 0.5}
}`)
	w := mustLoad(t, "w.json", src)
	checks := []struct {
		name      string
		got, want any
	}{
		{"name", w.Name, "json-world"},
		{"file", w.File, "w.json"},
		{"day length", w.Calendar.DayLength(), 8 * clock.Hour},
		{"members (sorted by id)", w.Members[0].ID + "," + w.Members[1].ID, "ann,bob"},
		{"npc reply max", w.Members[0].NPC.ReplyMax, 2 * clock.Hour},
		{"task b deps", strings.Join(w.Projects[0].Tasks[1].Deps, ","), "a"},
		{"task b chain (the only one)", w.Projects[0].Tasks[1].Chain, "spend"},
		{"task a default value (effort in hours)", w.Projects[0].Tasks[0].Value, 8.0},
		{"late half life", w.Scoring.LateHalfLife, 16 * clock.Hour},
		{"violation penalty", w.Scoring.ViolationPenalty, 0.5},
		// 3d of 8h from Monday 09:00 with hours 08:00-16:00: 7h + 8h + 8h + 1h.
		{"deadline wall", w.Calendar.Wall(w.Projects[0].Deadline).Format(time.RFC3339), "2026-01-08T09:00:00Z"},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Errorf("got %v, want %v", c.got, c.want)
			}
		})
	}
}

// TestPurchaseAboveBudget: a purchase larger than its team's whole budget
// can never be paid (within-budget refuses its completion): a warning
// naming the task's field, not a mistake (a world may mean it, to test
// the rule); one within the budget warns nothing.
func TestPurchaseAboveBudget(t *testing.T) {
	w := mustLoad(t, "w.yaml", mustEdit(t, "budget: 20000", "budget: 2500"))
	want := `w.yaml:39:61: projects[0].tasks[2].purchase: task "servers" buys for 3000, more than team product's whole budget (2500)`
	if len(w.Warnings) != 1 || !strings.HasPrefix(w.Warnings.Error(), want) {
		t.Errorf("warnings %v; want one beginning %s", w.Warnings, want)
	}
	if w := mustLoad(t, "w.yaml", mustEdit(t, "budget: 20000", "budget: 3000")); len(w.Warnings) != 0 {
		t.Errorf("a purchase of the whole budget: warnings %v; want none", w.Warnings)
	}
}

// TestJSONSyntaxError: a JSON world's syntax error is called one (the
// file is read by the YAML parser, which its writer need not know), with
// the place and hint a YAML file's gets; a YAML file's is still YAML's.
func TestJSONSyntaxError(t *testing.T) {
	src := []byte("{\n  \"version\": 1,\n  \"name\": \"j\",\n  \"roles\": [{\"id\": \"eng\"}\n}\n")
	// Every bracket closed, a comma doubled: the mistake is where the
	// parser stopped, not at the { before it, which is always open in JSON.
	doubled := []byte("{\n  \"version\": 1,\n  \"name\": \"j\",\n  \"roles\": [{\"id\": \"eng\"}],,\n  \"teams\": []\n}\n")
	for _, c := range []struct {
		name, want string
		comma      bool
	}{
		{"w.json", `w.json:4:12: JSON syntax error: the [ opened here is not closed (a missing ]?)`, false},
		{"W.JSON", `W.JSON:4:12: JSON syntax error: the [ opened here is not closed (a missing ]?)`, false},
		{"w.yaml", `w.yaml:4:12: YAML syntax error: the [ opened here is not closed (a missing ]?)`, false},
		{"w.json", `w.json:4:28: JSON syntax error: could not find flow map content`, true},
		// JSON sent as a create request's source is named request.yaml:
		// the file's brackets decide, not its name.
		{"request.yaml", `request.yaml:4:28: YAML syntax error: could not find flow map content`, true},
	} {
		src := src
		if c.comma {
			src = doubled
		}
		for parts, read := range map[string]func() error{
			"whole":    func() error { _, err := Load(c.name, src); return err },
			"in parts": func() error { _, err := load(c.name, src, 1, Limits{}, nil); return err },
		} {
			err := read()
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("%s, %s: got %v, want it to begin %s", c.name, parts, err, c.want)
			}
		}
	}
}

func TestLoadStartup(t *testing.T) {
	w, err := Shipped("startup")
	if err != nil {
		t.Fatalf("Shipped(startup): %v", err)
	}
	wall := func(ct clock.Time) string { return w.Calendar.Wall(ct).Format(time.RFC3339) }
	npcs := 0
	for _, m := range w.Members {
		if m.NPC != nil {
			npcs++
		}
	}
	var memberIDs []string
	for _, m := range w.Members {
		memberIDs = append(memberIDs, m.ID)
	}
	chain, _ := w.Chain("purchases")
	checks := []struct {
		name      string
		got, want any
	}{
		{"file", w.File, "startup.yaml"},
		{"roles", len(w.Roles), 4},
		{"teams", len(w.Teams), 1},
		{"budget", w.Teams[0].Budget, int64(20000)},
		{"members", len(w.Members), 6},
		{"member order", strings.Join(memberIDs, ","), "alice,bob,carol,dave,erin,frank"},
		{"npcs", npcs, 1},
		{"queues", len(w.Queues), 1},
		{"chains", len(w.Approvals), 1},
		{"chain steps", len(chain.Steps), 2},
		{"steps for 3000", len(chain.StepsFor(3000)), 1},
		{"steps for 8000", len(chain.StepsFor(8000)), 2},
		{"projects", len(w.Projects), 1},
		{"tasks", len(w.Projects[0].Tasks), 14},
		{"holidays", strings.Join(w.Calendar.Holidays, ","), "2026-01-19"},
		// 15 working days from Monday 5 January, skipping the 19th.
		{"horizon", wall(w.Horizon), "2026-01-26T17:00:00Z"},
		{"deadline", wall(w.Projects[0].Deadline), "2026-01-21T17:00:00Z"},
		{"design-ux default value", w.Projects[0].Tasks[1].Value, 16.0},
		{"build-servers chain", w.Projects[0].Tasks[4].Chain, "purchases"},
		{"late half life", w.Scoring.LateHalfLife, 40 * clock.Hour},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Errorf("got %v, want %v", c.got, c.want)
			}
		})
	}
}

func TestNamesAndShipped(t *testing.T) {
	names := Names()
	if len(names) == 0 {
		t.Fatalf("Names: got none, want at least startup")
	}
	for _, n := range names {
		t.Run(n, func(t *testing.T) {
			if _, err := Shipped(n); err != nil {
				t.Errorf("Shipped(%q): got %v, want nil", n, err)
			}
		})
	}
	if _, err := Shipped("no-such-world"); err == nil || !strings.Contains(err.Error(), "startup") {
		t.Errorf("Shipped(no-such-world): got %v, want an error listing the shipped worlds", err)
	}
}

// TestLoadMergeKeys checks that YAML merge keys work, and that an explicit
// key overrides a merged one instead of counting as a duplicate.
func TestLoadMergeKeys(t *testing.T) {
	src := tinyWorld + `  - id: ops
    <<: {team: product, queue: backlog, deadline: 1d}
    tasks:
      - &chore {id: chore-1, role: engineer, effort: 1h}
      - <<: *chore
        id: chore-2
        effort: 2h
`
	w := mustLoad(t, "w.yaml", []byte(src))
	p := w.Projects[1]
	checks := []struct {
		name      string
		got, want any
	}{
		{"merged team", p.Team, "product"},
		{"merged queue", p.Queue, "backlog"},
		{"overridden id", p.Tasks[1].ID, "chore-2"},
		{"overridden effort", p.Tasks[1].Effort, 2 * clock.Hour},
		{"merged role", p.Tasks[1].Role, "engineer"},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Errorf("got %v, want %v", c.got, c.want)
			}
		})
	}
}

// aliasBomb returns tinyWorld with k projects of k tasks with k deps each,
// written with aliases in about 30*k bytes.
func aliasBomb(k int) []byte {
	var b strings.Builder
	head, _, _ := strings.Cut(tinyWorld, "projects:\n")
	b.WriteString(head)
	b.WriteString("projects:\n  - &p\n    id: p\n    team: product\n    queue: backlog\n    deadline: 1d\n    tasks:\n")
	b.WriteString("      - &t {id: t, role: lead, effort: 1h, deps: [")
	for i := range k {
		fmt.Fprintf(&b, "x%d, ", i)
	}
	b.WriteString("]}\n")
	b.WriteString(strings.Repeat("      - *t\n", k-1))
	b.WriteString(strings.Repeat("  - *p\n", k-1))
	return []byte(b.String())
}

// TestLoadAliasBomb: nested aliases must not expand a small file into
// millions of nodes (and errors). Without the bound, k=80 took seconds and
// reported half a million errors; the time grows as k³.
func TestLoadAliasBomb(t *testing.T) {
	src := aliasBomb(80)
	_, err := Load("w.yaml", src)
	// The task aliases add about 7,500 nodes; the first project alias crosses the bound.
	want := "w.yaml:117:5: aliases expand the file by more than 10000 nodes; use them to share small parts only"
	if err == nil || err.Error() != want {
		t.Fatalf("Load of a %d-byte alias bomb:\ngot  %v\nwant %s", len(src), err, want)
	}
}

func TestLoadHash(t *testing.T) {
	src := mustEdit(t)
	w1 := mustLoad(t, "w.yaml", src)
	w2 := mustLoad(t, "other-name.yaml", src)
	sum := sha256.Sum256(src)
	if want := hex.EncodeToString(sum[:]); w1.Hash != want {
		t.Errorf("Hash: got %s, want %s", w1.Hash, want)
	}
	if w1.Hash != w2.Hash {
		t.Errorf("Hash of the same bytes under two names: got %s and %s, want equal", w1.Hash, w2.Hash)
	}
	tests := []struct {
		name  string
		edits []string
	}{
		{"comment added", []string{"name: tiny\n", "name: tiny # still tiny\n"}},
		{"value changed", []string{"budget: 20000", "budget: 20001"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := mustLoad(t, "w.yaml", mustEdit(t, tt.edits...))
			if w.Hash == w1.Hash {
				t.Errorf("Hash: got %s for an edited file, want it to differ from the original's", w.Hash)
			}
		})
	}
}

// The escapes of the characters a world file may hold, tabs and line
// breaks, are taken, as those characters written out are; and a recorded
// world (Limits.Recorded) reads as it did when it was recorded, whatever
// its escapes make.
func TestLoadEscapes(t *testing.T) {
	w := mustLoad(t, "w.yaml", mustEdit(t, "name: tiny", `name: "t\ti\r\nny"`))
	if w.Name != "t\ti\r\nny" {
		t.Errorf("name: got %q, want %q", w.Name, "t\ti\r\nny")
	}
	src := mustEdit(t, "{id: bob, name: Bob,", `{id: bob, name: "a\x01b",`)
	w, err := LoadLimited("w.yaml", src, Limits{Recorded: true})
	if err != nil {
		t.Fatalf("a recorded world: %v", err)
	}
	if m, _ := w.Member("bob"); m.Name != "a\x01b" {
		t.Errorf("a recorded world's name: got %q, want %q", m.Name, "a\x01b")
	}
}

// FuzzLoad feeds Load arbitrary bytes: it must never panic, and must return
// either a world or a non-empty ErrorList whose errors all name the file.
// Seeds live in testdata/fuzz/FuzzLoad.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(tinyWorld))
	f.Fuzz(func(t *testing.T, src []byte) {
		w, err := Load("fuzz.yaml", src)
		if err == nil {
			if w == nil {
				t.Fatalf("Load: got nil world and nil error")
			}
			if w.File != "fuzz.yaml" || w.Hash == "" {
				t.Fatalf("Load: got File %q Hash %q, want fuzz.yaml and a hash", w.File, w.Hash)
			}
			return
		}
		if w != nil {
			t.Fatalf("Load: got a world and error %v, want one or the other", err)
		}
		var list ErrorList
		if !errors.As(err, &list) {
			t.Fatalf("Load: got error %T %v, want an ErrorList", err, err)
		}
		if len(list) == 0 {
			t.Fatalf("Load: got an empty ErrorList")
		}
		for i, e := range list {
			if e == nil || e.File != "fuzz.yaml" {
				t.Fatalf("Load: error %d is %#v, want File fuzz.yaml", i, e)
			}
			if e.Msg == "" {
				t.Fatalf("Load: error %d has no message: %s", i, e)
			}
		}
	})
}

// Every unknown field and every value of the wrong type is reported, in
// the file's order, not only the first (the YAML library stops at the
// first); a list entry of the wrong type keeps the index of the entries
// after it.
func TestLoadReportsEveryDecodeMistake(t *testing.T) {
	src := mustEdit(t,
		"{id: engineer, title: Engineer}", "{id: engineer, titel: Engineer}",
		"budget: 20000}", "budget: lots}",
		"{id: bob, name: Bob, role: engineer, team: product}", "{id: bob, name: Bob, role: engineer, team: product, colour: red}",
		"      - {id: api, role: engineer, effort: 3d, deps: [spec]}", "      - oops\n      - {id: api, role: engineer, effort: 3d, deps: [spec], wibble: 1}",
	)
	_, err := Load("w.yaml", src)
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("Load: %v; want an ErrorList", err)
	}
	want := []string{
		"w.yaml:11:20: roles[1].titel: unknown field",
		"w.yaml:14:42: teams[0].budget: expected an integer, got a string",
		"w.yaml:17:57: members[1].colour: unknown field",
		"w.yaml:38:9: projects[0].tasks[1]: expected",
		"w.yaml:39:",
	}
	if len(list) != len(want) {
		t.Fatalf("got %d mistakes, want %d:\n%v", len(list), len(want), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(list[i].Error(), w) {
			t.Errorf("mistake %d: %s\nwant it to begin %q", i, list[i], w)
		}
	}
	if !strings.Contains(list[4].Error(), "projects[0].tasks[2].wibble: unknown field") {
		t.Errorf("the entry after the one of the wrong type: %s; want tasks[2] named (its index kept)", list[4])
	}
}

// TestRecordedWorldsSkipNewChecks: a world read back from a session's log
// (Limits.Recorded) is read as it was when the session began: the checks
// added since — a skill no member of the role has (on a task, a ticket or
// a case step), an arrival's count of 0 (no limit then) — refuse it only
// as a new world.
func TestRecordedWorldsSkipNewChecks(t *testing.T) {
	src := []byte(`version: 2
name: old
start: 2026-01-05T09:00:00Z
horizon: 5d
roles: [{id: eng}]
teams: [{id: t}]
members: [{id: bob, role: eng, team: t}]
queues: [{id: q, served_by: [eng]}]
projects:
  - {id: p, team: t, queue: q, deadline: 3d, tasks: [{id: a, role: eng, effort: 1h, skill: rust}]}
arrivals:
  - {id: n, queue: q, process: poisson, every: 1h, count: 0, ticket: {title: T, role: eng, effort: 1h, skill: rust}}
`)
	_, err := Load("w.yaml", src)
	for _, want := range []string{`projects[0].tasks[0].skill: task "a" needs skill "rust"`, `arrivals[0].ticket.skill: ticket "T" needs skill "rust"`, "arrivals[0].count: count must be at least 1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("a new world: %v; want %s", err, want)
		}
	}
	w, err := LoadLimited("w.yaml", src, Limits{Recorded: true})
	if err != nil {
		t.Fatalf("the same world read back from a log: %v", err)
	}
	if w.Arrivals[0].Count != 0 {
		t.Errorf("count 0 read back as %d; want 0 (no limit)", w.Arrivals[0].Count)
	}
}

// TestLoadSkipsAByteOrderMark: a file an editor began with a byte order
// mark is the same world (the mark was read as the first key's first
// character: unknown field "\ufeffversion").
func TestLoadSkipsAByteOrderMark(t *testing.T) {
	plain := mustLoad(t, "w.yaml", []byte(tinyWorld))
	marked := mustLoad(t, "w.yaml", append([]byte("\ufeff"), tinyWorld...))
	if marked.Name != plain.Name || marked.Hash != plain.Hash {
		t.Fatalf("with a byte order mark: %q %s, without: %q %s", marked.Name, marked.Hash, plain.Name, plain.Hash)
	}
}
