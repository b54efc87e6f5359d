package org

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ReplyFormat is the first log format whose reply outcomes are judged on
// everything the step's doer told the requester about the case since the
// step's task was created (State.Told, aboutCase): the reply carries a
// number only when those messages state it and no other amount
// (StatedAmounts), another value only when they state no other value its
// rule can give (statesValue). Before it, one message containing the value
// as a word was enough, so a reply listing every amount the answer might
// be ("305, 610 or 1220") or hedging in two messages was scored right.
const ReplyFormat = 6

// StatedAmounts returns the numbers text states, in order: "305", "$1,220",
// "610.00", "-4", "1.5k" (1500), "2m" (2,000,000). A number written as
// part of a name is not stated: a case "requests-12", an invoice "inv7", a
// date "2026-01-05" or "05/01", a time "10:30", a version "1.2.3", a
// reference "#12". A word a number begins ("2nd", "305USD") states it, in
// units of its own; its sign is not read ("-4" states 4).
func StatedAmounts(text string) []float64 {
	text = foldDigits(text)
	var out []float64
	for i := 0; i < len(text); {
		if text[i] >= utf8.RuneSelf {
			// Digits of another script: a number, whose value no amount
			// is taken to have (so it is never the one wanted).
			r, n := utf8.DecodeRuneInString(text[i:])
			if !unicode.IsDigit(r) {
				i += n
				continue
			}
			for i < len(text) {
				if r, n = utf8.DecodeRuneInString(text[i:]); !unicode.IsDigit(r) {
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
		v, end, ok := statedAt(text, i)
		if ok {
			out = append(out, v)
		}
		i = end
	}
	return out
}

// foldDigits writes full-width digits (U+FF10 to U+FF19) as ASCII ones.
func foldDigits(text string) string {
	if !strings.ContainsFunc(text, isFullWidthDigit) {
		return text
	}
	return strings.Map(func(r rune) rune {
		if isFullWidthDigit(r) {
			return '0' + r - '\uff10'
		}
		return r
	}, text)
}

func isFullWidthDigit(r rune) bool { return r >= '\uff10' && r <= '\uff19' }

// statedAt reads the number whose first digit is text[i], returning its
// value, the index after it (and after the name it is part of) and
// whether it is stated as an amount.
func statedAt(text string, i int) (float64, int, bool) {
	named := i > 0 && (isAlnum(text[i-1]) || text[i-1] == '_' || text[i-1] == '#' ||
		text[i-1] == '-' && i > 1 && (isAlnum(text[i-2]) || text[i-2] == '_'))
	j := i
	for j < len(text) && isDigit(text[j]) {
		j++
	}
	digits := text[i:j]
	point := i > 0 && text[i-1] == '.' && (i == 1 || !isAlnum(text[i-2]) && text[i-2] != '_')
	if point {
		digits = "0." + digits // ".5k"
	}
	for j < len(text) && text[j] == ',' && threeDigits(text, j+1) { // thousands: ",ddd"
		digits += text[j+1 : j+4]
		j += 4
	}
	if !point && j+1 < len(text) && text[j] == '.' && isDigit(text[j+1]) {
		k := j + 1
		for k < len(text) && isDigit(text[k]) {
			k++
		}
		digits += text[j:k]
		j = k
	}
	// The letters right after it: a unit or a multiplier.
	k := j
	for k < len(text) && isLetter(text[k]) {
		k++
	}
	suffix := strings.ToLower(text[j:k])
	if joins(text, k) {
		named = true // "3a4", "2026-01-05", "10:30", "1.2.3", "450-b"
		for k < len(text) && (isAlnum(text[k]) || text[k] == '_' || joins(text, k)) {
			k++
		}
	}
	if named {
		return 0, k, false
	}
	v, _ := strconv.ParseFloat(digits, 64) // digits, so at worst out of range: +Inf
	switch suffix {
	case "k":
		v *= 1e3
	case "m", "mn", "mm":
		v *= 1e6
	case "b", "bn":
		v *= 1e9
	}
	return min(v, math.MaxFloat64), k, true // a number past float64 is still one stated
}

// joins reports whether text[k] joins what is before it to more of a
// name: a digit or '_' ("3a4", "inv_7"); '-' before a letter or digit
// ("450-b", "2026-01-05"); '.', ':' or '/' before a digit ("1.2.3",
// "10:30", "05/01"). A sentence's full stop, "Amount:" or "305/month" do
// not join.
func joins(text string, k int) bool {
	if k >= len(text) {
		return false
	}
	switch b := text[k]; {
	case isDigit(b) || b == '_':
		return true
	case b == '-':
		return k+1 < len(text) && isAlnum(text[k+1])
	case b == '.' || b == ':' || b == '/':
		return k+1 < len(text) && isDigit(text[k+1])
	}
	return false
}

// SameAmount reports whether two amounts are one: equal to nine
// significant digits, so that "610.00" states 610 and 0.30000000000000004
// is stated as 0.3.
func SameAmount(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// statesOnly reports whether texts, together, state want and no other
// amount, for a want that is a number (numeric false otherwise).
func statesOnly(texts []string, want string) (only, numeric bool) {
	w, err := strconv.ParseFloat(strings.TrimSpace(want), 64)
	if err != nil || math.IsInf(w, 0) || math.IsNaN(w) {
		return false, false
	}
	stated := false
	for _, t := range texts {
		for _, v := range StatedAmounts(t) {
			if !SameAmount(math.Abs(v), math.Abs(w)) {
				return false, true
			}
			stated = true
		}
	}
	return stated, true
}

// statesValue reports whether texts, together, state want and no other of
// values as words of their own, case-insensitively. Longer values are
// found first and blanked out, so that "not approved" states that and not
// "approved" as well.
func statesValue(texts []string, want string, values []string) bool {
	vals := []string{strings.ToLower(want)}
	for _, v := range values {
		if v = strings.ToLower(v); v != "" && !slices.Contains(vals, v) {
			vals = append(vals, v)
		}
	}
	slices.SortStableFunc(vals, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	want = strings.ToLower(want)
	stated := false
	for _, text := range texts {
		rest := strings.ToLower(text)
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

// aboutCase is what text says about case id. A message naming no other
// case (by an ID as written) is about id whole; one naming others too is
// read clause by clause (clauses end at a comma, a semicolon or a
// sentence's end followed by a space, or at a new line), keeping those
// that name id: "requests-3: 305, requests-4: 610" says 305 about
// requests-3, and a clause naming both cases says what it says about each.
func (s *State) aboutCase(text, id string) string {
	if !s.namesOther(text, id) {
		return text
	}
	var about []string
	for len(text) > 0 {
		end := clauseEnd(text)
		if clause := text[:end]; NamesCase(clause, id) {
			about = append(about, clause)
		}
		text = text[end:]
	}
	return strings.Join(about, "\n")
}

// namesOther reports whether text names a case of the state other than id.
func (s *State) namesOther(text, id string) bool {
	for _, w := range strings.FieldsFunc(text, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) {
		if s.cases[w] != nil && !strings.EqualFold(w, id) {
			return true
		}
	}
	return false
}

// clauseEnd returns the length of text's first clause, its separator
// included: up to a new line, or a ',', ';', '.', '!' or '?' followed by
// a space or a new line; the whole text when none.
func clauseEnd(text string) int {
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '\n':
			return i + 1
		case ',', ';', '.', '!', '?':
			if i+1 < len(text) && (text[i+1] == ' ' || text[i+1] == '\n') {
				return i + 2
			}
		}
	}
	return len(text)
}

func isDigit(b byte) bool  { return b >= '0' && b <= '9' }
func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }
func isAlnum(b byte) bool  { return isDigit(b) || isLetter(b) }

func threeDigits(text string, i int) bool {
	return i+3 <= len(text) && isDigit(text[i]) && isDigit(text[i+1]) && isDigit(text[i+2]) &&
		(i+3 == len(text) || !isDigit(text[i+3]))
}
