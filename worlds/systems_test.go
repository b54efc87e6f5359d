package worlds

import (
	"os"
	"strings"
	"testing"
)

func mustLoadFile(tb testing.TB, path string) *World {
	tb.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	w, err := Load(path, src)
	if err != nil {
		tb.Fatalf("load %s: %v", path, err)
	}
	return w
}

func TestBillingSupportRecords(t *testing.T) {
	w := mustLoadFile(t, "shipped/billing-support.yaml")
	recs := w.SeedRecords(NewDraws(1, nil))
	again := w.SeedRecords(NewDraws(1, nil))
	var inv, acc, stale int
	byID := map[string]Record{}
	for i, r := range recs {
		byID[r.ID] = r
		if again[i].ID != r.ID || again[i].Fields["amount"] != r.Fields["amount"] {
			t.Fatalf("record %d differs between two draws of one seed", i)
		}
	}
	for _, r := range recs {
		switch r.Type {
		case "invoice":
			inv++
		case "account":
			acc++
			o := byID[r.Fields["invoice"].(string)]
			if o.Fields["amount"] != r.Fields["amount"] || o.Fields["plan"] != r.Fields["plan"] {
				stale++
			}
		}
	}
	if inv != 41 || acc < 41 || stale == 0 || stale == acc {
		t.Fatalf("got %d invoices, %d accounts, %d stale; want 41, >= 41, some but not all stale", inv, acc, stale)
	}
	c, _ := w.CaseTemplate("refund")
	o := c.Steps[0].Outcome
	if o == nil || o.Type != "invoice" || len(o.Set) != 2 {
		t.Fatalf("outcome = %+v", o)
	}
	got, ok := o.Set[0].Expr.Eval(RecordVars(map[string]any{}, map[string]any{"plan": "monthly", "amount": int64(301)}, nil))
	if !ok || got != 150 {
		t.Fatalf("refunded of a monthly 301 = %v (%v), want 150", got, ok)
	}
}

