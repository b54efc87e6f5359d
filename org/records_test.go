package org_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

func mustBilling(tb testing.TB) (*worlds.World, *org.State) {
	tb.Helper()
	w, err := worlds.Shipped("billing-support")
	if err != nil {
		tb.Fatal(err)
	}
	st := org.New(w)
	mustApply(tb, st, ev(tb, 1, 0, payload.EvSessionStarted, "", payload.SessionStarted{Format: payload.LogFormat, World: w.Name, Seed: 4}))
	return w, st
}

// The records are drawn from the session's seed when it starts; reads
// reach the reader's next observation, by role; a write changes the
// state's hash and is refused when its values before do not match the
// record, when its collateral flag lies, or when the role may not write.
func TestRecordEvents(t *testing.T) {
	w, st := mustBilling(t)
	if got := len(st.Records); got < 82 {
		t.Fatalf("got %d records, want the 41 invoices and their copies", got)
	}
	inv := st.Record("invoice", "inv-3")
	if inv == nil {
		t.Fatal("no invoice inv-3")
	}
	mustApply(t, st, ev(t, 2, 0, payload.EvRecordRead, "ana", payload.RecordRead{Op: org.ActSearch, Record: "account", Filter: payload.Attrs{"invoice": "inv-3"}}))
	res := st.View("ana").Results
	if len(res) != 1 || len(res[0].Records) == 0 || res[0].Records[0].Fields["invoice"] != "inv-3" || res[0].Records[0].System != "crm" {
		t.Fatalf("ana's results %+v, want the CRM copy of inv-3", res)
	}
	if txt := res[0].Records[0].Text; !strings.HasPrefix(txt, "CRM account account-") || !strings.Contains(txt, "invoice inv-3") {
		t.Errorf("the record in words: %q", txt)
	}
	if len(st.View("ben").Results) != 0 {
		t.Fatal("ben sees ana's results")
	}
	before := st.Hash()
	write := func(seq uint64, actor string, p payload.RecordWritten) error {
		return st.Apply(ev(t, seq, 0, payload.EvRecordWritten, actor, p))
	}
	status := inv.Fields["status"]
	tests := []struct {
		name  string
		actor string
		p     payload.RecordWritten
	}{
		{"before does not match", "ana", payload.RecordWritten{Op: org.ActUpdate, Record: "invoice", ID: "inv-3",
			Before: payload.Attrs{"status": "refunded"}, After: payload.Attrs{"status": "refunded"}, Collateral: true}},
		{"collateral flag lies", "ana", payload.RecordWritten{Op: org.ActUpdate, Record: "invoice", ID: "inv-3",
			Before: payload.Attrs{"status": status}, After: payload.Attrs{"status": "refunded"}}},
		{"role may not write", "ana", payload.RecordWritten{Op: org.ActUpdate, Record: "account", ID: "account-1",
			Before: payload.Attrs{}, After: payload.Attrs{"amount": int64(1)}, Collateral: true}},
		{"unknown field", "ana", payload.RecordWritten{Op: org.ActUpdate, Record: "invoice", ID: "inv-3",
			After: payload.Attrs{"colour": "red"}, Collateral: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := write(3, tc.actor, tc.p); !errors.Is(err, org.ErrBadEvent) {
				t.Fatalf("got %v, want an error wrapping ErrBadEvent", err)
			}
			if st.Hash() != before {
				t.Fatal("a refused write changed the state")
			}
		})
	}
	if err := write(3, "ana", payload.RecordWritten{Op: org.ActUpdate, Record: "invoice", ID: "inv-3",
		Before: payload.Attrs{"status": status}, After: payload.Attrs{"status": "refunded"}, Collateral: true}); err != nil {
		t.Fatal(err)
	}
	if st.Hash() == before || st.Collateral != 1 || st.Member("ana").Collateral != 1 || inv.Fields["status"] != "refunded" {
		t.Fatalf("after the write: hash changed %v, collateral %d, status %v", st.Hash() != before, st.Collateral, inv.Fields["status"])
	}
	// The snapshot keeps the records: restored, the state hashes alike.
	re, err := org.Restore(w, st.Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	if re.Hash() != st.Hash() || re.Record("invoice", "inv-3").Fields["status"] != "refunded" {
		t.Fatal("the restored state differs")
	}
	// The check the engine asks before emitting: a CRM write by an agent is a policy violation.
	_, rej := st.Check(st.Member("ana"), org.Action{Type: org.ActUpdate, Record: "account", ID: "account-1",
		Fields: payload.NewActionAttrs(payload.Attrs{"amount": 1})}, 0)
	if rej == nil || rej.Kind != org.KindPolicy || rej.Rule != org.RuleRecordAccess {
		t.Fatalf("got %+v, want a record-access policy refusal", rej)
	}
	_, rej = st.Check(st.Member("ana"), org.Action{Type: org.ActUpdate, Record: "invoice", ID: "inv-3",
		Fields: payload.NewActionAttrs(payload.Attrs{"status": "lost"})}, 0)
	if rej == nil || rej.Kind != org.KindMalformed {
		t.Fatalf("got %+v, want a malformed refusal of an enum value", rej)
	}
}

// A world without systems has no records, and its snapshot does not
// mention them (so version-1 hashes are unchanged).
func TestNoSystemsNoRecords(t *testing.T) {
	st := mustState(t, started(t))
	if len(st.Records) != 0 {
		t.Fatalf("startup has %d records", len(st.Records))
	}
	for _, key := range []string{`"records"`, `"collateral"`, `"results"`} {
		if bytes.Contains(st.Snapshot(), []byte(key)) {
			t.Errorf("the snapshot of a world without systems mentions %s", key)
		}
	}
}

// Search pages hold SearchPage records each and count the rest; create and
// delete need their roles, are collateral (no outcome asks for them), and
// a deleted record is neither read nor written again.
func TestRecordSearchCreateDelete(t *testing.T) {
	src, err := worlds.Source("billing-support")
	if err != nil {
		t.Fatal(err)
	}
	w, err := worlds.Load("b.yaml", bytes.Replace(src, []byte("    write: [agent, lead]\n"), []byte("    write: [agent, lead]\n    create: [lead]\n    delete: [lead]\n"), 1))
	if err != nil {
		t.Fatal(err)
	}
	st := org.New(w)
	mustApply(t, st, ev(t, 1, 0, payload.EvSessionStarted, "", payload.SessionStarted{Format: payload.LogFormat, World: w.Name, Seed: 4}))
	invoices := 0
	for _, r := range st.Records {
		if r.Type == "invoice" {
			invoices++
		}
	}
	mustApply(t, st, ev(t, 2, 0, payload.EvRecordRead, "lee", payload.RecordRead{Op: org.ActSearch, Record: "invoice", Page: 2}))
	res := st.View("lee").Results[0]
	if len(res.Records) != org.SearchPage || res.More != invoices-2*org.SearchPage || res.Records[0].ID == "inv-0" {
		t.Fatalf("page 2: %d records, %d more; want %d and %d", len(res.Records), res.More, org.SearchPage, invoices-2*org.SearchPage)
	}
	ana, lee := st.Member("ana"), st.Member("lee")
	create := org.Action{Type: org.ActCreate, Record: "invoice", ID: "inv-x", Fields: payload.NewActionAttrs(payload.Attrs{"amount": 10})}
	if _, rej := st.Check(ana, create, 0); rej == nil || rej.Rule != org.RuleRecordAccess {
		t.Fatalf("an agent's create: got %+v, want record-access", rej)
	}
	fields, rej := st.Check(lee, create, 0)
	if rej != nil {
		t.Fatal(rej)
	}
	p := st.RecordWrite(lee, create, fields.Fields)
	if !p.Collateral || p.After["amount"] != int64(10) || p.After["status"] != "paid" {
		t.Fatalf("create: %+v; want collateral, the amount and the other fields' zeros", p)
	}
	mustApply(t, st, ev(t, 3, 0, payload.EvRecordWritten, "lee", p))
	del := org.Action{Type: org.ActDelete, Record: "invoice", ID: "inv-x"}
	if _, rej := st.Check(lee, del, 0); rej != nil {
		t.Fatal(rej)
	}
	mustApply(t, st, ev(t, 4, 0, payload.EvRecordWritten, "lee", st.RecordWrite(lee, del, nil)))
	if _, rej := st.Check(lee, org.Action{Type: org.ActGet, Record: "invoice", ID: "inv-x"}, 0); rej == nil || rej.Kind != org.KindUnknown {
		t.Fatalf("a get of a deleted record: got %+v, want unknown", rej)
	}
	if st.Collateral != 2 {
		t.Fatalf("collateral %d, want 2", st.Collateral)
	}
}
