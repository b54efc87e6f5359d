package org

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/worlds"
)

// names knows the IDs of the tests' states.
func names(word string) bool {
	return slices.Contains([]string{"requests-3", "requests-12", "inv-7", "inv_8", "inv9", "req-450-b", "cara",
		"requests-3.confirm-r1", "-610", "31-126"}, strings.ToLower(word))
}

func TestStatedAmounts(t *testing.T) {
	for _, c := range []struct {
		text string
		want []float64
	}{
		{"Hello cara, case requests-3 is handled: 305.", []float64{305}},
		{"The refund is $1,220.50 for requests-12", []float64{1220.5}},
		{"610.00", []float64{610}},
		{"305 or 610", []float64{305, 610}},
		{"305, 610, 1220", []float64{305, 610, 1220}},
		{"1.5k and 2m and 3bn", []float64{1500, 2e6, 3e9}},
		{"305k", []float64{305000}},
		{"the 2nd of two: 305USD", []float64{2, 305}},
		{"-4 and +5", []float64{4, 5}},
		{"Amount:305", []float64{305}},
		{"305/month", []float64{305}},
		{"done.305.Thanks", []float64{305}},
		{"50% of 610", []float64{50, 610}},
		// Names, dates and times are not numbers, written in any case.
		{"requests-12 inv-7 inv_8 inv9 req-450-b REQUESTS-3 Inv-7", nil},
		{"on 2026-01-05 at 10:30, at 2026-01-05T10:30:15Z and 9:05:59", nil},
		{"", nil},
		// Every other number is stated, whatever is written around it:
		// a hedge cannot hide in a name-like word.
		{"USD1112 or x610 or #610 or 610_ or 1516-ish", []float64{1112, 610, 610, 610, 1516}},
		{"31-126", []float64{31, 126}},
		{"610/1220", []float64{610, 1220}},
		{"ticket #12, 05/01, v1.2.3", []float64{12, 5, 1, 1.2, 3}},
		{"requests-99 inv-77 requests-3x", []float64{99, 77, 3}}, // not IDs of the state
		{"3a4 and x86_64", []float64{3, 4, 86, 64}},
		{"12026-01-05 10:305", []float64{12026, 1, 5, 10, 305}}, // joined to more digits: no date, no time
		{"1,22", []float64{1.22}},                               // a decimal comma
		{"€152,00 and 152,5", []float64{152, 152.5}},
		{"1,2345", []float64{1, 2345}},
		{"9" + strings.Repeat("0", 400), []float64{math.MaxFloat64}},
		{".5k or 0.25", []float64{500, 0.25}},
		{".5.3", []float64{0.5, 3}},
		{"2mo and 3kg", []float64{2, 3}},                            // units, not multipliers
		{"３０５ or ６１０", []float64{305, 610}},                         // full-width
		{"305 or ⁶¹⁰ or ₆₁₀ or ⑥①⓪", []float64{305, 610, 610, 610}}, // what Unicode calls the same digits
		{"305 or 6\u200b10, r\u00adequests-3", []float64{305, 610}}, // format characters are not read
		{"305 or ⅥⅩ", []float64{305}},                               // a numeral of letters, as words: not read
		{"305 or ↉", []float64{305, 0, 3}},                          // 0⁄3
		{"305 or ↂ", []float64{305, math.MaxFloat64}},               // a numeral of no digits
		{"task requests-3.confirm-r1, requests-3.refund", []float64{}},
		{"-610 and 31-126 are numbers, never names", []float64{610, 31, 126}},
		{"305 or ٦١٠", []float64{305, math.MaxFloat64}}, // Arabic-Indic: a number, of no amount's value
		{"naïve 305", []float64{305}},
	} {
		if got := StatedAmounts(c.text, names); !slices.Equal(got, c.want) {
			t.Errorf("StatedAmounts(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	if got := StatedAmounts("inv-7", nil); !slices.Equal(got, []float64{7}) {
		t.Errorf("StatedAmounts knowing no names = %v, want [7]", got)
	}
}

func TestStatesOnly(t *testing.T) {
	for _, c := range []struct {
		texts         []string
		want          string
		only, numeric bool
	}{
		{[]string{"case requests-3: 305."}, "305", true, true},
		{[]string{"case requests-3: $305.00"}, "305", true, true},
		{[]string{"case requests-3: 1,220"}, "1220", true, true},
		{[]string{"case requests-3: 1220"}, "1.22e+03", true, true},
		{[]string{"case requests-3: 0.3"}, "0.30000000000000004", true, true},
		{[]string{"case requests-3: 305 or 610"}, "305", false, true},
		{[]string{"case requests-3: 305", "requests-3: or 610"}, "305", false, true},
		{[]string{"case requests-3: 305", "requests-3: 305 again"}, "305", true, true},
		{[]string{"case requests-3: 305k"}, "305", false, true},
		{[]string{"case requests-3: USD305"}, "305", true, true},
		{[]string{"case requests-3: USD305 (or USD610)"}, "305", false, true},
		{[]string{"case requests-3: €305,00"}, "305", true, true},
		{[]string{"case requests-3: 305, see inv-7 of 2026-01-05"}, "305", true, true},
		{[]string{"case requests-3: 305, see inv-8"}, "305", false, true}, // no record inv-8
		{[]string{"case requests-3: ３０５"}, "305", true, true},
		{[]string{"case requests-3: 305 or ６１０"}, "305", false, true},
		{[]string{"case requests-3: 305 or ٣٠٥"}, "305", false, true},
		{[]string{"case requests-3: 3050"}, "305", false, true},
		{[]string{"case requests-3 is handled"}, "305", false, true},
		{nil, "305", false, true},
		{[]string{"case requests-3: approved"}, "approved", false, false},
	} {
		only, numeric := statesOnly(c.texts, c.want, names)
		if only != c.only || numeric != c.numeric {
			t.Errorf("statesOnly(%q, %q) = %v, %v; want %v, %v", c.texts, c.want, only, numeric, c.only, c.numeric)
		}
	}
}

// FuzzStatedAmounts: any text (an agent's message) is read without a
// panic; each amount stated is a finite number at least 0; and a number
// written after a space at the end of the text is stated after the text's
// own, which it does not change.
func FuzzStatedAmounts(f *testing.F) {
	for _, s := range []string{"305 or 610", "$1,220.50", "req-12", "requests-3", "inv-7 2026-01-05", "10:3", "1.5k", "2026-01-05 10:30", "9,999,999,999.999", ",,1,,", "1e5", "3-", "7."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got := StatedAmounts(text, names)
		for _, v := range got {
			if v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
				t.Fatalf("StatedAmounts(%q) gave %v", text, v)
			}
		}
		if after := StatedAmounts(text+" 42", names); !slices.Equal(after, append(slices.Clip(got), 42)) {
			t.Fatalf("StatedAmounts(%q) = %v, and with \" 42\" after it %v", text, got, after)
		}
	})
}

