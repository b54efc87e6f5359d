package policies

import (
	"maps"
	"slices"

	"github.com/corpsim/corpsim/org"
)

// This file breaks the outcome score down (format 2 systems): one card per
// outcome of every case opened, beside the process score, so that a
// scorecard says which case's which step left what behind.

// OutcomeCard is one outcome of a case step, as the rubric verified it
// from the state: Right of its Fields held the expected value both when
// the step was completed and at the end, Score is their share (the
// outcome's part of Scorecard.Outcome), and Wrong says the step was
// completed with its outcome unmet (a wrong outcome: it earns nothing).
type OutcomeCard struct {
	Case     string  `json:"case"`
	Template string  `json:"template"`
	Step     string  `json:"step"`
	Task     string  `json:"task"`
	Record   string  `json:"record"` // the record type
	ID       string  `json:"id"`
	By       string  `json:"by,omitempty"` // the member who completed the step
	Done     bool    `json:"done"`
	Score    float64 `json:"score"`
	Right    int     `json:"right"`
	Fields   int     `json:"fields"`
	Wrong    bool    `json:"wrong,omitempty"`
	// Unmet names the fields the record did not hold the expected value
	// of, at completion or at the end, in name order.
	Unmet []string `json:"unmet,omitempty"`
}

// OutcomeCards lists the outcomes of the cases opened, in the order the
// cases opened and their outcomes are declared. Their scores add up to
// OutcomeScore's and their Wrong ones to its wrong outcomes.
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
	for _, o := range c.Outcomes {
		card := OutcomeCard{Case: c.ID, Template: c.Template, Step: o.Step, Task: org.StepTaskID(c.ID, o.Step),
			Record: o.Record, ID: o.ID, Done: o.Done, Fields: len(o.Fields)}
		if t := s.Task(card.Task); t != nil {
			card.By = t.DoneBy
		}
		if o.Done && len(o.Fields) > 0 {
			r := s.Record(o.Record, o.ID)
			for _, k := range slices.Sorted(maps.Keys(o.Fields)) {
				want := o.Fields[k]
				at := org.SameValue(o.AtDone[k], want)
				card.Wrong = card.Wrong || !at
				if at && r != nil && !r.Deleted && org.SameValue(r.Fields[k], want) {
					card.Right++
				} else {
					card.Unmet = append(card.Unmet, k)
				}
			}
			card.Score = round(float64(card.Right) / float64(card.Fields))
		}
		out = append(out, card)
	}
	return out
}
