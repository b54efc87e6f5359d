package worlds

import (
	"strings"
	"testing"

	"github.com/corpsim/corpsim/clock"
)

// caseWorld is a small valid version 2 world with one case template and
// separation rules; the cases below break it one mistake at a time. Its
// lines, for reading the expected positions:
//
//	20 the payouts chain      34 open              40 pay
//	21 cases                  35 steps             41 separation
//	23 title                  36 intake            42 assessor rule
//	26 sla                    37 inspect (NPC)     43 four-eyes rule
//	27 priority               38 assess            45 the arrival
//	29-31 attributes, 33 fact 39 decide
const caseWorld = `version: 2
name: cw
start: 2026-01-05T09:00:00Z
horizon: 5d
roles:
  - {id: handler}
  - {id: senior}
  - {id: inspector}
members:
  - {id: hana, role: handler, team: t}
  - {id: ivan, role: handler, team: t}
  - {id: sara, role: senior, team: t}
  - {id: olga, role: inspector, team: t, npc: {reply: {min: 1h, max: 2h}}}
teams:
  - {id: t, budget: 100000}
queues:
  - {id: q, served_by: [handler, senior]}
  - {id: q2, served_by: [handler]}
approvals:
  - {id: payouts, attribute: amount, steps: [{role: senior, above: 1000}]}
cases:
  - id: claim
    title: "Claim {{.ref}}"
    queue: q
    deadline: 3d
    sla: {1: 2d, 2: 1d}
    priority: {1: 3, 2: 1}
    attributes:
      amount: {amount: {min: 100, max: 5000}}
      line: {one_of: {motor: 2, home: 1}}
      ref: {text: "C-{{.case}}"}
    facts:
      damage: {one_of: [found, none]}
    open: {roles: [handler], quota: 2, bounds: {amount: {min: 100, max: 4000}}}
    steps:
      - {id: intake, role: handler, effort: 1h}
      - {id: inspect, npc: olga, when: amount > 2000, deps: [intake], answer: "Damage {{.damage}} on {{.ref}}"}
      - {id: assess, role: handler, effort: 1h, deps: [inspect], role_by: {attribute: line, map: {home: senior}}}
      - {id: decide, role: handler, effort: 30m, deps: [assess], approval: payouts}
      - {id: pay, role: handler, effort: 15m, deps: [decide], charge: amount}
separation:
  - {id: assessor, template: claim, did: [assess], not_do: [decide], not_approve: [decide]}
  - {id: four-eyes, template: claim, distinct: [intake, pay]}
arrivals:
  - {id: a, case: claim, process: poisson, every: 2h}
`

// caseEdit applies replacements (old, new, …) to caseWorld; each old must
// occur exactly once.
func caseEdit(tb testing.TB, edits ...string) []byte {
	tb.Helper()
	src := caseWorld
	for i := 0; i+1 < len(edits); i += 2 {
		if n := strings.Count(src, edits[i]); n != 1 {
			tb.Fatalf("caseEdit: %q occurs %d times, want 1", edits[i], n)
		}
		src = strings.Replace(src, edits[i], edits[i+1], 1)
	}
	return []byte(src)
}

