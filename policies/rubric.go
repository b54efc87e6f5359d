package policies

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// RubricVersion identifies the scoring rules; it is recorded with every
// score and every reward event. rubric/2 scores the outcome kinds beside
// record fields (decisions, replies, created records, meetings), counts a
// step its requester reopened as a wrong outcome that no longer earns,
// and adds it all up from the outcome cards. A log recorded under
// rubric/1 replays and is re-graded (corpsim score), its recorded rewards
// kept beside (sim.Recorded).
const RubricVersion = "rubric/2"

// Scorecard is a team's result.
type Scorecard struct {
	Rubric          string  `json:"rubric"`
	World           string  `json:"world"`
	TeamScore       float64 `json:"team_score"`
	Delivered       float64 `json:"delivered"` // value of verified tasks and project bonuses, after lateness
	Penalties       float64 `json:"penalties"`
	Tasks           int     `json:"tasks"`
	TasksDone       int     `json:"tasks_done"`       // verified completions
	OnTime          int     `json:"on_time"`          // verified completions by their project's deadline
	Tickets         int     `json:"tickets"`          // tickets that arrived
	TicketsResolved int     `json:"tickets_resolved"` // verified resolutions
	TicketsInSLA    int     `json:"tickets_in_sla"`
	SLABreaches     int     `json:"sla_breaches"` // resolved late, or open past the SLA at the end
	Completion      float64 `json:"completion"`   // (tasks done + tickets resolved) / (tasks + tickets)
	BudgetOverrun   int64   `json:"budget_overrun"`
	// Reward is the sum of the session's reward events; it reconciles with
	// TeamScore when both come from the rubric that ran the session.
	Reward     float64        `json:"reward"`
	Members    []MemberCredit `json:"members"`
	Unverified []string       `json:"unverified,omitempty"`
	Violations int            `json:"violations"`
	Rejections int            `json:"rejections"`
	Timeouts   int            `json:"timeouts"`
	// TurnErrors counts the turns whose agent could not decide (its
	// backend failed: turn.failed events); they are not in Turns.
	TurnErrors int            `json:"turn_errors"`
	Turns      int            `json:"turns"`
	Projects   []ProjectScore `json:"projects"`
	// Cases (format 2): opened, done (every step verified), done within
	// their SLA; by template.
	Cases      int         `json:"cases,omitempty"`
	CasesDone  int         `json:"cases_done,omitempty"`
	CasesInSLA int         `json:"cases_in_sla,omitempty"`
	Templates  []CaseScore `json:"templates,omitempty"`
	// SLAByPriority breaks tickets, cases and SLA breaches down by
	// priority, in order of priority; only in a world whose tickets have an
	// SLA by priority, or that has cases (version 2).
	SLAByPriority []PrioritySLA `json:"sla_by_priority,omitempty"`
	// Outcome (format 2 systems, outcomes.go) is the outcome score: per
	// outcome of the cases opened, the share of its fields the record held
	// at completion and at the end; OutcomeMax is the most it can be (the
	// number of outcomes); WrongOutcomes the steps completed with their
	// outcome unmet; Collateral the writes no case asked for.
	Outcome       float64 `json:"outcome,omitempty"`
	OutcomeMax    float64 `json:"outcome_max,omitempty"`
	WrongOutcomes int     `json:"wrong_outcomes,omitempty"`
	Collateral    int     `json:"collateral,omitempty"`
	// Outcomes break Outcome down per case and step (outcomes_card.go).
	Outcomes []OutcomeCard `json:"outcomes,omitempty"`
}

