package org

import (
	"math"
	"slices"
	"strings"
	"testing"
)

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
		// Numbers written as part of a name are not stated.
		{"requests-12 inv-7 inv_8 inv9 req-450-b", nil},
		{"on 2026-01-05 at 10:30, 05/01, v1.2.3 and 1.2.3", nil},
		{"ticket #12", nil},
		{"3a4 and x86_64", nil},
		{"", nil},
		{"1,22", []float64{1, 22}}, // not a thousands group
		{"1,2345", []float64{1, 2345}},
		{"9" + strings.Repeat("0", 400), []float64{math.MaxFloat64}},
		{".5k or 0.25", []float64{500, 0.25}},
		{".5.3", nil},
		{"３０５ or ６１０", []float64{305, 610}},             // full-width
		{"305 or ٦١٠", []float64{305, math.MaxFloat64}}, // Arabic-Indic: a number, of no amount's value
		{"naïve 305", []float64{305}},
	} {
		if got := StatedAmounts(c.text); !slices.Equal(got, c.want) {
			t.Errorf("StatedAmounts(%q) = %v, want %v", c.text, got, c.want)
		}
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
		{[]string{"case requests-3: ３０５"}, "305", true, true},
		{[]string{"case requests-3: 305 or ６１０"}, "305", false, true},
		{[]string{"case requests-3: 305 or ٣٠٥"}, "305", false, true},
		{[]string{"case requests-3: 3050"}, "305", false, true},
		{[]string{"case requests-3 is handled"}, "305", false, true},
		{nil, "305", false, true},
		{[]string{"case requests-3: approved"}, "approved", false, false},
	} {
		only, numeric := statesOnly(c.texts, c.want)
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
	for _, s := range []string{"305 or 610", "$1,220.50", "req-12", "1.5k", "2026-01-05 10:30", "9,999,999,999.999", ",,1,,", "1e5", "3-", "7."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got := StatedAmounts(text)
		for _, v := range got {
			if v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
				t.Fatalf("StatedAmounts(%q) gave %v", text, v)
			}
		}
		if after := StatedAmounts(text + " 42"); !slices.Equal(after, append(slices.Clip(got), 42)) {
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
	} {
		if got := statesValue(c.texts, c.want, values); got != c.ok {
			t.Errorf("statesValue(%q, %q) = %v, want %v", c.texts, c.want, got, c.ok)
		}
	}
}

func TestAboutCase(t *testing.T) {
	s := &State{cases: map[string]*Case{"requests-3": {}, "requests-4": {}, "requests-12": {}}}
	for _, c := range []struct{ text, id, want string }{
		{"Hello cara, case requests-3 is handled: 305.", "requests-3", "Hello cara, case requests-3 is handled: 305."},
		{"requests-3: done. The refund is 305.", "requests-3", "requests-3: done. The refund is 305."},
		{"Refunds done: requests-3 305, requests-4 610.", "requests-3", "Refunds done: requests-3 305, "},
		{"Refunds done: requests-3 305, requests-4 610.", "requests-4", "requests-4 610."},
		{"305 for requests-3; 610 for requests-4", "requests-3", "305 for requests-3; "},
		{"requests-3 1,220, requests-4 610", "requests-3", "requests-3 1,220, "},
		{"requests-3\nrequests-4: 610", "requests-3", "requests-3\n"},
		{"requests-3 and requests-4: 305 and 610", "requests-4", "requests-3 and requests-4: 305 and 610"},
		{"requests-3 and requests-12", "requests-12", "requests-3 and requests-12"},
		{"requests-3 and requests-99: 305", "requests-3", "requests-3 and requests-99: 305"}, // no case requests-99
	} {
		if got := s.aboutCase(c.text, c.id); got != c.want {
			t.Errorf("aboutCase(%q, %q) = %q, want %q", c.text, c.id, got, c.want)
		}
	}
}