func TestSystemsErrors(t *testing.T) {
	base, err := os.ReadFile("shipped/billing-support.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Refused when written, read as they were when recorded: the checks
	// added since sessions were recorded.
	later := map[string]bool{"an outcome outside the enum": true, "a number for an enum": true, "a word for money": true,
		"a truth value for money": true, "a quotient for money": true, "a fraction times money": true, "a listed record the generate block makes too": true}
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"unknown field in a record", "refunded: 0, status: paid}", "refunded: 0, status: paid, colour: red}",
			"b.yaml:67:108: systems[1].types[0].records[0].colour: unknown field"},
		{"reference to a missing record", "", "", ""},
		{"wrong expression", `"record.plan == 'annual' ? record.amount : int(record.amount / 2)"`, `"record.plan == 'annual' ? record.amount : int(record.amont / 2)"`, `record invoice has no field "amont"`},
		{"syntax error", `"'refunded'"`, `"'refunded"`, "bad expression"},
		{"unknown field in outcome", "status: \"'refunded'\"", "state: \"'refunded'\"", `unknown field "state"`},
		{"unknown field type", "customer: {type: text}", "customer: {type: txt}", `unknown field type "txt"`},
		{"bad enum value", "refunded: 0, status: paid}", "refunded: 0, status: lost}", "status is one of paid, refunded"},
		{"version 1", "version: 2", "version: 1", "systems needs version: 2"},
		// An outcome no field can hold: the verifier would expect the
		// field untouched.
		{"an outcome outside the enum", "status: \"'refunded'\"", "status: \"'refundd'\"", "b.yaml:113:21: cases[0].steps[0].outcome.set.status: 'refundd' can never be the value of field status of invoice: status is one of paid, refunded"},
		{"a number for an enum", "status: \"'refunded'\"", "status: \"42\"", "status needs a text, got 42"},
		// Each result a condition or ?? can give is checked, not only a
		// constant standing alone.
		{"a branch outside the enum", "status: \"'refunded'\"", "status: \"record.plan == 'annual' ? 'refunded' : 'payd'\"", `b.yaml:113:21: cases[0].steps[0].outcome.set.status: "payd" can never be the value of field status of invoice: status is one of paid, refunded`},
		{"a word for money in a branch", `refunded: "record.plan == 'annual' ? record.amount : int(record.amount / 2)"`, `refunded: "record.plan == 'annual' ? record.amount : 'half'"`, "refunded needs a whole number, got half"},
		{"a truth value after ??", `refunded: "record.plan == 'annual' ? record.amount : int(record.amount / 2)"`, `refunded: "nil ?? true"`, "true can never be the value of field refunded of invoice: refunded needs a whole number, got true"},
		{"a word for money", `refunded: "record.plan == 'annual' ? record.amount : int(record.amount / 2)"`, `refunded: "'lots'"`, "refunded needs a whole number, got lots"},
		{"a truth value for money", `refunded: "record.plan == 'annual' ? record.amount : int(record.amount / 2)"`, `refunded: "record.plan == 'annual'"`, "gives true or false; field refunded of invoice is money"},
		// '/' divides as fractions do: record.amount / 2 of an odd amount
		// gives a fraction no money field holds, and the case expected the
		// field's zero (refund 0 of 5, 305 of 610).
		{"a quotient for money", `refunded: "record.plan == 'annual' ? record.amount : int(record.amount / 2)"`, `refunded: "record.plan == 'annual' ? record.amount : record.amount / 2"`, "b.yaml:112:23: cases[0].steps[0].outcome.set.refunded: record.plan == 'annual' ? record.amount : record.amount / 2 gives a quotient or a power, which may have a fraction; field refunded of invoice holds whole numbers"},
		{"a fraction times money", `refunded: "record.plan == 'annual' ? record.amount : int(record.amount / 2)"`, `refunded: "record.amount * 0.5"`, "gives a number computed with 0.5, which may have a fraction"},
		{"a listed record the generate block makes too", "{id: inv-0,", "{id: inv-1,", `b.yaml:67:18: systems[1].types[0].records[0].id: record id "inv-1" is one the generate block makes too (inv-1 to inv-40)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := string(base)
			if tc.old == "" {
				// A CRM record listed by hand naming an invoice no one has.
				src = strings.Replace(src, "        copy: {of: invoice", "        records:\n          - {id: acc-x, invoice: inv-999, amount: 5}\n        generate: {count: 1, fields: {notes: {text: x}}}\n        copy: {of: invoice", 1)
				tc.want = `no invoice record "inv-999"`
			} else if !strings.Contains(src, tc.old) {
				t.Fatalf("the world has no %q", tc.old)
			} else {
				src = strings.Replace(src, tc.old, tc.new, 1)
			}
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
			// The checks added since sessions were recorded do not refuse
			// a world read again from a session's log (Limits.Recorded):
			// it reads as it did then.
			if later[tc.name] {
				if _, err := LoadLimited("b.yaml", []byte(src), Limits{Recorded: true}); err != nil {
					t.Fatalf("read as a recorded world: %v", err)
				}
			}
		})
	}
	// The generate block makes inv-1, not inv-01: a record listed as
	// inv-01 is another one.
	if _, err := Load("b.yaml", []byte(strings.Replace(string(base), "{id: inv-0,", "{id: inv-01,", 1))); err != nil {
		t.Fatalf("a listed inv-01 beside the generated inv-1: %v", err)
	}
}

// An outcome may read the records its record's reference fields name
// (ref.<field>.<field>); a name that is not there is refused where it is.
func TestOutcomeReadsReferences(t *testing.T) {
	w := mustLoadFile(t, "shipped/access-requests.yaml")
	c, _ := w.CaseTemplate("access")
	o := c.Steps[1].Outcome
	g, _ := w.RecordType("grant")
	if got := o.RefFields(g); len(got) != 1 || got[0] != "employee" {
		t.Fatalf("RefFields = %v, want [employee]", got)
	}
	for _, tc := range []struct {
		emp  map[string]any
		app  string
		want string
	}{
		{map[string]any{"active": true, "department": "finance"}, "ledger", "write"},
		{map[string]any{"active": true, "department": "sales"}, "ledger", "read"},
		{map[string]any{"active": false, "department": "finance"}, "ledger", "none"},
	} {
		got, ok := o.Set[0].Expr.Eval(RecordVars(map[string]any{}, map[string]any{"app": tc.app}, map[string]map[string]any{"employee": tc.emp}))
		if !ok || got != tc.want {
			t.Errorf("%v on %s: got %v, want %s", tc.emp, tc.app, got, tc.want)
		}
	}
	src, err := os.ReadFile("shipped/access-requests.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ old, new, want string }{
		{"ref.employee.department == 'finance'", "ref.employee.dept == 'finance'", `record employee has no field "dept"`},
		{"!ref.employee.active", "!ref.person.active", `record grant has no reference field "person"`},
	} {
		old, want := tc.old, tc.want
		bad := strings.Replace(string(src), old, tc.new, 1)
		_, err := Load("a.yaml", []byte(bad))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "a.yaml:1") {
			t.Errorf("%s: got %v, want a.yaml:line:col … %s", old, err, want)
		}
	}
}

// TestRecordsRunOut: cases expected to outnumber the records they draw
// from are warned of at their arrival (a case would then share its
// record, and its outcome, with an earlier one); enough records, none.
func TestRecordsRunOut(t *testing.T) {
	src, err := Source("billing-support")
	if err != nil {
		t.Fatal(err)
	}
	w, err := Load("b.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Warnings) != 0 {
		t.Fatalf("billing-support (41 invoices) warns: %v", w.Warnings)
	}
	few := strings.Replace(string(src), "count: 40", "count: 5", 1)
	if w, err = Load("b.yaml", []byte(few)); err != nil {
		t.Fatal(err)
	}
	want := "b.yaml:134:5: arrivals[0]: about 25 refund cases arrive at load 1, each drawing one invoice record (attribute invoice), of which there are 6"
	if len(w.Warnings) != 1 || !strings.HasPrefix(w.Warnings.Error(), want) {
		t.Errorf("warnings %v; want one beginning %s", w.Warnings, want)
	}
}