func TestWithoutWord(t *testing.T) {
	for _, c := range []struct{ text, value, want string }{
		{"Not Approved, approved.", "approved", "not  ,  ."},
		{"not approved", "not approved", " "},
		{"approvedly approved", "approved", "approvedly  "},
		{"abc", "", "abc"},
	} {
		if got := withoutWord(c.text, c.value); got != c.want {
			t.Errorf("withoutWord(%q, %q) = %q, want %q", c.text, c.value, got, c.want)
		}
	}
}

func TestStatesValue(t *testing.T) {
	values := []string{"approved", "not approved", "partial refund", "refund"}
	for _, c := range []struct {
		texts []string
		want  string
		ok    bool
	}{
		{[]string{"r-1: approved."}, "approved", true},
		{[]string{"r-1: Not Approved."}, "not approved", true},
		{[]string{"r-1: not approved."}, "approved", false}, // the longer value is stated
		{[]string{"r-1: approved or not approved"}, "approved", false},
		{[]string{"r-1: approved", "r-1: not approved after all"}, "approved", false},
		{[]string{"r-1: a partial refund"}, "refund", false},
		{[]string{"r-1: a refund"}, "refund", true},
		{[]string{"r-1: a refund", "r-1: the refund is sent"}, "refund", true},
		{[]string{"r-1: done"}, "approved", false},
		{[]string{"r-1: gold"}, "gold", true}, // a value the rule's text does not name
		{[]string{"r-1: a Partial-Refund"}, "partial refund", true},
		{[]string{"r-1: a partial  refund"}, "partial_refund", true},
		{[]string{"r-1: a partial-refund, or a refund"}, "partial refund", false},
		{[]string{"r-1: approved, or not ａｐｐｒｏｖｅｄ"}, "approved", false}, // full-width
		{[]string{"r-1: a partial re\u00adfund"}, "refund", false},      // a soft hyphen
		{[]string{"r-1: a partial\u200b refund"}, "refund", false},      // a zero-width space
		{[]string{"r-1: approved"}, "", false},                          // an empty value is in no text
	} {
		if got := statesValue(c.texts, c.want, values); got != c.ok {
			t.Errorf("statesValue(%q, %q) = %v, want %v", c.texts, c.want, got, c.ok)
		}
	}
}

// replyState is a state of three cases.
func replyState() *State {
	return &State{cases: map[string]*Case{"requests-3": {}, "requests-4": {}, "requests-12": {}}}
}

