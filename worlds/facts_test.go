package worlds

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// A fact's holder, a requester, a document and the outcome kinds load
// into the template; the reply's value and the decision's correct option
// are computed from the record they read.
func TestFactsAndKindsLoad(t *testing.T) {
	w := mustLoadFile(t, "shipped/billing-support.yaml")
	c, _ := w.CaseTemplate("refund")
	f, ok := c.Fact("reason")
	if !ok || f.HeldBy != "max" || f.Answer == nil || c.Requester != "cara" || c.Document == nil {
		t.Fatalf("fact %+v, requester %q, document %v", f, c.Requester, c.Document)
	}
	if got := f.Answer.Render(map[string]any{"case": "requests-1", "reason": "service outage", "invoice": "inv-3"}); got != "requests-1: the customer asks for the refund because of a service outage." {
		t.Errorf("answer = %q", got)
	}
	if got := c.HeldBy("max"); len(got) != 1 || got[0].Name != "reason" || len(c.HeldBy("cara")) != 0 {
		t.Errorf("HeldBy(max) = %v", got)
	}
	st, _ := c.Step("confirm")
	if st.Reply == nil || st.Reply.FromType != "invoice" {
		t.Fatalf("reply = %+v", st.Reply)
	}
	if got, ok := st.Reply.Carries.Eval(RecordVars(map[string]any{}, map[string]any{"plan": "monthly", "amount": 301}, nil)); !ok || got != 150 {
		t.Errorf("carries of a monthly 301 = %v (%v), want 150", got, ok)
	}
	a := mustLoadFile(t, "shipped/access-requests.yaml")
	ac, _ := a.CaseTemplate("access")
	rv, _ := ac.Step("review")
	if rv.Decision == nil || len(rv.Decision.Options) != 2 {
		t.Fatalf("decision = %+v", rv.Decision)
	}
	for active, want := range map[bool]string{true: "approve", false: "deny"} { // order: each case is its own
		got, ok := rv.Decision.Correct.Eval(RecordVars(map[string]any{}, map[string]any{}, map[string]map[string]any{"employee": {"active": active}}))
		if !ok || got != want {
			t.Errorf("active %v: decision %v, want %s", active, got, want)
		}
	}
}

