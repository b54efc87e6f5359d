package policies

import (
	"fmt"
	"math"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/org"
)

// RubricVersion identifies the scoring rules; it is recorded with every score.
const RubricVersion = "rubric/1"

// Scorecard is a team's result.
type Scorecard struct {
	Rubric          string         `json:"rubric"`
	World           string         `json:"world"`
	TeamScore       float64        `json:"team_score"`
	Delivered       float64        `json:"delivered"` // value of verified tasks and project bonuses, after lateness
	Penalties       float64        `json:"penalties"`
	Tasks           int            `json:"tasks"`
	TasksDone       int            `json:"tasks_done"`       // verified completions
	OnTime          int            `json:"on_time"`          // verified completions by their project's deadline
	Tickets         int            `json:"tickets"`          // tickets that arrived
	TicketsResolved int            `json:"tickets_resolved"` // verified resolutions
	TicketsInSLA    int            `json:"tickets_in_sla"`
	SLABreaches     int            `json:"sla_breaches"` // resolved late, or open past the SLA at the end
	Completion      float64        `json:"completion"`   // (tasks done + tickets resolved) / (tasks + tickets)
	Unverified      []string       `json:"unverified,omitempty"`
	Violations      int            `json:"violations"`
	Rejections      int            `json:"rejections"`
	Timeouts        int            `json:"timeouts"`
	Turns           int            `json:"turns"`
	Projects        []ProjectScore `json:"projects"`
}

// ProjectScore is one project's part of the score.
type ProjectScore struct {
	ID        string  `json:"id"`
	Tasks     int     `json:"tasks"`
	Done      int     `json:"done"`
	OnTime    int     `json:"on_time"`
	Value     float64 `json:"value"`
	Completed bool    `json:"completed"` // every task verified and done by the deadline: bonus earned
}

// Verify checks a done task from the state alone. It returns "" when the
// completion counts, else the reason it does not. A dependency must itself
// verify: work built on a skipped or unverified step does not count.
func Verify(s *org.State, t *org.Task) string {
	return verifier{s: s, memo: map[string]string{}}.verify(t)
}

type verifier struct {
	s    *org.State
	memo map[string]string
}

func (v verifier) verify(t *org.Task) string {
	if why, ok := v.memo[t.ID]; ok {
		return why
	}
	why := v.check(t)
	v.memo[t.ID] = why
	return why
}

func (v verifier) check(t *org.Task) string {
	s := v.s
	if t.Status != org.StatusDone {
		return "not done"
	}
	for _, d := range t.Spec.Deps {
		dt := s.Task(d)
		if dt.Status != org.StatusDone || dt.DoneSeq > t.DoneSeq {
			return fmt.Sprintf("completed before its dependency %s", d)
		}
		if why := v.verify(dt); why != "" {
			return fmt.Sprintf("its dependency %s does not count (%s)", d, why)
		}
	}
	if m := s.Member(t.DoneBy); m == nil || m.Role != t.Spec.Role {
		return fmt.Sprintf("completed by %s, who does not hold role %s", t.DoneBy, t.Spec.Role)
	}
	if t.Spent < t.Effort {
		return fmt.Sprintf("only %s of %s effort spent", t.Spent, t.Effort)
	}
	if in := t.Spec.Info; in != nil {
		if m := s.Member(t.DoneBy); m == nil || !m.KnowsTopic(in.Topic) {
			return fmt.Sprintf("completed without %q from %s", in.Topic, in.From)
		}
	}
	if sk := t.Spec.Skill; sk != "" {
		if m, ok := s.World.Member(t.DoneBy); !ok || !m.HasSkill(sk) {
			return fmt.Sprintf("completed by %s, who lacks skill %s", t.DoneBy, sk)
		}
	}
	steps := s.StepsFor(t)
	if len(steps) > 0 {
		r := s.Request(t.Request)
		switch {
		case r == nil || r.Status != org.RequestApproved || r.DecidedAt > t.DoneAt:
			return "purchase completed without an approved request"
		case r.Task != t.ID || r.Chain != t.Spec.Chain || r.Amount < t.Spec.Purchase:
			return fmt.Sprintf("request %s does not cover this purchase", r.ID)
		case r.Requester != t.DoneBy:
			return fmt.Sprintf("request %s was made by %s, not by %s who completed the task", r.ID, r.Requester, t.DoneBy)
		case len(r.Steps) != len(steps):
			return fmt.Sprintf("request %s has %d approval steps; the chain needs %d", r.ID, len(r.Steps), len(steps))
		}
		for i, st := range steps {
			rs := r.Steps[i]
			m := s.Member(rs.Approver)
			// An escalated step is decided by whoever it was escalated to
			// (a manager or a delegate), who need not hold the role.
			eligible := m != nil && (m.Role == st.Role || rs.Escalated > 0)
			if rs.Role != st.Role || rs.Status != org.RequestApproved || !eligible || rs.Approver == r.Requester {
				return fmt.Sprintf("approval step %d (%s) not granted by an eligible approver", i+1, st.Role)
			}
			if i > 0 && rs.DecidedAt < r.Steps[i-1].DecidedAt {
				return "approvals granted out of order"
			}
		}
	}
	return ""
}

