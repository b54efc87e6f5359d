package policies

import (
	"fmt"
	"maps"
	"slices"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/org"
)

// This file scores cases (format 2). A step is verified like a task (its
// dependencies, role, effort, approvals) and also against the world's
// separation-of-duties rules; a case earns its value when every step that
// applies is done and verified, decayed past its deadline like a late
// task; a case still open past its SLA is a breach.

// CaseScore is how a case template's cases fared.
type CaseScore struct {
	Template string  `json:"template"`
	Cases    int     `json:"cases"`    // opened
	Done     int     `json:"done"`     // every step done and verified
	InSLA    int     `json:"in_sla"`   // done and never breached its SLA
	Breached int     `json:"breached"` // its SLA passed while open
	Opened   int     `json:"opened_by_members,omitempty"`
	Value    float64 `json:"value"` // the cases' values and their steps' values earned
	// LeadTime is the mean working time from opening to done, of the done cases.
	LeadTime clock.Duration `json:"lead_time,omitempty"`
}

// verifyStep adds to a step's verification the separation rules: neither
// its doer nor any of its approvers may have been barred by one when it was
// done.
func verifyStep(s *org.State, t *org.Task) string {
	if t.Case == "" {
		return ""
	}
	if t.Spec.NPC != "" && t.DoneBy != t.Spec.NPC {
		return fmt.Sprintf("completed by %s; the step is %s's to perform", t.DoneBy, t.Spec.NPC)
	}
	if r, why := s.SeparatedWhenDone(t, t.DoneBy, false); r != nil {
		return why
	}
	if why := outcomeUnmet(s, t); why != "" {
		return why
	}
	if r := s.Request(t.Request); r != nil {
		for _, st := range r.Steps {
			if rule, why := s.SeparatedWhenDone(t, st.Approver, true); rule != nil {
				return why
			}
		}
	}
	return ""
}

// CaseDone reports whether every step of c is done and verifies.
func CaseDone(s *org.State, c *org.Case) bool {
	if !c.Done() {
		return false
	}
	v := &verifier{s: s}
	for _, id := range c.Steps {
		if v.why(s.Task(id)) != "" {
			return false
		}
	}
	return true
}

// CaseValue is what a case earns: its value if every step is done and
// verified, halved for every LateHalfLife of working time it was done past
// its deadline; 0 otherwise.
func CaseValue(s *org.State, c *org.Case) float64 {
	if !CaseDone(s, c) {
		return 0
	}
	if c.Deadline == 0 || c.DoneAt <= c.Deadline {
		return c.Value
	}
	return c.Value * decay(s.World.TeamSchedule(c.Team).WorkBetween(c.Deadline, c.DoneAt), s.World.Scoring.LateHalfLife)
}

// caseBonus splits a done case's value among the members who did its
// steps, in proportion to the working effort each spent (by equal shares
// when the steps took none), in member order.
func caseBonus(s *org.State, c *org.Case, value float64) map[string]float64 {
	by := map[string]float64{}
	total := 0.0
	for _, id := range c.Steps {
		t := s.Task(id)
		by[t.DoneBy] += float64(t.Effort)
		total += float64(t.Effort)
	}
	if total == 0 {
		for k := range by { // order: each entry is set on its own
			by[k] = 1
		}
		total = float64(len(by))
	}
	out := map[string]float64{}
	for _, id := range slices.Sorted(maps.Keys(by)) {
		out[id] = value * by[id] / total
	}
	return out
}

// scoreCases adds the cases and their steps to a scorecard.
func (c *Scorecard) scoreCases(s *org.State, v *verifier, credit map[string]*MemberCredit) {
	if len(s.Cases) == 0 {
		return
	}
	byTemplate := map[string]*CaseScore{}
	lead := map[string]clock.Duration{}
	for i := range s.World.Cases {
		id := s.World.Cases[i].ID
		byTemplate[id] = &CaseScore{Template: id}
	}
	for _, cs := range s.Cases {
		ts := byTemplate[cs.Template]
		c.Cases++
		ts.Cases++
		c.priority(cs.Priority).Cases++
		if cs.OpenedBy != "" {
			ts.Opened++
		}
		if cs.Breached {
			c.SLABreaches++
			ts.Breached++
			c.priority(cs.Priority).SLABreaches++
		}
		for _, id := range cs.Steps {
			t := s.Task(id)
			if t.Status != org.StatusDone {
				continue
			}
			val, _, ok := c.count(s, v, t)
			if !ok {
				continue
			}
			c.Delivered += val
			ts.Value += val
			credit[t.DoneBy].Delivered += val
		}
		if !CaseDone(s, cs) {
			continue
		}
		c.CasesDone++
		ts.Done++
		lead[cs.Template] += s.World.TeamSchedule(cs.Team).WorkBetween(cs.Opened, cs.DoneAt)
		if !cs.Breached {
			c.CasesInSLA++
			ts.InSLA++
			c.priority(cs.Priority).CasesInSLA++
		}
		val := CaseValue(s, cs)
		c.Delivered += val
		ts.Value += val
		for id, x := range caseBonus(s, cs, val) { // order: each member's credit is its own entry
			credit[id].Delivered += x
		}
	}
	for i := range s.World.Cases {
		ts := byTemplate[s.World.Cases[i].ID]
		if ts.Done > 0 {
			ts.LeadTime = lead[ts.Template] / clock.Duration(ts.Done)
		}
		ts.Value = round(ts.Value)
		c.Templates = append(c.Templates, *ts)
	}
}

// caseDelta is the case value a step's completion earns: when it was the
// last step of its case and the case verifies, the case's value, split as
// Score splits it.
func caseDelta(s *org.State, t *org.Task, c *Credit) {
	cs := s.CaseOf(t)
	if cs == nil || !cs.Done() || cs.DoneAt != t.DoneAt {
		return
	}
	// Only the step that completed the case: the last done, by sequence.
	for _, id := range cs.Steps {
		if o := s.Task(id); o.DoneSeq > t.DoneSeq {
			return
		}
	}
	val := CaseValue(s, cs)
	if val == 0 {
		return
	}
	c.Team += val
	if c.Members == nil {
		c.Members = map[string]float64{}
	}
	for id, x := range caseBonus(s, cs, val) { // order: each member's credit is its own entry
		c.Members[id] += x
	}
}
