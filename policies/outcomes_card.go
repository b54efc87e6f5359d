package policies

import (
	"maps"
	"slices"

	"github.com/corpsim/corpsim/org"
)

// This file breaks the outcome score down (format 2 systems): one card per
// outcome of every case opened — record fields, a decision, a reply, a
// created record or a meeting — beside the process score, so that a
// scorecard says which case's which step left what behind. The cards are
// the outcome score: scoreCards adds them up.

// OutcomeMeeting is the kind of a meeting's card (the other kinds are
// worlds.KindDecision, KindReply and KindCreate; "" is record fields).
const OutcomeMeeting = "meeting"

// OutcomeCard is one outcome of a case step, as the rubric verified it
// from the state: Right of its Fields held the expected value both when
// the step was completed and at the end (a meeting's: of its criteria,
// MeetingCriteria), Score is the outcome's part of Scorecard.Outcome, and
// Wrong says the step was completed with its outcome unmet (a wrong
// outcome: it earns nothing).
type OutcomeCard struct {
	Case     string  `json:"case"`
	Template string  `json:"template"`
	Step     string  `json:"step"`
	Task     string  `json:"task"`
	Kind     string  `json:"kind,omitempty"`
	Record   string  `json:"record"` // the record type
	ID       string  `json:"id"`
	By       string  `json:"by,omitempty"` // the member who completed the step
	Done     bool    `json:"done"`
	Score    float64 `json:"score"`
	Right    int     `json:"right"`
	Fields   int     `json:"fields"`
	Wrong    bool    `json:"wrong,omitempty"`
	// Unmet names the fields (a meeting's criteria) that missed, at
	// completion or at the end, in name order (criteria in their order).
	Unmet []string `json:"unmet,omitempty"`
	// Redone are the earlier completions of the step that its case's
	// requester reopened (each a wrong outcome: the case was closed with
	// it unmet), oldest first.
	Redone []Completion `json:"redone,omitempty"`

	raw float64 // Score before rounding, which scoreCards adds up
}

// Completion is a step's task and who completed it.
type Completion struct {
	Task string `json:"task"`
	By   string `json:"by"`
}

// OutcomeCards lists the outcomes of the cases opened, in the order the
// cases opened, their outcomes declared, then their meetings. Their
// scores add up to the scorecard's outcome and their Wrong ones (with
// each card's Redone) to its wrong outcomes.
func OutcomeCards(s *org.State) []OutcomeCard {
	var out []OutcomeCard
	for _, c := range s.Cases {
		out = append(out, CaseOutcomeCards(s, c)...)
	}
	return out
}

// CaseOutcomeCards lists the outcomes of case c, as OutcomeCards does.
func CaseOutcomeCards(s *org.State, c *org.Case) []OutcomeCard {
	var out []OutcomeCard
	for i := range c.Outcomes {
		out = append(out, outcomeCard(s, c, &c.Outcomes[i]))
	}
	for i := range c.Meetings {
		out = append(out, meetingCard(s, c, &c.Meetings[i]))
	}
	return out
}

// doneBy fills in the card's task — the step's task in its case now (the
// new task of a step its requester reopened) — and who completed it.
func (card *OutcomeCard) doneBy(s *org.State, c *org.Case) {
	for _, id := range c.Steps {
		if t := s.Task(id); t != nil && t.Spec.Step == card.Step {
			card.Task = id
		}
	}
	if t := s.Task(card.Task); t != nil && card.Done {
		card.By = t.DoneBy
	}
	for _, id := range c.StepTasks(card.Step) {
		if t := s.Task(id); t != nil && id != card.Task && t.Status == org.StatusDone {
			card.Redone = append(card.Redone, Completion{Task: id, By: t.DoneBy})
		}
	}
}

func outcomeCard(s *org.State, c *org.Case, o *org.CaseOutcome) OutcomeCard {
	card := OutcomeCard{Case: c.ID, Template: c.Template, Step: o.Step, Task: org.StepTaskID(c.ID, o.Step),
		Kind: o.Kind, Record: o.Record, ID: o.ID, Done: o.Done, Fields: len(o.Fields)}
	card.doneBy(s, c)
	if !o.Done || len(o.Fields) == 0 {
		return card
	}
	for _, k := range slices.Sorted(maps.Keys(o.Fields)) {
		want := o.Fields[k]
		at := org.SameValue(o.AtDone[k], want)
		card.Wrong = card.Wrong || !at
		if now, ok := s.OutcomeNow(o, k); at && ok && org.SameValue(now, want) {
			card.Right++
		} else {
			card.Unmet = append(card.Unmet, k)
		}
	}
	card.raw = float64(card.Right) / float64(card.Fields)
	card.Score = round(card.raw)
	return card
}

// meetingCard is a meeting's card: its criteria met, worth nothing when
// an attendee cannot come (meetings.go).
func meetingCard(s *org.State, c *org.Case, cm *org.CaseMeeting) OutcomeCard {
	card := OutcomeCard{Case: c.ID, Template: c.Template, Step: cm.Step, Task: org.StepTaskID(c.ID, cm.Step),
		Kind: OutcomeMeeting, Done: cm.Done, Fields: len(MeetingCriteria)}
	card.doneBy(s, c)
	if !cm.Done {
		return card
	}
	if !cm.AtDone {
		card.Wrong, card.Unmet = true, slices.Clone(MeetingCriteria)
		return card
	}
	checks := MeetingChecks(s, cm)
	for k, ok := range checks {
		if ok {
			card.Right++
		} else {
			card.Unmet = append(card.Unmet, MeetingCriteria[k])
		}
	}
	card.Wrong = card.Right < len(checks)
	if checks[3] && checks[4] { // else an attendee cannot come: worth nothing
		card.raw = float64(card.Right) / float64(len(checks))
	}
	card.Score = round(card.raw)
	return card
}