// PrioritySLA is the tickets and cases of one priority and their SLA
// breaches.
type PrioritySLA struct {
	Priority    int `json:"priority"`
	Tickets     int `json:"tickets"`
	Cases       int `json:"cases,omitempty"`
	CasesInSLA  int `json:"cases_in_sla,omitempty"` // done and never past their SLA
	SLABreaches int `json:"sla_breaches"`
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
//
// A verification that no later event can change is remembered beside the
// state (org.State.RememberVerdict), so a completion checks its own task
// and its direct dependencies' remembered results, not again the whole
// chain of work beneath it. What is final is decided in check: see final.
func Verify(s *org.State, t *org.Task) string {
	v := verifier{s: s}
	why, _ := v.verify(t)
	return why
}

// verifier verifies tasks of one state. It remembers in the state the
// verifications that are final and, for the length of one call, in memo
// the others (a task reached along several dependency paths is checked
// once). fresh ignores and leaves alone what the state remembers: the
// verification as it was before the state remembered any, which tests
// compare with.
type verifier struct {
	s     *org.State
	memo  map[*org.Task]verdict
	fresh bool
}

// verdict is a verification and whether it is final: whether no later
// event can change it (but one adding effort to a done task, on which the
// state forgets every remembered verification).
type verdict struct {
	why   string
	final bool
}

func (v *verifier) verify(t *org.Task) (string, bool) {
	if !v.fresh {
		if why, ok := v.s.Verdict(t); ok {
			return why, true
		}
	}
	if r, ok := v.memo[t]; ok {
		return r.why, r.final
	}
	why, final := v.check(t)
	switch {
	case final && !v.fresh:
		v.s.RememberVerdict(t, why)
	case len(t.Spec.Deps) > 0 || v.memo != nil:
		// Remembered for this call only: only a task reached along two
		// paths needs it, and a task without dependencies has none.
		if v.memo == nil {
			v.memo = map[*org.Task]verdict{}
		}
		v.memo[t] = verdict{why, final}
	}
	return why, final
}

// why is verify's reason alone.
func (v *verifier) why(t *org.Task) string {
	why, _ := v.verify(t)
	return why
}

// check verifies t and says whether the result is final. Once a task is
// done, its status, completion (time, sequence, by whom), effort spent and
// approval request never change, nor do members' roles, skills and the
// world; a member's topics only grow, interruptions only fire, and an
// approved request is never decided again. So a result is final when every
// dependency's is, unless it is one of: not done yet; completed without
// the information (the member may learn it later, and the state says it
// counts then); an approval failure (the request may still be decided); a
// pass of a purchase's approvals while a leave that delegates may still
// fire (decidedBeyondLimit reads which have fired); any case step (its
// separation and outcome rules read records and cases, which move). The
// effort of a done task can still grow (a change interruption); the state
// forgets every remembered result when it does.
func (v *verifier) check(t *org.Task) (string, bool) {
	s := v.s
	if t.Status != org.StatusDone {
		return "not done", false
	}
	final := t.Case == ""
	for _, d := range t.Spec.Deps {
		dt := s.Task(d)
		if redo := redoneAs(s, dt); redo != nil {
			// The requester reopened the dependency and it was redone as a
			// new task: a step that stood (its outcome met) counts once the
			// redo does, done before it or after.
			if redo.Status != org.StatusDone {
				return fmt.Sprintf("its dependency %s does not count (wrong outcome: the requester reopened case %s, and its redo %s is not done)", d, dt.Case, redo.ID), false
			}
			why, depFinal := v.verify(redo)
			final = final && depFinal
			if why != "" {
				return fmt.Sprintf("its dependency %s was redone as %s, which does not count (%s)", d, redo.ID, why), final
			}
			continue
		}
		if dt.Status != org.StatusDone || dt.DoneSeq > t.DoneSeq {
			// Final as it stands: a dependency done later gets a later
			// sequence number, and the reason reads the same.
			return fmt.Sprintf("completed before its dependency %s", d), final
		}
		why, depFinal := v.verify(dt)
		final = final && depFinal
		if why != "" {
			return fmt.Sprintf("its dependency %s does not count (%s)", d, why), final
		}
	}
	why := v.own(t, &final)
	return why, final
}

// redoneAs returns the task that redoes case step dt since its requester
// reopened the case, from log format org.RedoDepsFormat on; nil if dt is
// still one of its case's steps (or the log is older). Before that format
// a step that stood kept depending on the replaced task, which never
// counts again: fixing only the wrong step earned nothing for the right
// ones after it, and getting those wrong too (redone as well) earned more.
func redoneAs(s *org.State, dt *org.Task) *org.Task {
	if s.Format < org.RedoDepsFormat || dt.Case == "" {
		return nil
	}
	c := s.CaseOf(dt)
	if c == nil || reopenedStep(c, dt) == "" {
		return nil
	}
	for _, id := range c.Steps {
		if t := s.Task(id); t != nil && t.Spec.Step == dt.Spec.Step {
			return t
		}
	}
	return nil
}

// own is check's part about t itself once its dependencies count; it
// clears *final when the result may still change.
func (v *verifier) own(t *org.Task, final *bool) string {
	s := v.s
	if m := s.Member(t.DoneBy); m == nil || m.Role != t.Spec.Role {
		return fmt.Sprintf("completed by %s, who does not hold role %s", t.DoneBy, t.Spec.Role)
	}
	if t.Spent < t.Effort {
		return fmt.Sprintf("only %s of %s effort spent", t.Spent, t.Effort)
	}
	if in := t.Spec.Info; in != nil {
		if m := s.Member(t.DoneBy); m == nil || !m.KnowsTopic(in.Topic) {
			*final = false // it may learn it yet
			return fmt.Sprintf("completed without %q from %s", in.Topic, in.From)
		}
	}
	if sk := t.Spec.Skill; sk != "" {
		if m, ok := s.World.Member(t.DoneBy); !ok || !m.HasSkill(sk) {
			return fmt.Sprintf("completed by %s, who lacks skill %s", t.DoneBy, sk)
		}
	}
	if why := verifyStep(s, t); why != "" {
		return why
	}
	steps := s.StepsFor(t)
	if len(steps) > 0 {
		if !leavesFired(s) {
			*final = false
		}
		r := s.Request(t.Request)
		switch {
		case r == nil || r.Status != org.RequestApproved || r.DecidedAt > t.DoneAt:
			*final = false // not remembered: cheap, and rare
			return "purchase completed without an approved request"
		case r.Task != t.ID || r.Chain != t.Spec.Chain || r.Amount < t.Spec.ApprovalAmount():
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
			eligible := m != nil && (m.Role == st.Role || rs.Escalated > 0 || rs.Delegated)
			if eligible && decidedBeyondLimit(s, r, &rs) {
				return fmt.Sprintf("approval step %d (%s) granted by %s, a delegate beyond its delegation limit", i+1, st.Role, rs.Approver)
			}
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

// Earned is what a done task earns if it verifies: its value, halved for
// every LateHalfLife of working time it was completed past its deadline,
// on the schedule of the task's team (the company calendar unless the
// team has its own calendar or rota).
func Earned(s *org.State, t *org.Task) (value float64, onTime bool) {
	if t.Deadline == 0 || t.DoneAt <= t.Deadline {
		return t.Value, true
	}
	return t.Value * decay(s.World.TeamSchedule(t.Team).WorkBetween(t.Deadline, t.DoneAt), s.World.Scoring.LateHalfLife), false
}

// ProjectBonus returns a project's bonus if every one of its tasks is done,
// verified and on time in s, else 0.
func ProjectBonus(s *org.State, p *worlds.Project) float64 {
	if s.ProjectDone(p.ID) < len(p.Tasks) {
		// Not every task is done: no bonus, without verifying the ones
		// that are (asked at every completion, that was quadratic in the
		// project's size).
		return 0
	}
	v := &verifier{s: s}
	for _, spec := range p.Tasks {
		t := s.Task(spec.ID)
		if t.Status != org.StatusDone || v.why(t) != "" {
			return 0
		}
		if _, onTime := Earned(s, t); !onTime {
			return 0
		}
	}
	return p.Value
}

// Overrun is how far a team's spending exceeds its budget (0 if it does not).
func Overrun(b *org.Budget) int64 { return max(0, b.Spent-b.Initial) }

// MemberCredit is one member's part of the outcome.
type MemberCredit struct {
	Member     string  `json:"member"`
	Delivered  float64 `json:"delivered"`  // value of the verified work it completed, with its share of project bonuses
	Share      float64 `json:"share"`      // Delivered / the team's delivered value
	Critical   float64 `json:"critical"`   // share of its projects' critical-path effort it completed
	Violations int     `json:"violations"` // attempted policy violations
	// BlockedOthers is working time other members waited on this one:
	// approval steps it held, and dependencies it finished last.
	BlockedOthers    clock.Duration `json:"blocked_others"`
	MessagesSent     int            `json:"messages_sent"`
	MessagesAnswered int            `json:"messages_answered"` // messages to it that it replied to
}

// Score computes the scorecard of a state (normally the final one).
//
// Each verified task or ticket earns its value, halved for every
// LateHalfLife of working time it was completed past its deadline (a
// project's deadline, or a ticket's SLA). A project whose tasks are all
// verified and on time earns its bonus value too. Every attempted policy
// violation costs ViolationPenalty, every SLA breach SLAPenalty, every
// unit of spending beyond a team's budget BudgetPenalty, and every case
// step completed with its outcome unmet WrongPenalty (WrongPenalties).
func Score(s *org.State) Scorecard {
	w := s.World
	static := 0
	for _, p := range w.Projects {
		static += len(p.Tasks)
	}
	c := Scorecard{Rubric: RubricVersion, World: w.Name, Tasks: static, Violations: s.Violations,
		Rejections: s.Rejections, Timeouts: s.Timeouts, TurnErrors: s.TurnErrors, Turns: s.Turns, Projects: []ProjectScore{}}
	v := &verifier{s: s}
	credit := map[string]*MemberCredit{}
	for _, m := range s.Members {
		credit[m.ID] = &MemberCredit{Member: m.ID, Violations: m.Violations}
	}
	for pi := range w.Projects {
		p := &w.Projects[pi]
		ps := ProjectScore{ID: p.ID, Tasks: len(p.Tasks)}
		byMember := map[string]float64{}
		for _, spec := range p.Tasks {
			t := s.Task(spec.ID)
			if t.Status != org.StatusDone {
				continue
			}
			val, onTime, ok := c.count(s, v, t)
			if !ok {
				continue
			}
			ps.Done++
			if onTime {
				ps.OnTime++
			}
			ps.Value += val
			byMember[t.DoneBy] += val
		}
		if ps.OnTime == ps.Tasks {
			ps.Completed = true
			ps.Value += p.Value
			splitBonus(byMember, p.Value)
		}
		for id, x := range byMember { // order: each member's credit is its own entry
			credit[id].Delivered += x
		}
		c.TasksDone += ps.Done
		c.OnTime += ps.OnTime
		c.Delivered += ps.Value
		c.Projects = append(c.Projects, ps)
		criticalPath(s, p, credit)
	}
	byPriority := slaByPriority(w)
	if r := s.Retired(); r != nil {
		c.addRetired(r, byPriority, credit)
	}
	for _, t := range s.Tasks() {
		if t.Kind != org.KindTicket {
			continue
		}
		c.Tickets++
		if t.Breached {
			c.SLABreaches++
		}
		if byPriority {
			c.countPriority(t.Spec.Priority, t.Breached)
		}
		if t.Status != org.StatusDone {
			continue
		}
		val, onTime, ok := c.count(s, v, t)
		if !ok {
			continue
		}
		c.TicketsResolved++
		if onTime {
			c.TicketsInSLA++
		}
		c.Delivered += val
		credit[t.DoneBy].Delivered += val
	}
	c.scoreCases(s, v, credit)
	if n := c.Tasks + c.Tickets + c.Cases; n > 0 {
		c.Completion = round(float64(c.TasksDone+c.TicketsResolved+c.CasesDone) / float64(n))
	}
	var over int64
	for _, b := range s.Budgets {
		over = org.AddSat(over, Overrun(b))
	}
	c.BudgetOverrun = over
	c.Penalties = float64(s.Violations)*w.Scoring.ViolationPenalty + float64(c.SLABreaches)*w.Scoring.SLAPenalty +
		float64(over)*w.Scoring.BudgetPenalty + WrongPenalties(s)
	c.scoreOutcomes(s)
	blocked(s, credit)
	for _, m := range s.Messages {
		credit[m.From].MessagesSent++
		if m.Answered {
			credit[m.To].MessagesAnswered++
		}
	}
	for _, m := range s.Members {
		mc := credit[m.ID]
		if c.Delivered > 0 {
			mc.Share = round(mc.Delivered / c.Delivered)
		}
		mc.Delivered = round(mc.Delivered)
		mc.Critical = round(mc.Critical)
		c.Members = append(c.Members, *mc)
	}
	c.TeamScore = round(c.Delivered - c.Penalties)
	c.Delivered = round(c.Delivered)
	c.Penalties = round(c.Penalties)
	c.Reward = round(s.Reward)
	return c
}

// addRetired adds the totals of a state's retired tickets (log format 4),
// which Score then continues over the live ones.
func (c *Scorecard) addRetired(r *org.RetiredTickets, byPriority bool, credit map[string]*MemberCredit) {
	c.Tickets += r.N
	c.SLABreaches += r.Breached
	if byPriority {
		for _, p := range r.ByPriority {
			e := c.priority(p.Priority)
			e.Tickets += p.Tickets
			e.SLABreaches += p.Breached
		}
	}
	c.Unverified = append(c.Unverified, r.Unverified...)
	c.TicketsResolved += r.Resolved
	c.TicketsInSLA += r.InSLA
	c.Delivered += r.Delivered
	for _, id := range slices.Sorted(maps.Keys(r.Credit)) {
		if mc := credit[id]; mc != nil {
			mc.Delivered += r.Credit[id]
		}
	}
}

// Judge is the rubric's verdict on a done ticket as a state of log format 4
// retires it (org.Judge): what Score would count for it.
var Judge org.Judge = judge{}

type judge struct{}

func (judge) Judge(s *org.State, t *org.Task) (earned float64, onTime bool, why string) {
	if why := (&verifier{s: s}).why(t); why != "" {
		return 0, false, why
	}
	earned, onTime = Earned(s, t)
	return earned, onTime, ""
}

// count verifies a done task: if it counts it returns what it earned,
// else it records why not in Unverified.
func (c *Scorecard) count(s *org.State, v *verifier, t *org.Task) (val float64, onTime, ok bool) {
	if why := v.why(t); why != "" {
		c.Unverified = append(c.Unverified, t.ID+": "+why)
		return 0, false, false
	}
	val, onTime = Earned(s, t)
	return val, onTime, true
}

// splitBonus adds a completed project's bonus to the members who earned its
// value, in proportion to what each earned. Score and Delta share it, so the
// dense rewards and the scorecard credit members alike.
//
// The sum is taken in member-ID order: a float sum depends on the order of
// its terms, and a map's order changes from run to run, so summing in map
// order would let a reward event's bytes differ between two runs of one seed.
func splitBonus(byMember map[string]float64, bonus float64) {
	ids := slices.Sorted(maps.Keys(byMember))
	sum := 0.0
	for _, id := range ids {
		sum += byMember[id]
	}
	if sum <= 0 {
		return
	}
	for _, id := range ids {
		byMember[id] += bonus * byMember[id] / sum
	}
}

// criticalPath credits each member with its share of the project's
// critical path: the chain of dependencies with the most effort.
func criticalPath(s *org.State, p *worlds.Project, credit map[string]*MemberCredit) {
	longest := map[string]clock.Duration{}
	next := map[string]string{} // the dependency on the longest path below a task
	var walk func(id string) clock.Duration
	walk = func(id string) clock.Duration {
		if d, ok := longest[id]; ok {
			return d
		}
		t := s.Task(id)
		best, via := clock.Duration(0), ""
		for _, d := range t.Spec.Deps {
			if l := walk(d); l > best {
				best, via = l, d
			}
		}
		longest[id], next[id] = best+t.Effort, via
		return best + t.Effort
	}
	top, total := "", clock.Duration(0)
	for _, spec := range p.Tasks {
		if l := walk(spec.ID); l > total {
			top, total = spec.ID, l
		}
	}
	if total == 0 {
		return
	}
	for id := top; id != ""; id = next[id] {
		t := s.Task(id)
		if t.Status == org.StatusDone && credit[t.DoneBy] != nil {
			credit[t.DoneBy].Critical += float64(t.Effort) / float64(total) / float64(len(s.World.Projects))
		}
	}
}

// blocked credits members with the working time others waited on them:
// each approval step for as long as it sat with its approver, and, for
// each task whose dependencies are done, the time it waited on the one
// finished last after the others were done.
func blocked(s *org.State, credit map[string]*MemberCredit) {
	cal := &s.World.Calendar
	for _, r := range s.Requests {
		for i, st := range r.Steps {
			end := st.DecidedAt
			if st.Status == org.RequestPending {
				if r.Status != org.RequestPending || r.Current != i {
					continue // never reached
				}
				end = s.Now
			}
			if mc := credit[st.Approver]; mc != nil && end > st.Since {
				mc.BlockedOthers += cal.WorkBetween(st.Since, end)
			}
		}
	}
	for _, t := range s.Tasks() {
		if len(t.Spec.Deps) == 0 || !s.DepsDone(t) {
			continue
		}
		var last *org.Task
		from := t.Created
		for _, d := range t.Spec.Deps {
			dt := s.Task(d)
			if last == nil || dt.DoneAt > last.DoneAt {
				if last != nil && last.DoneAt > from {
					from = last.DoneAt
				}
				last = dt
			} else if dt.DoneAt > from {
				from = dt.DoneAt
			}
		}
		if mc := credit[last.DoneBy]; mc != nil && last.DoneAt > from {
			mc.BlockedOthers += cal.WorkBetween(from, last.DoneAt)
		}
	}
}

func decay(late, halfLife clock.Duration) float64 {
	if halfLife <= 0 {
		return 0
	}
	return math.Pow(0.5, float64(late)/float64(halfLife))
}

func round(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// slaByPriority reports whether some ticket template of w has an SLA by
// priority.
func slaByPriority(w *worlds.World) bool {
	for i := range w.Arrivals {
		if w.Arrivals[i].Ticket.SLAByPriority != nil {
			return true
		}
	}
	for i := range w.Interruptions {
		if t := w.Interruptions[i].Ticket; t != nil && t.SLAByPriority != nil {
			return true
		}
	}
	return false
}

// countPriority counts a ticket of priority p in SLAByPriority, kept in
// order of priority.
func (c *Scorecard) countPriority(p int, breached bool) {
	e := c.priority(p)
	e.Tickets++
	if breached {
		e.SLABreaches++
	}
}

// priority is the SLAByPriority entry of priority p, added in order if new.
func (c *Scorecard) priority(p int) *PrioritySLA {
	i, found := slices.BinarySearchFunc(c.SLAByPriority, p, func(x PrioritySLA, p int) int { return cmp.Compare(x.Priority, p) })
	if !found {
		c.SLAByPriority = slices.Insert(c.SLAByPriority, i, PrioritySLA{Priority: p})
	}
	return &c.SLAByPriority[i]
}
