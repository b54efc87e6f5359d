package org

import (
	"cmp"
	"slices"
	"strings"

	"github.com/corpsim/corpsim/clock"
)

// namedIndex finds the messages that name a case (NamesCase) without
// reading every message sent since: a reply outcome is judged at its
// step's completion on what its doer told the requester about the case
// (Told), and in a session with a backlog of cases that step may have been
// created thousands of messages before. Built lazily, the first time a
// case's messages are asked for, and caught up at each later ask; derived
// (not hashed, not in snapshots), empty in a restored state.
//
// It lists, for each word of the messages (CaseWords) that a case ID can
// be, the positions in State.Messages of the messages containing it, in
// the order sent. A case ID made of word characters is named by a message
// exactly when it is one of that message's words (ContainsWord), so the
// list of the ID's lower-cased form holds exactly the messages that name
// it. An ID that is not such a word is looked for the old way.
type namedIndex struct {
	upTo   int                // the messages indexed: State.Messages[:upTo]
	byWord map[string][]int32 // lower-cased word -> positions of the messages containing it
}

// indexedWord reports whether w is a word the index lists: one that ends
// in a digit after a '-', as case IDs do (an arrival's or template's ID,
// '-', a number). Amounts and plain words are left out (dates written
// 2026-02-03 are in), so that the index stays a small fraction of the
// messages' text.
func indexedWord(w string) bool {
	n := len(w)
	if n < 3 || w[n-1] < '0' || w[n-1] > '9' {
		return false
	}
	return strings.IndexByte(w, '-') > 0
}

// catchUp indexes the messages sent since the last ask.
func (x *namedIndex) catchUp(msgs []*Message) {
	if x.upTo == len(msgs) {
		return
	}
	if x.byWord == nil {
		x.byWord = map[string][]int32{}
	}
	for i := x.upTo; i < len(msgs); i++ {
		words := WordsOf(msgs[i].Text)
		for j, w := range words {
			if !indexedWord(w) || slices.Contains(words[:j], w) {
				continue // a message is listed once under each of its words
			}
			x.byWord[w] = append(x.byWord[w], int32(i))
		}
	}
	x.upTo = len(msgs)
}

// naming returns the positions of the messages naming case id, in the
// order sent, and whether the index can answer for id (an ID it lists).
func (s *State) naming(id string) ([]int32, bool) {
	if !isWordID(id) {
		return nil, false // not one word: NamesCase reads such an ID as words
	}
	key := strings.ToLower(id)
	if !indexedWord(key) {
		return nil, false
	}
	s.namedIx.catchUp(s.Messages)
	return s.namedIx.byWord[key], true
}

// isWordID reports whether id is made of ASCII word characters of either
// case, so that its lower-cased form is one word of a message that names
// it (NamesCase reads any other ID as words).
func isWordID(id string) bool {
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// toldIndexed is Told's scan over the messages naming c alone.
func (s *State) toldIndexed(pos []int32, from, until clock.Time, doer, requester string) []*Message {
	var out []*Message
	for _, i := range pos {
		m := s.Messages[i]
		if m.SentAt > until {
			break
		}
		if m.SentAt >= from && m.From == doer && m.To == requester {
			out = append(out, m)
		}
	}
	return out
}

// fileCase adds an opened case to the lookups by ID: by its own ID, and
// by its lower-cased ID too when that differs (a message names a case
// case-insensitively: CasesNamedBy), counts the records its outcomes name
// (RecordNamed), and the cases its member opened of its template (an
// open_case quota: checked at every action and shown in every view of the
// member, which scanned every case).
func (s *State) fileCase(c *Case) {
	s.cases[c.ID] = c
	if low := strings.ToLower(c.ID); low != c.ID {
		if s.folded == nil {
			s.folded = map[string][]*Case{}
		}
		s.folded[low] = append(s.folded[low], c)
	}
	if c.OpenedBy != "" {
		if s.openedBy == nil {
			s.openedBy = map[string]int{}
		}
		s.openedBy[c.OpenedBy+"\x00"+c.Template]++
	}
	for i := range c.Outcomes {
		if o := &c.Outcomes[i]; o.Record != "" {
			if s.namedRecords == nil {
				s.namedRecords = map[string]int{}
			}
			s.namedRecords[recordKey(o.Record, o.ID)]++
		}
	}
}

// OpenedBy counts the cases member has opened of template.
func (s *State) OpenedBy(member, template string) int { return s.openedBy[member+"\x00"+template] }

// RecordNamed reports whether the outcome of any case opened so far names
// record id of type typ.
func (s *State) RecordNamed(typ, id string) bool { return s.namedRecords[recordKey(typ, id)] > 0 }

// CasesNamedBy returns the cases that a text split into words names
// (CaseWords.Name of each case's ID), in the order of State.Cases: what
// reading every case's ID against the words finds, at the cost of a lookup
// a word.
func (s *State) CasesNamedBy(words CaseWords) []*Case {
	var out []*Case
	for i, w := range words {
		if slices.Contains(words[:i], w) { // messages are short: a set would cost more
			continue
		}
		if c := s.cases[w]; c != nil { // w is lower-cased: so is the ID
			out = append(out, c)
		}
		out = append(out, s.folded[w]...)
	}
	slices.SortFunc(out, func(a, b *Case) int { return cmp.Compare(a.num, b.num) })
	return out
}
