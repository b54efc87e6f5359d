package org

import (
	"cmp"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// ReplyFormat is the first log format whose reply outcomes are judged on
// everything the step's doer told the requester about the case since the
// step's task was created (State.Told, AboutCase): the reply carries a
// number only when those messages state it and no other amount
// (StatedAmounts), another value only when they state no other value its
// rule can give (statesValue). Before it, one message containing the value
// as a word was enough, so a reply listing every amount the answer might
// be ("305, 610 or 1220") or hedging in two messages was scored right.
const ReplyFormat = 6

// StatedAmounts returns the numbers text states, in order: "305",
// "$1,220", "610.00", "152,50" (a decimal comma), "-4" (its sign is not
// read: 4), "1.5k" (1500), "2m" (2,000,000), and any number written among
// letters or signs: "USD1112", "#610", "x610", "31-126" (31 and 126),
// "05/01" (5 and 1), "2nd" (2), read as it reads (readable: "⁶¹⁰" is
// 610); a number in another script's digits or numerals is stated as
// math.MaxFloat64, equal to no amount. What is not a number is a word name
// reports is a name (the ID of a case, a member, a record, a task: "req-12",
// "inv-7", "requests-3.confirm"; with a letter and a digit, so never "-610"
// or "31-126"), an ISO date ("2026-01-05") and a clock time ("10:30",
// "10:30:15"). A name is a run of letters, digits, '-' and '_' as written,
// or such runs joined by single dots; name nil knows none.
//
// The reading fails closed: a number it cannot place is stated, so a reply
// hedging in any notation states more than one amount, and a right reply
// holds no number but its amount, IDs, dates and times.
func StatedAmounts(text string, name func(word string) bool) []float64 {
	text = blankNames(readable(text), name)
	var out []float64
	for i := 0; i < len(text); {
		if text[i] >= utf8.RuneSelf {
			// Digits (or numerals) of another script: a number, whose
			// value no amount is taken to have (so it is never the one
			// wanted).
			r, n := utf8.DecodeRuneInString(text[i:])
			if !unicode.IsNumber(r) {
				i += n
				continue
			}
			for i < len(text) {
				if r, n = utf8.DecodeRuneInString(text[i:]); !unicode.IsNumber(r) {
					break
				}
				i += n
			}
			out = append(out, math.MaxFloat64)
			continue
		}
		if !isDigit(text[i]) {
			i++
			continue
		}
		v, end := amountAt(text, i)
		out = append(out, v)
		i = end
	}
	return out
}

// dateTime finds ISO dates (with a time of day, seconds, fraction and zone
// after them or not) and clock times.
var dateTime = regexp.MustCompile(`[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]+)?)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?)?|[0-9]{1,2}:[0-9]{2}(?::[0-9]{2})?`)

// blankNames is text with its dates, times and names (StatedAmounts)
// written as spaces. A name has a letter and a digit (digits alone, or
// with '-' and '_', are a number: "-610", "31-126"). A date or time joined
// to more digits ("12026-01-05", "10:305") is none.
func blankNames(text string, name func(string) bool) string {
	b := []byte(text)
	blank := func(i, j int) {
		for ; i < j; i++ {
			b[i] = ' '
		}
	}
	for _, m := range dateTime.FindAllStringIndex(text, -1) {
		if (m[0] == 0 || !isDigit(text[m[0]-1])) && (m[1] == len(text) || !isDigit(text[m[1]])) {
			blank(m[0], m[1])
		}
	}
	if name != nil {
		for i := 0; i < len(b); {
			if !isWordByte(b[i]) {
				i++
				continue
			}
			// A word, and the words joined to it by single dots (a
			// task's ID: "requests-3.confirm"): the whole, or each word.
			j := i
			var dots []int
			for {
				for j < len(b) && isWordByte(b[j]) {
					j++
				}
				if j+1 < len(b) && b[j] == '.' && isWordByte(b[j+1]) {
					dots = append(dots, j)
					j++
					continue
				}
				break
			}
			if len(dots) > 0 && isNameWord(b[i:j]) && name(string(b[i:j])) {
				blank(i, j)
			} else {
				for _, end := range append(dots, j) {
					if isNameWord(b[i:end]) && name(string(b[i:end])) {
						blank(i, end)
					}
					i = end + 1
				}
			}
			i = j
		}
	}
	return string(b)
}

// amountAt reads the number whose first digit is text[i]: its digits, a
// '.' before them after no letter, digit, '-' or '_' (".5", " $.5"),
// thousands groups (",ddd"), a decimal point or comma (",5", ",50": a comma before one or
// two digits and no more), and a multiplier right after it ("k", "m",
// "mn", "mm", "b", "bn", ended by no letter). It returns the value and the
// index after the number (before any unit written after it: "305USD").
func amountAt(text string, i int) (float64, int) {
	j := i
	for j < len(text) && isDigit(text[j]) {
		j++
	}
	digits := make([]byte, 0, 24)
	point := i > 0 && text[i-1] == '.' && (i == 1 || !isWordByte(text[i-2]))
	if point {
		digits = append(digits, "0."...) // ".5k"
	}
	digits = append(digits, text[i:j]...)
	for j < len(text) && text[j] == ',' && threeDigits(text, j+1) {
		digits = append(digits, text[j+1:j+4]...)
		j += 4
	}
	if !point && j+1 < len(text) && (text[j] == '.' || text[j] == ',') && isDigit(text[j+1]) {
		k := j + 1
		for k < len(text) && isDigit(text[k]) {
			k++
		}
		if text[j] == '.' || k-j <= 3 { // ",5" and ",50"; ",5000" is a list
			digits = append(append(digits, '.'), text[j+1:k]...)
			j = k
		}
	}
	v, _ := strconv.ParseFloat(string(digits), 64) // digits, so at worst out of range: +Inf
	k := j
	for k < len(text) && isLetter(text[k]) {
		k++
	}
	switch strings.ToLower(text[j:k]) {
	case "k":
		v *= 1e3
	case "m", "mn", "mm":
		v *= 1e6
	case "b", "bn":
		v *= 1e9
	}
	return min(v, math.MaxFloat64), j // a number past float64 is still one stated
}

// readable is text as it reads: in Unicode's compatibility form (NFKC:
// full-width, superscript and circled digits are digits, full-width
// letters are letters) and without its format characters (zero-width
// spaces, soft hyphens), so that "⁶¹⁰", "６１０" and "6\u200b10" are 610 and
// "den\u00adied" is "denied".
func readable(text string) string {
	ascii := true
	for i := 0; i < len(text); i++ {
		if text[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return text
	}
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, norm.NFKC.String(text))
}

// SameAmount reports whether two amounts are one: equal to nine
// significant digits, so that "610.00" states 610 and 0.30000000000000004
// is stated as 0.3.
func SameAmount(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// statesOnly reports whether texts, together, state want and no other
// amount (StatedAmounts, with names those name knows), for a want that is
// a number (numeric false otherwise).
func statesOnly(texts []string, want string, name func(string) bool) (only, numeric bool) {
	w, err := strconv.ParseFloat(strings.TrimSpace(want), 64)
	if err != nil || math.IsInf(w, 0) || math.IsNaN(w) {
		return false, false
	}
	stated := false
	for _, t := range texts {
		for _, v := range StatedAmounts(t, name) {
			if !SameAmount(math.Abs(v), math.Abs(w)) {
				return false, true
			}
			stated = true
		}
	}
	return stated, true
}

// statesValue reports whether texts, together, state want and no other of
// values as words of their own, case-insensitively and with '-', '_' and
// spaces alike ("Half-Refund" states "half refund"). Longer values are
// found first and blanked out, so that "not approved" states that and not
// "approved" as well.
func statesValue(texts []string, want string, values []string) bool {
	if want = plainWords(want); want == "" {
		return false // as ContainsWord: an empty value is in no text
	}
	vals := []string{want}
	for _, v := range values {
		if v = plainWords(v); v != "" && !slices.Contains(vals, v) {
			vals = append(vals, v)
		}
	}
	slices.SortStableFunc(vals, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	stated := false
	for _, text := range texts {
		rest := plainWords(text)
		for _, v := range vals {
			if nextWord(rest, v, 0) < 0 {
				continue
			}
			if v != want {
				return false
			}
			stated = true
			rest = withoutWord(rest, v)
		}
	}
	return stated
}

// plainWords is text as it reads (readable), lower-cased, its runs of
// '-', '_' and spaces written as one space and trimmed.
func plainWords(text string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(readable(text)), func(r rune) bool {
		return r == '-' || r == '_' || unicode.IsSpace(r)
	}), " ")
}

// withoutWord is text, lower-cased, with each place it contains value as
// a word of its own (ContainsWord) blanked out.
func withoutWord(text, value string) string {
	text, value = strings.ToLower(text), strings.ToLower(value)
	if value == "" {
		return text
	}
	var b strings.Builder
	i := 0
	for j := nextWord(text, value, 0); j >= 0; j = nextWord(text, value, i) {
		b.WriteString(text[i:j])
		b.WriteByte(' ')
		i = j + len(value)
	}
	b.WriteString(text[i:])
	return b.String()
}

// AboutCase is what text says about case id, as a reply outcome of
// log format ReplyFormat on reads it. A message naming no other case is
// about id whole. One naming others too is read clause by clause (clauses
// end at a comma, a semicolon or a sentence's end followed by a space,
// before a '(', or at a new line, a tab, a '|' or a dash between spaces): a clause naming cases is about those, a clause naming none
// about the cases the last one naming any was about, and the clauses
// before the first naming any about every case. So "requests-3: 305,
// requests-4: 610" says 305 about requests-3, and "requests-4: 133, or
// 266. cc requests-3" says 133 and 266 about requests-4.
//
// What a message says about a case depends on the text and on which cases
// exist, never on the value the case's reply should carry: a hedge whose
// other value is read as about another case (or not read at all) commits
// this case to the one value read, and earns nothing the commitment
// would not.
func (s *State) AboutCase(text, id string) string {
	if !s.namesOther(text, id) {
		return text
	}
	id = strings.ToLower(id)
	var about []string
	mine := true // the clauses before any case is named are about each
	for at := 0; at < len(text); {
		end := at + clauseEnd(text[at:])
		if words := WordsOf(text[at:end]); slices.ContainsFunc(words, func(w string) bool { return s.cases[w] != nil }) {
			mine = slices.Contains(words, id)
		}
		if mine {
			about = append(about, text[at:end])
		}
		at = end
	}
	return strings.Join(about, "\n")
}

// namesOther reports whether text names a case of the state other than
// id, case-insensitively (as NamesCase names id).
func (s *State) namesOther(text, id string) bool {
	id = strings.ToLower(id)
	return slices.ContainsFunc(WordsOf(text), func(w string) bool { return w != id && s.cases[w] != nil })
}

// isName reports whether word, a run of letters, digits, '-' and '_' as
// written, is the ID of a case, a member, a task or a record of the state:
// a name, whose digits state no amount (StatedAmounts). A world's IDs are
// lower-case, so they are found in any case; a record an agent created is
// found as written or in lower case, until it is deleted.
func (s *State) isName(word string) bool {
	lower := strings.ToLower(word)
	if s.cases[lower] != nil || s.members[lower] != nil || s.tasks[lower] != nil {
		return true
	}
	for i := range s.World.Systems {
		for _, t := range s.World.Systems[i].Types {
			for _, id := range [...]string{word, lower} {
				if r := s.records[recordKey(t.ID, id)]; r != nil && !r.Deleted {
					return true
				}
			}
		}
	}
	return false
}

// clauseEnd returns the length of text's first clause, its separator
// included: up to a new line, a carriage return, a tab or a '|'; a ',',
// ';', '.', '!' or '?' followed by white space; a dash (-, – or —)
// between spaces; or up to a '(' (not included). The whole text when
// none.
func clauseEnd(text string) int {
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '\n', '\r', '\t', '|':
			return i + 1
		case ',', ';', '.', '!', '?':
			if r, n := utf8.DecodeRuneInString(text[i+1:]); n > 0 && unicode.IsSpace(r) {
				return i + 1 + n
			}
		case '(':
			if i > 0 {
				return i
			}
		case ' ':
			for _, sep := range []string{" - ", " \u2013 ", " \u2014 "} {
				if strings.HasPrefix(text[i:], sep) {
					return i + len(sep)
				}
			}
		}
	}
	return len(text)
}

func isDigit(b byte) bool  { return b >= '0' && b <= '9' }
func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

// isNameWord reports whether w may be a name with digits: it has a letter
// and a digit.
func isNameWord(w []byte) bool {
	return slices.ContainsFunc(w, isLetter) && slices.ContainsFunc(w, isDigit)
}

func isWordByte(b byte) bool { return isDigit(b) || isLetter(b) || b == '-' || b == '_' }

func threeDigits(text string, i int) bool {
	return i+3 <= len(text) && isDigit(text[i]) && isDigit(text[i+1]) && isDigit(text[i+2]) &&
		(i+3 == len(text) || !isDigit(text[i+3]))
}