// Every mistake in facts, requesters and the outcome kinds is refused
// where it is, with file:line:col.
func TestFactsAndKindsErrors(t *testing.T) {
	billing, err := os.ReadFile("shipped/billing-support.yaml")
	if err != nil {
		t.Fatal(err)
	}
	access, err := os.ReadFile("shipped/access-requests.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const createStep = `      - id: memo
        title: Leave a memo
        role: agent
        effort: {min: 5m, max: 10m}
        deps: [confirm]
        create: {record: NOTE_TYPE, from: invoice, set: {FIELD: "record.amount"}}
`
	for _, tc := range []struct {
		name     string
		src      []byte
		old, new string
		want     string
	}{
		{"wrong expression in a reply", billing, `carries: "record.plan == 'annual' ? record.amount`, `carries: "record.plan == 'annual' ? record.amout`,
			`b.yaml:131:20: cases[0].steps[2].reply.carries: bad expression "record.plan == 'annual' ? record.amout : int(record.amount / 2)": record invoice has no field "amout"`},
		{"unknown option", access, `'approve' : 'deny'`, `'approve' : 'reject'`,
			`b.yaml:107:20: cases[0].steps[0].decision.correct: unknown option "reject" (options: approve, deny)`},
		{"decision with one option", access, "options: [approve, deny]", "options: [approve]", "a decision needs at least two options"},
		{"wrong expression in a decision", access, "ref.employee.active ? 'approve'", "ref.employee.alive ? 'approve'", `record employee has no field "alive"`},
		{"unknown NPC holding a fact", billing, "held_by: max", "held_by: mux", `cases[0].facts.reason.held_by: unknown member "mux"`},
		{"a member holding a fact", billing, "held_by: max", "held_by: ana", "ana is not an NPC: only an NPC holds a fact"},
		{"unknown requester", billing, "requester: cara ", "requester: carla ", `cases[0].requester: unknown member "carla"`},
		{"missing requester", billing, "    requester: cara ", "    # requester: cara ", "cases[0].steps[2].reply: a reply goes to the case's requester, and template refund names none"},
		{"an attribute held by an NPC", billing, "invoice: {record: invoice}  ", "invoice: {record: invoice, held_by: max}  ", "only a fact is held by an NPC"},
		{"a bad answer template", billing, "because of a {{.reason}}", "because of a {{.reasons}}", `cases[0].facts.reason.answer: bad text template`},
		{"two outcomes on a step", billing, "        reply:  ", "        decision: {options: [a, b], correct: \"'a'\"}\n        reply:  ", "a step has one outcome; this one has decision and reply"},
		{"unknown record attribute in from", billing, "          from: invoice\n", "          from: bill\n", `cases[0].steps[2].reply.from: unknown record attribute "bill"`},
		{"create of an unknown type", billing, "\narrivals:", "\n" + strings.NewReplacer("NOTE_TYPE", "memo", "FIELD", "amount").Replace(createStep) + "\narrivals:", `unknown record type "memo"`},
		{"create by a role that may not", billing, "\narrivals:", "\n" + strings.NewReplacer("NOTE_TYPE", "invoice", "FIELD", "amount").Replace(createStep) + "\narrivals:", `cases[0].steps[3].create.record: role agent may not create invoice records (its system lets no role create)`},
		{"create of an unknown field", billing, "\narrivals:", "\n" + strings.NewReplacer("NOTE_TYPE", "invoice", "FIELD", "colour").Replace(createStep) + "\narrivals:", `cases[0].steps[3].create.set.colour: unknown field "colour" of record type invoice`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := string(tc.src)
			if !strings.Contains(src, tc.old) {
				t.Fatalf("the world has no %q", tc.old)
			}
			src = strings.Replace(src, tc.old, tc.new, 1)
			_, err := Load("b.yaml", []byte(src))
			if err == nil {
				t.Fatalf("loaded; want an error with %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "b.yaml:") {
				t.Fatalf("got %v, want b.yaml:line:col … %q", err, tc.want)
			}
			if e := err.(ErrorList)[0]; e.Line == 0 || e.Column == 0 {
				t.Fatalf("error %v has no position", e)
			}
		})
	}
}

func TestResultValues(t *testing.T) {
	attrs := []Attr{
		{Name: "channel", Kind: AttrChoice, Choices: []Choice{{Value: "email", Weight: 2}, {Value: "phone", Weight: 1}}},
		{Name: "amount", Kind: AttrAmount},
	}
	typ := &RecordType{ID: "invoice", Fields: []Field{
		{Name: "amount", Type: "money"},
		{Name: "plan", Type: "enum", Values: []string{"monthly", "annual"}},
	}}
	for _, c := range []struct {
		src  string
		want []string
	}{
		{"record.plan == 'annual' ? record.amount : int(record.amount / 2)", nil},
		{"record.plan", []string{"monthly", "annual"}},
		{"channel", []string{"email", "phone"}},
		{"amount > 100 ? 'escalated' : channel", []string{"escalated", "email", "phone"}},
		{"record.plan ?? 'none'", []string{"monthly", "annual", "none"}},
		{"'yes'", []string{"yes"}},
		{"upper(record.plan)", []string{"monthly", "annual"}},
		{"record?.plan", []string{"monthly", "annual"}},
		{"let p = record.plan; p", []string{"monthly", "annual"}},
		{"let channel = 'x'; channel", []string{"x"}},
		{"string(channel) + '!'", nil},
		{"replace(record.plan, 'a', 'b')", nil},
		{"amount", nil},
		{"(", nil},
	} {
		if got := resultValues(c.src, attrs, typ); !slices.Equal(got, c.want) {
			t.Errorf("resultValues(%q) = %q, want %q", c.src, got, c.want)
		}
	}
}

// A reply whose carries gives a string its text does not list (a text
// field, a function's result) is loaded with a warning: a reply hedging
// between values of it cannot be told from a right one.
func TestReplyValuesUnlistedWarn(t *testing.T) {
	billing, err := os.ReadFile("shipped/billing-support.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const carries = `carries: "record.plan == 'annual' ? record.amount : int(record.amount / 2)"`
	for src, warn := range map[string]bool{ // order: each is its own
		`carries: "record.plan == 'annual' ? record.amount : int(record.amount / 2)"`: false, // a number
		`carries: "record.plan"`:                           false, // an enum field: its values
		`carries: "record.amount > 500 ? 'big' : 'small'"`: false, // literals
		`carries: "record.customer"`:                       true,  // a text field
		`carries: "upper(record.customer)"`:                true,
		`carries: "record.plan + '-' + record.status"`:     true,
	} {
		w, err := Load("b.yaml", []byte(strings.Replace(string(billing), carries, src, 1)))
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		got := strings.Contains(w.Warnings.Error(), "cannot be listed")
		if got != warn {
			t.Errorf("%s: warned %v, want %v (warnings: %v)", src, got, warn, w.Warnings)
		}
		if warn && !strings.Contains(w.Warnings.Error(), "b.yaml:131:20: cases[0].steps[2].reply.carries:") {
			t.Errorf("%s: the warning names no place: %v", src, w.Warnings)
		}
	}
}
