package org

import (
	"slices"
	"testing"

	"github.com/corpsim/corpsim/events/payload"
)

// The index lists a message under a case ID exactly when NamesCase says
// the message names it, for every ID the index answers for.
func TestNamedIndexAgreesWithNamesCase(t *testing.T) {
	texts := []string{
		"refund-1 done", "Refund-12: paid 450", "about REFUND-1.", "refund-1.refund is done",
		"re: refund-10, refund-1 and refund-1 again", "xrefund-1", "refund-1x", "refund-1_", "_refund-1",
		"refund-1-2", "café refund-1é", "\xffrefund-1\xfe", "2026-02-03 refund-3", "K-1 and k-1", "",
		"claims-37: damage not found", "inv-0 refunded in full",
	}
	ids := []string{"refund-1", "refund-12", "Refund-10", "refund-3", "k-1", "claims-37", "inv-0", "refund-1-2", "a_b-1", "x.y-1", "plain", "12"}
	msgs := make([]*Message, len(texts))
	for i, text := range texts {
		msgs[i] = &Message{Text: text}
	}
	s := &State{Messages: msgs}
	for _, id := range ids {
		pos, ok := s.naming(id)
		if !ok {
			if isWordID(id) && indexedWord(lower(id)) {
				t.Errorf("%q: the index does not answer", id)
			}
			continue
		}
		var want []int32
		for i, m := range msgs {
			if NamesCase(m.Text, id) {
				want = append(want, int32(i))
			}
		}
		if !slices.Equal(pos, want) {
			t.Errorf("%q: index lists %v, NamesCase %v", id, pos, want)
		}
	}
	// Messages sent later are caught up at the next ask.
	s.Messages = append(s.Messages, &Message{Text: "refund-1 once more"})
	if pos, _ := s.naming("refund-1"); pos[len(pos)-1] != int32(len(s.Messages)-1) {
		t.Errorf("a later message is not listed: %v", pos)
	}
}

func FuzzNamedIndex(f *testing.F) {
	f.Add("Refund-12: paid 450 for refund-1.", "refund-1")
	f.Add("k-1", "K-1")
	f.Fuzz(func(t *testing.T, text, id string) {
		s := &State{Messages: []*Message{{Text: text}}}
		pos, ok := s.naming(id)
		if ok && (len(pos) == 1) != NamesCase(text, id) {
			t.Fatalf("text %q id %q: indexed %v, NamesCase %v", text, id, pos, NamesCase(text, id))
		}
	})
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// CasesNamedBy finds what checking every case's ID against the words
// finds, in the order of State.Cases, IDs of any case included.
func TestCasesNamedBy(t *testing.T) {
	s := &State{cases: map[string]*Case{}}
	for i, id := range []string{"req-1", "REQ-2", "Req-3", "req-3", "req-12", "x.y-1", "café-1", "\u212a-1"} {
		c := &Case{ID: id, num: i, Outcomes: []CaseOutcome{{Expected: payload.Expected{Record: "invoice", ID: "inv-" + id}}}}
		s.Cases = append(s.Cases, c)
		s.fileCase(c)
	}
	for _, text := range []string{"req-1 and req-2", "REQ-3 req-12 req-1", "re: req-3, req-3", "x.y-1", "café-1 k-1", "req-1x req-", ""} {
		words := WordsOf(text)
		var want []string
		for _, c := range s.Cases {
			if words.Name(c.ID) {
				want = append(want, c.ID)
			}
		}
		var got []string
		for _, c := range s.CasesNamedBy(words) {
			got = append(got, c.ID)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%q names %v, want %v", text, got, want)
		}
	}
	if !s.RecordNamed("invoice", "inv-REQ-2") || s.RecordNamed("invoice", "inv-req-2") || s.RecordNamed("account", "inv-req-1") {
		t.Error("RecordNamed does not count the outcomes' records")
	}
}