func TestLoadCaseWorld(t *testing.T) {
	w := mustLoad(t, "w.yaml", []byte(caseWorld))
	mustSameLoad(t, []byte(caseWorld))
	c, ok := w.CaseTemplate("claim")
	if !ok {
		t.Fatal("no template claim")
	}
	var steps []string
	for _, s := range c.Steps {
		steps = append(steps, s.ID)
	}
	if got, want := strings.Join(steps, ","), "intake,inspect,assess,decide,pay"; got != want {
		t.Errorf("steps: got %s, want %s", got, want)
	}
	inspect, _ := c.Step("inspect")
	if inspect.NPC != "olga" || inspect.Role != "inspector" || inspect.When == nil || inspect.Answer == nil {
		t.Errorf("inspect: got %+v, want olga's, as inspector, conditional, with an answer", inspect)
	}
	if inspect.When.Bool(map[string]any{"amount": 2500}) != true || inspect.When.Bool(map[string]any{"amount": 2000}) != false {
		t.Errorf("inspect's condition amount > 2000 misjudges 2500 or 2000")
	}
	if got := c.SLAFor(2); got != 8*clock.Hour { // a working day
		t.Errorf("SLAFor(2): got %s, want 1d", got)
	}
	if b := c.Open.Bounds["amount"]; b.Min != 100 || b.Max != 4000 || c.Open.Quota != 2 {
		t.Errorf("open: got %+v, want amount in [100, 4000], quota 2", c.Open)
	}
	if pay, _ := c.Step("pay"); pay.Charge != "amount" {
		t.Errorf("pay charges %q, want amount", pay.Charge)
	}
	if a, ok := c.Attr("damage"); !ok || a.Kind != AttrChoice {
		t.Errorf("fact damage: got %+v", a)
	}
	if len(w.Separation) != 2 || w.Arrivals[0].Case != "claim" {
		t.Errorf("separation %+v, arrival %+v", w.Separation, w.Arrivals[0])
	}
	// A priority the expression computes (not one of integers written in
	// it) is tried on the attributes' edges and middles: those must be in
	// the SLA map (below, TestLoadCaseErrors); others cannot be known.
	mustLoad(t, "w.yaml", caseEdit(t, "priority: {1: 3, 2: 1}", `priority: "amount % 2 + 1"`))
}