// Score computes the scorecard of a state (normally the final one).
//
// Each verified task earns its value, halved for every LateHalfLife of
// working time it was completed past its project's deadline. A project whose
// tasks are all verified and on time earns its bonus value too. Every
// attempted policy violation costs ViolationPenalty.
func Score(s *org.State) Scorecard {
	w := s.World
	static := 0
	for _, p := range w.Projects {
		static += len(p.Tasks)
	}
	c := Scorecard{Rubric: RubricVersion, World: w.Name, Tasks: static, Violations: s.Violations,
		Rejections: s.Rejections, Timeouts: s.Timeouts, Turns: s.Turns, Projects: []ProjectScore{}}
	v := verifier{s: s, memo: map[string]string{}}
	for pi := range w.Projects {
		p := &w.Projects[pi]
		ps := ProjectScore{ID: p.ID, Tasks: len(p.Tasks)}
		for _, spec := range p.Tasks {
			t := s.Task(spec.ID)
			if t.Status != org.StatusDone {
				continue
			}
			if why := v.verify(t); why != "" {
				c.Unverified = append(c.Unverified, t.ID+": "+why)
				continue
			}
			ps.Done++
			v := spec.Value
			if t.DoneAt <= p.Deadline {
				ps.OnTime++
			} else {
				v *= decay(w.Calendar.WorkBetween(p.Deadline, t.DoneAt), w.Scoring.LateHalfLife)
			}
			ps.Value += v
		}
		if ps.OnTime == ps.Tasks {
			ps.Completed = true
			ps.Value += p.Value
		}
		c.TasksDone += ps.Done
		c.OnTime += ps.OnTime
		c.Delivered += ps.Value
		c.Projects = append(c.Projects, ps)
	}
	for _, t := range s.Tasks {
		if t.Kind != org.KindTicket {
			continue
		}
		c.Tickets++
		late := t.Deadline > 0 && (t.Status == org.StatusDone && t.DoneAt > t.Deadline || t.Status != org.StatusDone && s.Now > t.Deadline)
		if late {
			c.SLABreaches++
		}
		if t.Status != org.StatusDone {
			continue
		}
		if why := v.verify(t); why != "" {
			c.Unverified = append(c.Unverified, t.ID+": "+why)
			continue
		}
		c.TicketsResolved++
		val := t.Value
		if late {
			val *= decay(w.Calendar.WorkBetween(t.Deadline, t.DoneAt), w.Scoring.LateHalfLife)
		} else {
			c.TicketsInSLA++
		}
		c.Delivered += val
	}
	if n := c.Tasks + c.Tickets; n > 0 {
		c.Completion = round(float64(c.TasksDone+c.TicketsResolved) / float64(n))
	}
	c.Penalties = float64(s.Violations)*w.Scoring.ViolationPenalty + float64(c.SLABreaches)*w.Scoring.SLAPenalty
	c.TeamScore = round(c.Delivered - c.Penalties)
	c.Delivered = round(c.Delivered)
	return c
}

func decay(late, halfLife clock.Duration) float64 {
	if halfLife <= 0 {
		return 0
	}
	return math.Pow(0.5, float64(late)/float64(halfLife))
}

func round(x float64) float64 { return math.Round(x*1e6) / 1e6 }
