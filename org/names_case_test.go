package org_test

import (
	"testing"

	"github.com/corpsim/corpsim/org"
)

// FuzzNamesCase holds NamesCase, a search for the id as a word, to its
// definition: the id lower-cased is one of the text's words (WordsOf).
func FuzzNamesCase(f *testing.F) {
	for _, c := range [][2]string{
		{"about req-1.refund, please", "req-1"},
		{"about req-12", "req-1"},
		{"REQ-1 is done", "req-1"},
		{"req-1", "REQ-1"},
		{"x_req-1_y", "req-1"},
		{"(claim-max-3)", "claim-max-3"},
		{"claim-max-3x", "claim-max-3"},
		{"", ""},
		{"a.b", "a.b"},
		{"caf\u00e9 req-1", "req-1"},
		{"\u212a-1 is here", "k-1"},
		{"req-1req-1 req-1", "req-1"},
	} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, text, id string) {
		if got, want := org.NamesCase(text, id), org.WordsOf(text).Name(id); got != want {
			t.Fatalf("NamesCase(%q, %q) = %v; its words say %v", text, id, got, want)
		}
	})
}