func TestAboutCase(t *testing.T) {
	s := replyState()
	for _, c := range []struct{ text, id, want string }{
		{"Hello cara, case requests-3 is handled: 305.", "requests-3", "Hello cara, case requests-3 is handled: 305."},
		{"requests-3: done. The refund is 305.", "requests-3", "requests-3: done. The refund is 305."},
		{"Refunds done: requests-3 305, requests-4 610.", "requests-3", "Refunds done: requests-3 305, "},
		{"Refunds done: requests-3 305, requests-4 610.", "requests-4", "requests-4 610."},
		{"305 for requests-3; 610 for requests-4", "requests-3", "305 for requests-3; "},
		{"requests-3 1,220, requests-4 610", "requests-3", "requests-3 1,220, "},
		{"requests-3\nrequests-4: 610", "requests-3", "requests-3\n"},
		{"requests-3: 305 | requests-4: 610", "requests-3", "requests-3: 305 |"},
		{"requests-3: 305 \u2014 requests-4: 610", "requests-3", "requests-3: 305 \u2014 "},
		{"requests-3: 305.\u00a0requests-4: 610", "requests-3", "requests-3: 305.\u00a0"},
		{"requests-3: 305 (requests-4: 610) thanks", "requests-3", "requests-3: 305 "},
		{"requests-3: 305 (requests-4: 610) thanks", "requests-4", "(requests-4: 610) thanks"},
		// A clause naming several cases is about each.
		{"requests-3 and requests-4: 305 and 610", "requests-4", "requests-3 and requests-4: 305 and 610"},
		{"requests-3 and requests-12", "requests-12", "requests-3 and requests-12"},
		{"requests-3 and requests-99: 305", "requests-3", "requests-3 and requests-99: 305"}, // no case requests-99
		// A clause naming no case is about the one named last before it.
		{"requests-4: refunded 133, or 266, or 500. cc requests-3", "requests-4", "requests-4: refunded 133, \nor 266, \nor 500. "},
		{"requests-4: refunded 133, or 266, or 500. cc requests-3", "requests-3", "cc requests-3"},
		{"requests-3: 305, or as with requests-4, 1220", "requests-3", "requests-3: 305, "},
		// and those before any names one about each.
		{"Refunds: 305, 610. requests-3 and requests-4 done", "requests-3", "Refunds: 305, \n610. \nrequests-3 and requests-4 done"},
		{"Refunds: 305, 610. requests-3, then requests-4: 610", "requests-3", "Refunds: 305, \n610. \nrequests-3, "},
		// Cases are named in any case.
		{"REQUESTS-3: 305, Requests-4: 610", "requests-3", "REQUESTS-3: 305, "},
		{"requests-3: 305, Requests-4: 610", "REQUESTS-3", "requests-3: 305, "},
	} {
		if got := s.AboutCase(c.text, c.id); got != c.want {
			t.Errorf("AboutCase(%q, %q) = %q, want %q", c.text, c.id, got, c.want)
		}
	}
}

func TestIsName(t *testing.T) {
	w := &worlds.World{Systems: []worlds.System{{ID: "billing", Types: []worlds.RecordType{{ID: "invoice"}, {ID: "note"}}}}}
	s := &State{
		World:   w,
		cases:   map[string]*Case{"requests-3": {}},
		members: map[string]*Member{"bot7": {}},
		tasks:   map[string]*Task{"t-12": {}},
		records: map[string]*Record{"invoice/inv-7": {}, "note/N-9": {}, "note/n-10": {Deleted: true}},
	}
	for word, want := range map[string]bool{
		"requests-3": true, "REQUESTS-3": true, "bot7": true, "T-12": true, "inv-7": true, "Inv-7": true,
		"N-9": true, "n-9": false, // an agent's record, as written or lower-case
		"n-10":       false, // deleted
		"requests-4": false, "inv-8": false, "billing": false, "invoice/inv-7": false,
	} {
		if got := s.isName(word); got != want {
			t.Errorf("isName(%q) = %v, want %v", word, got, want)
		}
	}
}

// FuzzAboutCase: any message is read for each case without a panic; what
// it says about a case is its own clauses (each found in the text); and a
// message naming no other case is about the case whole.
func FuzzAboutCase(f *testing.F) {
	for _, s := range []string{"requests-3: 305, requests-4: 610", "305 for requests-3; 610 for requests-4 | requests-12 — 1220", "requests-4: 1. cc requests-3", "\t,.;|", "requests-3.\u00a0requests-4"} {
		f.Add(s)
	}
	s := replyState()
	f.Fuzz(func(t *testing.T, text string) {
		for _, id := range []string{"requests-3", "requests-4"} {
			about := s.AboutCase(text, id)
			if !s.namesOther(text, id) {
				if about != text {
					t.Fatalf("AboutCase(%q, %q) = %q; it names no other case", text, id, about)
				}
				continue
			}
			for _, part := range strings.Split(about, "\n") {
				if !strings.Contains(text, part) {
					t.Fatalf("AboutCase(%q, %q) gave %q, not in the text", text, id, part)
				}
			}
		}
	})
}