func TestLoadCaseErrors(t *testing.T) {
	tests := []struct {
		name  string
		edits []string
		want  string
	}{
		// Version.
		{"cases in a version 1 file", []string{"version: 2", "version: 1"}, `w.yaml:20:30: approvals[0].attribute: an approval chain reading an attribute needs version: 2 (this file declares version 1)
w.yaml:21:1: cases: cases needs version: 2 (this file declares version 1)
w.yaml:41:1: separation: separation rules needs version: 2 (this file declares version 1)
w.yaml:45:19: arrivals[0].case: an arrival opening cases needs version: 2 (this file declares version 1)`},
		// Conditions, priorities and text templates.
		{"a condition naming an unknown attribute", []string{"when: amount > 2000", "when: amont > 2000"}, `w.yaml:37:40: cases[0].steps[1].when: bad expression "amont > 2000": unknown name amont (1:1) (it may use the attributes amount, line, ref)`},
		{"a condition naming a fact", []string{"when: amount > 2000", `when: damage == "found"`}, `w.yaml:37:40: cases[0].steps[1].when: bad expression "damage == \"found\"": unknown name damage (1:1) (it may use the attributes amount, line, ref)`},
		{"a condition that is not boolean", []string{"when: amount > 2000", "when: amount + 1"}, `w.yaml:37:40: cases[0].steps[1].when: bad expression "amount + 1": expected bool, but got int`},
		{"a priority expression that is not an integer", []string{"priority: {1: 3, 2: 1}", `priority: "amount > 10 ? 'high' : 'low'"`}, `w.yaml:27:15: cases[0].priority: bad expression "amount > 10 ? 'high' : 'low'": expected int, but got string`},
		{"a priority expression naming an unknown attribute", []string{"priority: {1: 3, 2: 1}", `priority: "size > 10 ? 2 : 1"`}, `w.yaml:27:15: cases[0].priority: bad expression "size > 10 ? 2 : 1": unknown name size (1:1) (it may use the attributes amount, line, ref)`},
		{"a title naming an unknown attribute", []string{`title: "Claim {{.ref}}"`, `title: "Claim {{.reference}}"`}, `w.yaml:23:12: cases[0].title: bad text template "Claim {{.reference}}": map has no entry for key "reference" (it may use {{.case}}, {{.amount}}, {{.line}}, {{.ref}})`},
		{"a title naming a fact", []string{`title: "Claim {{.ref}}"`, `title: "Claim {{.damage}}"`}, `w.yaml:23:12: cases[0].title: bad text template "Claim {{.damage}}": map has no entry for key "damage" (it may use {{.case}}, {{.amount}}, {{.line}}, {{.ref}})`},
		{"a text attribute naming an unknown attribute", []string{`ref: {text: "C-{{.case}}"}`, `ref: {text: "C-{{.cse}}"}`}, `w.yaml:31:19: cases[0].attributes.ref.text: bad text template "C-{{.cse}}": map has no entry for key "cse" (it may use {{.case}}, {{.amount}}, {{.line}})`},
		{"a text attribute naming another text attribute", []string{`ref: {text: "C-{{.case}}"}`, `ref: {text: "C-{{.case}}"}` + "\n      zref: {text: \"Z-{{.ref}}\"}"},
			`w.yaml:32:20: cases[0].attributes.zref.text: bad text template "Z-{{.ref}}": map has no entry for key "ref" (it may use {{.case}}, {{.amount}}, {{.line}})`},
		{"a text fact naming another text fact", []string{"damage: {one_of: [found, none]}", "damage: {one_of: [found, none]}\n      note: {text: \"{{.seen}}\"}\n      seen: {text: \"{{.ref}} seen\"}"},
			`w.yaml:34:20: cases[0].facts.note.text: bad text template "{{.seen}}": map has no entry for key "seen" (it may use {{.case}}, {{.amount}}, {{.line}}, {{.ref}}, {{.damage}})`},
		{"an answer naming an unknown attribute", []string{`answer: "Damage {{.damage}} on {{.ref}}"`, `answer: "Damage {{.dmg}}"`}, `w.yaml:37:79: cases[0].steps[1].answer: bad text template "Damage {{.dmg}}": map has no entry for key "dmg" (it may use {{.case}}, {{.amount}}, {{.line}}, {{.ref}}, {{.damage}})`},
		{"a text template that does not parse", []string{`title: "Claim {{.ref}}"`, `title: "Claim {{.ref"`}, `w.yaml:23:12: cases[0].title: bad text template "Claim {{.ref": unclosed action (it may use {{.case}}, {{.amount}}, {{.line}}, {{.ref}})`},
		// Attribute kinds.
		{"an unknown attribute kind", []string{"line: {one_of: {motor: 2, home: 1}}", "line: {choice: [motor, home]}"}, `w.yaml:30:14: cases[0].attributes.line.choice: unknown field "choice" (expected one of amount, one_of, text, record, held_by, answer)`},
		// Its use is reported too: the attribute cannot be kept without a kind.
		{"an attribute of no kind", []string{"line: {one_of: {motor: 2, home: 1}}", "line: {}"}, `w.yaml:30:13: cases[0].attributes.line: give exactly one of amount, one_of, text and record
w.yaml:38:87: cases[0].steps[2].role_by.attribute: unknown attribute "line"`},
		{"an attribute of two kinds", []string{"line: {one_of: {motor: 2, home: 1}}", "line: {one_of: [motor, home], text: motor}"}, `w.yaml:30:13: cases[0].attributes.line: give exactly one of amount, one_of, text and record`},
		{"a fact that repeats an attribute", []string{"damage: {one_of: [found, none]}", "damage: {one_of: [found, none]}\n      line: {text: x}"}, `w.yaml:34:13: cases[0].facts.line: "line" is already an attribute of this template`},
		{"a category with a negative weight", []string{"line: {one_of: {motor: 2, home: 1}}", "line: {one_of: {motor: -2, home: 1}}"}, `w.yaml:30:30: cases[0].attributes.line.one_of.motor: weights must not be negative, got -2`},
		{"a category without weight", []string{"line: {one_of: {motor: 2, home: 1}}", "line: {one_of: {motor: 0, home: 0}}"}, `w.yaml:30:22: cases[0].attributes.line.one_of: needs at least one value with a positive weight`},
		// Routing.
		{"routing by an unknown attribute", []string{"role_by: {attribute: line,", "role_by: {attribute: kind,"}, `w.yaml:38:87: cases[0].steps[2].role_by.attribute: unknown attribute "kind"`},
		{"routing by an amount attribute", []string{"role_by: {attribute: line, map: {home: senior}}", "role_by: {attribute: amount, map: {\"5\": senior}}"}, `w.yaml:38:87: cases[0].steps[2].role_by.attribute: route by a one_of attribute; "amount" is an amount attribute`},
		{"routing to an unknown role", []string{"map: {home: senior}", "map: {home: seniors}"}, `w.yaml:38:105: cases[0].steps[2].role_by.map.home: unknown role "seniors" (defined: handler, inspector, senior)`},
		{"routing by a value not in the category", []string{"map: {home: senior}", "map: {house: senior}"}, `w.yaml:38:106: cases[0].steps[2].role_by.map.house: "house" is not a value of attribute line`},
		{"routing to an unknown queue", []string{"    queue: q\n", "    queue: q\n    queue_by: {attribute: line, map: {home: q3}}\n"}, `w.yaml:25:45: cases[0].queue_by.map.home: unknown queue "q3" (defined: q, q2)`},
		// Steps.
		{"a step depending on an unknown step", []string{"deps: [assess], approval", "deps: [asses], approval"}, `w.yaml:39:57: cases[0].steps[3].deps[0]: unknown step "asses" in this template`},
		{"a step depending on itself", []string{"deps: [assess], approval", "deps: [decide], approval"}, `w.yaml:39:57: cases[0].steps[3].deps[0]: step "decide" depends on itself`},
		{"a cycle among steps", []string{"effort: 1h}\n", "effort: 1h, deps: [pay]}\n"}, `w.yaml:37:62: cases[0].steps[1].deps[0]: dependency cycle: intake -> pay -> decide -> assess -> inspect -> intake`},
		{"a step with npc and role", []string{"npc: olga, when", "npc: olga, role: inspector, when"}, `w.yaml:37:40: cases[0].steps[1].role: a step an NPC performs takes the NPC's role; give npc or role, not both`},
		{"npc that is not an NPC", []string{"npc: olga, when", "npc: sara, when"}, `w.yaml:37:28: cases[0].steps[1].npc: sara is not an NPC: only an NPC performs a step when asked`},
		{"npc that is no member", []string{"npc: olga, when", "npc: olgx, when"}, `w.yaml:37:28: cases[0].steps[1].npc: unknown member "olgx" (defined: hana, ivan, olga, sara)`},
		{"an NPC step without answer", []string{`, answer: "Damage {{.damage}} on {{.ref}}"`, ""}, `w.yaml:37:9: cases[0].steps[1].answer: missing answer: what olga replies when it has performed the step`},
		{"an NPC step with an effort", []string{"npc: olga, when", "npc: olga, effort: 1h, when"}, `w.yaml:37:42: cases[0].steps[1].effort: a step an NPC performs takes its reply latency, not an effort`},
		{"an NPC step needing an approval", []string{"npc: olga, when", "npc: olga, approval: payouts, when"},
			`w.yaml:37:44: cases[0].steps[1].approval: a step an NPC performs cannot need an approval: the NPC does not ask for one`},
		{"an answer on a step no NPC performs", []string{"{id: intake, role: handler, effort: 1h}", `{id: intake, role: handler, effort: 1h, answer: "ok"}`}, `w.yaml:36:57: cases[0].steps[0].answer: only a step an NPC performs has an answer`},
		{"a step for a role that does not serve the queue", []string{"{id: q, served_by: [handler, senior]}", "{id: q, served_by: [handler]}"},
			`w.yaml:38:105: cases[0].steps[2].role_by.map.home: step "assess" needs role "senior", which does not serve queue "q"`},
		{"a step for a role that does not serve a queue the case may be routed to", []string{"    queue: q\n", "    queue: q\n    queue_by: {attribute: line, map: {home: q2}}\n"},
			`w.yaml:39:105: cases[0].steps[2].role_by.map.home: step "assess" needs role "senior", which does not serve queue "q2"`},
		{"routing a step to a role no agent holds", []string{"map: {home: senior}", "map: {home: inspector}"},
			`w.yaml:38:105: cases[0].steps[2].role_by.map.home: no agent seat holds role "inspector": give the step to an NPC with npc`},
		{"a step for a role no agent holds", []string{"{id: intake, role: handler,", "{id: intake, role: inspector,"}, `w.yaml:36:28: cases[0].steps[0].role: no agent seat holds role "inspector": give the step to an NPC with npc`},
		{"approval on a chain that reads no attribute and a step that charges nothing", []string{"attribute: amount, ", ""}, `w.yaml:39:76: cases[0].steps[3].approval: chain payouts reads no attribute and the step charges nothing: there is no amount to approve`},
		{"a chain attribute that is not an amount attribute", []string{"attribute: amount, ", "attribute: line, "}, `w.yaml:39:76: cases[0].steps[3].approval: chain payouts reads attribute "line", which template claim cannot give: it is a one_of attribute, not an amount; its amount attributes are amount`},
		{"a chain attribute the template does not have", []string{"attribute: amount, ", "attribute: sum, "}, `w.yaml:39:76: cases[0].steps[3].approval: chain payouts reads attribute "sum", which template claim cannot give: no such attribute; its amount attributes are amount`},
		{"charge naming an unknown attribute", []string{"charge: amount}", "charge: amont}"}, `w.yaml:40:71: cases[0].steps[4].charge: cannot charge "amont": no such attribute; its amount attributes are amount`},
		{"charge naming a category", []string{"charge: amount}", "charge: line}"}, `w.yaml:40:71: cases[0].steps[4].charge: cannot charge "line": it is a one_of attribute, not an amount; its amount attributes are amount`},
		{"a template without steps", []string{"separation:\n", "  - {id: other, queue: q, steps: []}\nseparation:\n"}, `w.yaml:41:34: cases[1].steps: a case template needs at least one step`},
		{"every step conditional", []string{"{id: intake, role: handler, effort: 1h}", "{id: intake, role: handler, effort: 1h, when: amount > 1}", "deps: [assess], approval", "deps: [assess], when: amount > 1, approval", "{id: pay, role: handler, effort: 15m, deps: [decide],", "{id: pay, role: handler, effort: 15m, deps: [decide], when: amount > 1,", "deps: [inspect], role_by", "deps: [inspect], when: amount > 1, role_by"}, `w.yaml:35:5: cases[0].steps: every step has a condition: a case whose conditions all fail would have nothing to do`},
		// SLA.
		{"an SLA map missing a priority the weights can draw", []string{"sla: {1: 2d, 2: 1d}", "sla: {1: 2d}"}, `w.yaml:26:10: cases[0].sla: the SLA by priority has no entry for priority 2, which the template's priority weights can draw (it lists 1)`},
		{"an SLA map missing a priority the expression can give", []string{"priority: {1: 3, 2: 1}", `priority: "amount > 4000 ? 3 : (amount > 1000 ? 2 : 1)"`},
			`w.yaml:26:10: cases[0].sla: the SLA by priority has no entry for priority 3, which the priority expression can give (it lists 1, 2)`},
		{"an SLA map missing a priority the expression computes", []string{"priority: {1: 3, 2: 1}", `priority: "amount / 2500 + 1"`},
			`w.yaml:27:15: cases[0].priority: expression "amount / 2500 + 1", for amount=5000, line="home", ref="", gives priority 3, which the SLA by priority has no entry for (it lists 1, 2)`},
		{"a priority expression that fails", []string{"priority: {1: 3, 2: 1}", `priority: "amount > 3000 ? 2 : amount % 0"`},
			`w.yaml:27:15: cases[0].priority: expression "amount > 3000 ? 2 : amount % 0", for amount=100, line="home", ref="", fails: runtime error: integer divide by zero (1:28)`},
		{"a condition that fails", []string{"when: amount > 2000", "when: amount % 0 > 1"},
			`w.yaml:37:40: cases[0].steps[1].when: expression "amount % 0 > 1", for amount=100, line="home", ref="", fails: runtime error: integer divide by zero (1:8)`},
		// Priorities are integers: a fraction was cut off without a word.
		{"a priority with a fraction", []string{"priority: {1: 3, 2: 1}", "priority: 2.7"}, `w.yaml:27:15: cases[0].priority: expected an integer priority, got 2.7`},
		{"a priority expression with a fraction", []string{"priority: {1: 3, 2: 1}", `priority: "amount > 3000 ? 2.5 : 1"`}, `w.yaml:27:15: cases[0].priority: bad expression "amount > 3000 ? 2.5 : 1": it gives 2.5, a number with a fraction; an integer is wanted here (int(…) cuts the fraction off)`},
		{"a priority weight with a fraction", []string{"priority: {1: 3, 2: 1}", "priority: {1: 3, 2: 1.5}"}, `w.yaml:27:25: cases[0].priority: expected an integer weight, got 1.5`},
		{"a priority weighted with a fraction", []string{"priority: {1: 3, 2: 1}", "priority: {1: 3, 1.5: 1}"}, `w.yaml:27:22: cases[0].priority: expected an integer priority, got 1.5`},
		{"an SLA for a priority with a fraction", []string{"sla: {1: 2d, 2: 1d}", "sla: {1: 2d, 2: 1d, 1.5: 1m}"}, `w.yaml:26:25: cases[0].sla: expected an integer priority, got 1.5`},
		{"an SLA map without priority weights", []string{"    priority: {1: 3, 2: 1}\n", ""}, `w.yaml:26:10: cases[0].sla: the SLA by priority has no entry for priority 0, which every case of this template has: it draws no priority (it lists 1, 2)`},
		// Who may open cases.
		{"open bounds max below min", []string{"bounds: {amount: {min: 100, max: 4000}}", "bounds: {amount: {min: 4000, max: 100}}"}, `w.yaml:34:74: cases[0].open.bounds.amount.max: max (100) is less than min (4000)`},
		{"open bounds on an unknown attribute", []string{"bounds: {amount: {min: 100, max: 4000}}", "bounds: {size: {min: 1}}"}, `w.yaml:34:55: cases[0].open.bounds.size: cannot bound "size": no such attribute; its amount attributes are amount`},
		{"open bounds on a category", []string{"bounds: {amount: {min: 100, max: 4000}}", "bounds: {line: {min: 1}}"}, `w.yaml:34:55: cases[0].open.bounds.line: cannot bound "line": it is a one_of attribute, not an amount; its amount attributes are amount`},
		{"open for an unknown role", []string{"open: {roles: [handler]", "open: {roles: [handlers]"}, `w.yaml:34:20: cases[0].open.roles[0]: unknown role "handlers" (defined: handler, inspector, senior)`},
		{"open for no role", []string{"open: {roles: [handler]", "open: {roles: []"}, `w.yaml:34:19: cases[0].open.roles: name the roles whose members may open these cases`},
		{"a negative quota", []string{"quota: 2", "quota: -1"}, `w.yaml:34:37: cases[0].open.quota: quota must not be negative, got -1`},
		// Separation of duties.
		{"separation naming an unknown template", []string{"{id: four-eyes, template: claim", "{id: four-eyes, template: claims"}, `w.yaml:43:31: separation[1].template: unknown case template "claims" (defined: claim)`},
		{"separation naming an unknown step", []string{"did: [assess]", "did: [asess]"}, `w.yaml:42:43: separation[0].did[0]: template claim has no step "asess"`},
		{"distinct with one step", []string{"distinct: [intake, pay]", "distinct: [intake]"}, `w.yaml:43:48: separation[1].distinct: distinct needs at least two steps`},
		{"distinct beside did", []string{"distinct: [intake, pay]", "distinct: [intake, pay], did: [assess]"}, `w.yaml:43:48: separation[1].distinct: a rule is either distinct (four eyes) or did with not_do/not_approve, not both`},
		{"a rule without did", []string{"did: [assess], ", ""}, `w.yaml:42:5: separation[0].did: name the steps whose doer the rule restricts (did), or give distinct`},
		{"a rule with did and nothing barred", []string{"did: [assess], not_do: [decide], not_approve: [decide]", "did: [assess]"}, `w.yaml:42:5: separation[0].not_do: name what the doer of the did steps may not do (not_do) or approve (not_approve)`},
		{"not_approve on a step without approval", []string{"not_approve: [decide]", "not_approve: [pay]"}, `w.yaml:42:84: separation[0].not_approve[0]: step pay needs no approval`},
		// Arrivals.
		{"an arrival with case and ticket", []string{"case: claim, process", "case: claim, ticket: {role: handler, effort: 1h}, process"}, `w.yaml:45:34: arrivals[0].ticket: an arrival brings cases or tickets: give case or ticket, not both`},
		{"an arrival with case and queue", []string{"case: claim, process", "case: claim, queue: q, process"}, `w.yaml:45:33: arrivals[0].queue: a case goes to its template's queue; leave queue out`},
		{"an arrival of an unknown template", []string{"case: claim, process", "case: claims, process"}, `w.yaml:45:19: arrivals[0].case: unknown case template "claims" (defined: claim)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantLoadError(t, caseEdit(t, tt.edits...), tt.want)
		})
	}
}
