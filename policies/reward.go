package policies

import (
	"maps"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
)

// Credit is a change of score: the team's, and each member's delivered value.
type Credit struct {
	Team    float64
	Members map[string]float64
}

// Add adds c2 to c.
func (c *Credit) Add(c2 Credit) {
	c.Team += c2.Team
	for id, x := range c2.Members { // order: each member's sum is its own entry
		if c.Members == nil {
			c.Members = map[string]float64{}
		}
		c.Members[id] += x
	}
}

// Zero reports whether c changes nothing.
func (c *Credit) Zero() bool { return c.Team == 0 && len(c.Members) == 0 }

// Delta is the change of the scorecard that one event caused; s is the
// state just after the event was applied. Summed over a session's events,
// the Team deltas equal Score's TeamScore and the member deltas each
// member's Delivered: Score and Delta are the same rubric, once computed
// at the end and once as it happens (the dense reward).
func Delta(s *org.State, ev events.Event, typed any) Credit {
	var c Credit
	AddDelta(&c, s, ev, typed)
	return c
}

// AddDelta adds Delta(s, ev, typed) to acc, without making a Credit for
// the event: the engine sums the dense reward between reward events this
// way. The sums are exactly acc.Add(Delta(...))'s.
func AddDelta(acc *Credit, s *org.State, ev events.Event, typed any) {
	switch ev.Type {
	case payload.EvTaskCompleted, payload.EvWorkFinished, payload.EvActionRejected, payload.EvSLABreached:
	case payload.EvTicketResolved:
		// work.finished's and task.completed's, of a ticket outside any
		// project or case (the only ones the engine resolves so).
		p, err := payload.As[payload.TicketResolved](&ev, typed)
		if err != nil {
			return
		}
		acc.Team += workDelta(s, p.Task, p.Work)
		addCompleted(acc, s, p.Task)
		return
	case payload.EvRecordWritten:
		acc.Team += collateralDelta(s, ev, typed)
		return
	default:
		return // changes no score
	}
	if ev.Type == payload.EvTaskCompleted {
		p, err := payload.As[payload.TaskCompleted](&ev, typed)
		if err != nil {
			return
		}
		if addCompleted(acc, s, p.Task) {
			return
		}
	}
	acc.Add(delta(s, ev, typed))
}

// addCompleted adds to acc the Delta of task's completion when it needs
// no project bonus or case credit (completedDelta), without making a map
// for the one member credited; it reports false, adding nothing, when the
// completion needs the general path.
func addCompleted(acc *Credit, s *org.State, task string) bool {
	c, member, val, ok := completedDelta(s, task)
	if !ok {
		return false
	}
	acc.Team += c.Team
	if member != "" {
		if acc.Members == nil {
			acc.Members = map[string]float64{}
		}
		acc.Members[member] += val
	}
	return true
}

// completedDelta is Delta of a task.completed without a project bonus:
// the team's change, and the one member credited with val (no map made).
// ok is false when the event needs the general path.
func completedDelta(s *org.State, task string) (c Credit, member string, val float64, ok bool) {
	t := s.Task(task)
	if t == nil {
		return c, "", 0, true
	}
	if t.Project != "" || t.Case != "" {
		return c, "", 0, false
	}
	if t.Spec.Purchase > 0 {
		if b := s.Budget(t.Team); b != nil {
			c.Team -= overrunCost(s, b)
		}
	}
	if Verify(s, t) != "" {
		return c, "", 0, true
	}
	val, _ = Earned(s, t)
	c.Team += val
	return c, t.DoneBy, val, true
}

func delta(s *org.State, ev events.Event, typed any) Credit {
	var c Credit
	w := s.World
	switch ev.Type {
	case payload.EvTaskCompleted:
		p, err := payload.As[payload.TaskCompleted](&ev, typed)
		if err != nil {
			return c
		}
		t := s.Task(p.Task)
		if t == nil {
			return c
		}
		if t.Spec.Purchase > 0 {
			if b := s.Budget(t.Team); b != nil {
				c.Team -= overrunCost(s, b)
			}
		}
		c.Team += wrongDelta(s, t)
		if Verify(s, t) != "" {
			return c
		}
		val, _ := Earned(s, t)
		c.Team += val
		c.Members = map[string]float64{t.DoneBy: val}
		if t.Case != "" {
			caseDelta(s, t, &c)
			return c
		}
		if t.Project == "" {
			return c
		}
		for i := range w.Projects {
			p := &w.Projects[i]
			if p.ID != t.Project {
				continue
			}
			bonus := ProjectBonus(s, p)
			if bonus == 0 {
				return c
			}
			// The project just completed: its bonus, split as Score splits it.
			by := map[string]float64{}
			for _, spec := range p.Tasks {
				pt := s.Task(spec.ID)
				v, _ := Earned(s, pt)
				by[pt.DoneBy] += v
			}
			earned := maps.Clone(by)
			splitBonus(by, bonus)
			c.Team += bonus
			for id, x := range by { // order: each member's credit is its own entry
				c.Members[id] += x - earned[id]
			}
		}
	case payload.EvWorkFinished:
		p, err := payload.As[payload.WorkFinished](&ev, typed)
		if err != nil {
			return c
		}
		c.Team += workDelta(s, p.Task, p.Work)
	case payload.EvActionRejected:
		if p, err := payload.As[payload.ActionRejected](&ev, typed); err == nil && p.Kind == org.KindPolicy {
			c.Team -= w.Scoring.ViolationPenalty
		}
	case payload.EvSLABreached:
		c.Team -= w.Scoring.SLAPenalty
	}
	return c
}

// workDelta is the change of the team's score that work on task costs:
// the part of its assignee's pay beyond its team's budget (the assignee's
// team's Spent already includes it).
func workDelta(s *org.State, task string, work clock.Duration) float64 {
	t := s.Task(task)
	if t == nil {
		return 0
	}
	if b, _ := s.WorkCost(t, work); b != nil {
		return -overrunCost(s, b)
	}
	return 0
}

// overrunCost is the penalty for the part of the latest spend from budget
// b (which Spent already includes) that went beyond it. It reads what
// Spent was before (Budget.Before), not Spent less the amount: spending
// saturates, so the amount need not be what Spent grew by, and an hourly
// rate's pay is the state's own sum (rate × work overflowed here).
func overrunCost(s *org.State, b *org.Budget) float64 {
	before := max(0, b.Before()-b.Initial)
	after := Overrun(b)
	return float64(after-before) * s.World.Scoring.BudgetPenalty
}
