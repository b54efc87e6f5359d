package policies

import (
	"fmt"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
)

// This file scores outcomes (format 2 systems): what a case's steps must
// leave behind on records, verified from the state and never from what a
// member claims. A field counts when the record held its expected value
// both when the step was completed and at the end; a step's outcome score
// is the share of its fields that count (partial credit per field). A
// step completed with its outcome unmet earns nothing (it does not
// verify) and is counted as a wrong outcome, apart from policy
// violations. Every write no case in the writer's hands asked for is
// collateral damage and costs the violation penalty.

// outcomeUnmet is why a completed step does not verify on its outcome:
// a field the record did not hold the expected value of at completion.
func outcomeUnmet(s *org.State, t *org.Task) string {
	c := s.CaseOf(t)
	if c == nil {
		return ""
	}
	if why := reopenedStep(c, t); why != "" {
		return why
	}
	if why := meetingUnmet(s, t); why != "" { // meetings.go
		return why
	}
	if o, k, ok := c.UnmetField(t.Spec.Step); ok {
		return fmt.Sprintf("wrong outcome: %s %s was %v at completion, want %v", outcomeName(o), k, jsonText(o.AtDone[k]), jsonText(o.Fields[k]))
	}
	return ""
}

func jsonText(x any) string {
	if x == nil {
		return "unset"
	}
	return fmt.Sprint(x)
}

// scoreCards is the outcome score of the cards of a state (OutcomeCards):
// the sum over the outcomes of the cases opened (record fields, decisions,
// replies, created records and meetings) of each one's share right at
// completion and at the end; max is how many outcomes there are; wrong
// counts the steps completed with their outcome unmet, those a requester
// reopened included.
func scoreCards(cards []OutcomeCard) (score, max float64, wrong int) {
	for _, c := range cards {
		max++
		score += c.raw
		if c.Wrong {
			wrong++
		}
		wrong += len(c.Redone)
	}
	return round(score), max, wrong
}

// scoreOutcomes fills in the scorecard's outcome figures and charges the
// collateral damage.
func (c *Scorecard) scoreOutcomes(s *org.State) {
	if len(s.World.Systems) == 0 {
		return
	}
	c.Outcomes = OutcomeCards(s)
	c.Outcome, c.OutcomeMax, c.WrongOutcomes = scoreCards(c.Outcomes)
	c.Collateral = s.Collateral
	c.Penalties += float64(s.Collateral) * s.World.Scoring.ViolationPenalty
}

// WrongPenalties is what the wrong completions of case steps cost under
// the world's scoring.wrong_penalty: one penalty for every completion of a
// step whose outcome was unmet, a completion its requester reopened
// included (each was unmet when done). The dense rewards charge each at
// its task.completed (wrongDelta), so that they add up to the score.
func WrongPenalties(s *org.State) float64 {
	pen := s.World.Scoring.WrongPenalty
	if pen == 0 {
		return 0
	}
	n := 0
	for _, c := range s.Cases {
		for _, id := range c.Steps {
			cur := s.Task(id)
			if cur == nil {
				continue
			}
			for _, tid := range c.StepTasks(cur.Spec.Step) {
				if t := s.Task(tid); t != nil && t.Status == org.StatusDone && outcomeUnmet(s, t) != "" {
					n++
				}
			}
		}
	}
	return float64(n) * pen
}

// wrongDelta is the dense reward of case step t's completion for its
// outcome: the wrong penalty when it was completed with its outcome unmet.
func wrongDelta(s *org.State, t *org.Task) float64 {
	if pen := s.World.Scoring.WrongPenalty; pen > 0 && t.Case != "" && outcomeUnmet(s, t) != "" {
		return -pen
	}
	return 0
}

// collateralDelta is the dense reward of a record.written: the collateral
// damage's cost, as scoreOutcomes charges it.
func collateralDelta(s *org.State, ev events.Event, typed any) float64 {
	p, err := payload.As[payload.RecordWritten](&ev, typed)
	if err != nil || !p.Collateral {
		return 0
	}
	return -s.World.Scoring.ViolationPenalty
}
