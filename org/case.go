package org

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/events/payload/fastjson"
	"github.com/corpsim/corpsim/worlds"
)

// This file holds cases (format 2): instances of a world's case
// templates, whose steps are tasks ("<case>.<step>", Kind KindStep) that
// depend on other steps of the same case.

// KindStep is a step of a case.
const KindStep = "step"

// ActOpenCase opens a case of a template the member's role may open:
// {"type":"open_case","template":"claim","attributes":{"amount":4000}}.
const ActOpenCase = "open_case"

// Case is a case's state.
type Case struct {
	ID         string        `json:"id"`
	Template   string        `json:"template"`
	Title      string        `json:"title"`
	Queue      string        `json:"queue"`
	Team       string        `json:"team"`
	Priority   int           `json:"priority,omitempty"`
	Value      float64       `json:"value"`
	Opened     clock.Time    `json:"opened"`
	OpenedBy   string        `json:"opened_by,omitempty"`
	Arrival    string        `json:"arrival,omitempty"`
	Deadline   clock.Time    `json:"deadline,omitempty"`
	Due        clock.Time    `json:"due,omitempty"` // its SLA
	Attributes payload.Attrs `json:"attributes"`
	Facts      payload.Attrs `json:"facts,omitempty"`
	Steps      []string      `json:"steps"`             // the tasks of the steps that apply, in template order
	Skipped    []string      `json:"skipped,omitempty"` // template steps whose condition did not hold
	Breached   bool          `json:"breached,omitempty"`
	DoneAt     clock.Time    `json:"done_at,omitempty"` // when its last step was done; 0 while open
	// Outcomes are what its steps must leave behind on records (format 2,
	// records.go); hidden from agents.
	Outcomes []CaseOutcome `json:"outcomes,omitempty"`
	// Decisions are the options chosen on its steps (by step id), and
	// Reopens how many times its requester reopened it (kinds.go).
	Decisions map[string]string `json:"decisions,omitempty"`
	Reopens   int               `json:"reopens,omitempty"`
	// Meetings are the meetings its steps must book (meetings.go); hidden.
	Meetings []CaseMeeting `json:"meetings,omitempty"`

	// Derived from its steps (deriveCase), for views: the tasks of Steps
	// (stepsOf), the members who did a step, its steps for a simulated
	// colleague, how many of them are not done, and how many of those have
	// every dependency done (a member may be the one to ask for them).
	steps    []*Task
	doers    []string
	npcSteps []*Task // its steps for a simulated colleague, in step order
	npcLeft  int
	npcReady int
	// num is its place in State.Cases; reopenable says it is in
	// State.reopenable (see Reopenable).
	num        int
	reopenable bool
	inReady    bool   // in State.ready (readyCases)
	listed     uint64 // the State.caseMark of the last view that listed it
}

// deriveCase works out c's members who did a step and its colleagues'
// steps not done, and ready, again from its steps (a case opened, reopened
// or restored, its dependencies linked); a task done keeps them
// (caseStepDone, depDone).
func (s *State) deriveCase(c *Case) {
	c.doers, c.npcSteps, c.npcLeft, c.npcReady = c.doers[:0], c.npcSteps[:0], 0, 0
	for _, t := range s.stepsOf(c) {
		if t.Spec.NPC != "" {
			c.npcSteps = append(c.npcSteps, t)
		}
		switch {
		case t.Status == StatusDone:
			if !slices.Contains(c.doers, t.DoneBy) {
				c.doers = append(c.doers, t.DoneBy)
				s.fileDoer(c, t.DoneBy)
			}
		case t.Spec.NPC != "":
			c.npcLeft++
			if s.DepsDone(t) {
				c.npcReady++
			}
		}
	}
	if c.npcReady > 0 {
		s.fileReady(c)
	}
}

// caseStepDone notes that m did step t of a case.
func (s *State) caseStepDone(t *Task, m *Member) {
	c := s.cases[t.Case]
	if c == nil {
		return
	}
	if !slices.Contains(c.doers, m.ID) {
		c.doers = append(c.doers, m.ID)
		s.fileDoer(c, m.ID)
	}
	if t.Spec.NPC != "" {
		c.npcLeft--
		if s.DepsDone(t) {
			c.npcReady-- // ready since its last dependency was done
		}
	}
}

// depDone notes that d, a dependency of t, is done: t, a colleague's step
// not done, may now be ready.
func (s *State) depDone(t *Task) {
	if t.Case == "" || t.Spec.NPC == "" || t.Status == StatusDone || !s.DepsDone(t) {
		return
	}
	if c := s.cases[t.Case]; c != nil {
		if c.npcReady++; c.npcReady == 1 {
			s.fileReady(c)
		}
	}
}

// fileReady files c among the cases with a colleague's step ready
// (readyCases), by place in State.Cases, unless it is there.
func (s *State) fileReady(c *Case) {
	if !c.inReady {
		c.inReady = true
		i, _ := slices.BinarySearchFunc(s.ready, c.num, byNum)
		s.ready = slices.Insert(s.ready, i, c)
	}
}

// readyCases returns the open cases with a colleague's step whose
// dependencies are done (Case.npcReady), in the order of State.Cases,
// dropping from its list those with none left.
func (s *State) readyCases() []*Case {
	s.ready = prune(s.ready, func(c *Case) bool {
		if c.npcReady > 0 && !c.Done() {
			return true
		}
		c.inReady = false // filed again when one is ready
		return false
	})
	return s.ready
}

// fileDoer files c among the cases member id did a step of (byDoer), by
// place in State.Cases, unless it is there.
func (s *State) fileDoer(c *Case, id string) {
	if s.byDoer == nil {
		s.byDoer = map[string][]*Case{}
	}
	list := s.byDoer[id]
	if i, found := slices.BinarySearchFunc(list, c.num, byNum); !found {
		s.byDoer[id] = slices.Insert(list, i, c)
	}
}

// doerCases returns the open cases member id did a step of, in the order
// of State.Cases, dropping from its list those done (filed again if
// reopened) or no longer its (a reopening replaced its steps).
func (s *State) doerCases(id string) []*Case {
	return pruneOf(s.byDoer, id, func(c *Case) bool { return !c.Done() && slices.Contains(c.doers, id) })
}

func byNum(c *Case, n int) int { return cmp.Compare(c.num, n) }

// Done reports whether every step of the case is done.
func (c *Case) Done() bool { return c.DoneAt != 0 }

// StepTaskID is the task ID of step of case.
func StepTaskID(caseID, step string) string { return caseID + "." + step }

// Case returns a case by ID.
func (s *State) Case(id string) *Case { return s.cases[id] }

// CaseIDs returns the IDs of the session's cases, sorted.
func (s *State) CaseIDs() []string { return slices.Sorted(maps.Keys(s.cases)) }

// CaseOf returns the case a step task belongs to, or nil.
func (s *State) CaseOf(t *Task) *Case {
	if t == nil || t.Case == "" {
		return nil
	}
	return s.cases[t.Case]
}

// Vars are a case's attributes (and, with facts, its facts) as the
// world's expressions and text templates read them.
func (c *Case) Vars(facts bool) map[string]any {
	if facts {
		return payload.Vars(c.ID, c.Attributes, c.Facts)
	}
	return payload.Vars(c.ID, c.Attributes)
}

func (s *State) applyCaseOpened(ev *events.Event) error {
	p, err := decode[payload.CaseOpened](s, ev)
	if err != nil {
		return err
	}
	tpl, ok := s.World.CaseTemplate(p.Template)
	switch {
	case p.Case == "" || s.cases[p.Case] != nil:
		return badEvent(ev, "case %q exists or has no id", p.Case)
	case !ok:
		return badEvent(ev, "unknown case template %q", p.Template)
	case s.queues[p.Queue] == nil:
		return badEvent(ev, "unknown queue %q", p.Queue)
	case len(p.Steps) == 0:
		return badEvent(ev, "case %q has no steps", p.Case)
	case !fastjson.Finite(p.Value):
		return badEvent(ev, "case %q has a value that is not a finite number", p.Case)
	}
	if p.Arrival != "" {
		a := s.Arrival(p.Arrival)
		if a == nil {
			return badEvent(ev, "unknown arrival %q", p.Arrival)
		}
		a.N++
		a.setNext(p.Next())
	} else if p.OpenedBy != "" {
		m := s.Member(p.OpenedBy)
		if m == nil || ev.Actor != p.OpenedBy {
			return badEvent(ev, "case %q opened by %q, who is not the event's actor", p.Case, p.OpenedBy)
		}
		// The event holds every attribute, the drawn ones too: a drawn text
		// may be longer than an agent may send, so sizes are not checked.
		if rej := s.checkOpenCase(m, Action{Type: ActOpenCase, Template: p.Template, Attributes: payload.NewActionAttrs(p.Attributes)}, false); rej != nil {
			return refused(ev, rej)
		}
	}
	c := &Case{ID: p.Case, Template: p.Template, Title: p.Title, Queue: p.Queue, Team: p.Team, Priority: p.Priority, Value: p.Value,
		Opened: clock.Time(ev.Time), OpenedBy: p.OpenedBy, Arrival: p.Arrival, Deadline: p.Deadline, Due: p.Due,
		Attributes: p.Attributes, Facts: p.Facts, Skipped: slices.Clone(p.Skipped)}
	for _, x := range p.Expected {
		if _, ok := tpl.Step(x.Step); !ok || x.Kind == "" && s.Record(x.Record, x.ID) == nil || !expectedFits(tpl, &x) {
			return badEvent(ev, "case %q expects an outcome of step %q on %s %q, which does not exist", p.Case, x.Step, x.Record, x.ID)
		}
		c.Outcomes = append(c.Outcomes, CaseOutcome{Expected: x})
	}
	for _, x := range p.Meetings {
		if st, ok := tpl.Step(x.Step); !ok || st.Meeting == nil {
			return badEvent(ev, "case %q expects a meeting of step %q, which requires none", p.Case, x.Step)
		}
		c.Meetings = append(c.Meetings, CaseMeeting{ExpectedMeeting: x})
	}
	ids := map[string]bool{}
	for i := range p.Steps {
		ids[p.Steps[i].ID] = true
	}
	for i := range p.Steps {
		sp := &p.Steps[i]
		if sp.Case != p.Case || sp.ID != StepTaskID(p.Case, sp.Step) || s.tasks[sp.ID] != nil {
			return badEvent(ev, "step %q is not a new step of case %q", sp.ID, p.Case)
		}
		if _, ok := tpl.Step(sp.Step); !ok {
			return badEvent(ev, "template %s has no step %q", p.Template, sp.Step)
		}
		for _, d := range sp.Deps {
			if !ids[d] {
				return badEvent(ev, "step %q depends on %q, which is no step of case %q", sp.ID, d, p.Case)
			}
		}
	}
	c.num = len(s.Cases)
	s.Cases = append(s.Cases, c)
	s.fileCase(c)
	for i := range p.Steps {
		t := s.newMade(&p.Steps[i])
		t.Kind, t.Case, t.Queue, t.Team = KindStep, c.ID, p.Queue, p.Team
		t.Created, t.Deadline = clock.Time(ev.Time), p.Deadline
		t.ord = s.nextOrd()
		s.list = append(s.list, t)
		s.tasks[t.ID] = t
		c.Steps = append(c.Steps, t.ID)
	}
	for _, id := range c.Steps {
		t := s.tasks[id]
		for _, d := range t.Spec.Deps {
			dt := s.tasks[d]
			t.deps = append(t.deps, dt)
			s.dependents[d] = append(s.dependents[d], t)
			dt.dependents++
		}
	}
	for _, id := range c.Steps {
		t := s.tasks[id]
		s.track(t)
		if s.DepsDone(t) && t.Spec.NPC == "" {
			s.wakeServers(t, ev.Seq, false)
		}
	}
	s.deriveCase(c)
	if p.OpenedBy != "" {
		s.busy(s.Member(p.OpenedBy), p.BusyUntil)
	}
	return nil
}

// stepDone marks t's case done when t was its last step.
func (s *State) stepDone(t *Task, at clock.Time, seq uint64) {
	c := s.CaseOf(t)
	if c == nil || c.Done() {
		return
	}
	for _, id := range c.Steps {
		if s.tasks[id].Status != StatusDone {
			return
		}
	}
	c.DoneAt = max(at, 1)
	s.caseClosed(c, seq)
}

// CheckOpenCase reports whether m may open a case of action a's template
// with the attributes it gives: its role may open them, its quota is not
// spent, and every attribute given is one of the template's (not a fact)
// within its bounds.
func (s *State) CheckOpenCase(m *Member, a Action) *Rejection {
	return s.checkOpenCase(m, a, true)
}

// checkOpenCase is CheckOpenCase; sizes says whether to bound the texts
// given by the message limit.
func (s *State) checkOpenCase(m *Member, a Action, sizes bool) *Rejection {
	if a.Template == "" {
		return Reject(KindMalformed, "open_case needs a template")
	}
	tpl, ok := s.World.CaseTemplate(a.Template)
	if !ok {
		return Reject(KindUnknown, "no case template %q", a.Template)
	}
	o := tpl.Open
	if o == nil || !slices.Contains(o.Roles, m.Role) {
		return Violation("open-case", "%s (%s) may not open %s cases", m.ID, m.Role, tpl.ID)
	}
	if o.Quota > 0 {
		if n := s.OpenedBy(m.ID, tpl.ID); n >= o.Quota {
			return Violation("open-case", "%s has opened %d %s cases, its quota", m.ID, n, tpl.ID)
		}
	}
	given := a.Attributes.Attrs()
	for _, name := range slices.Sorted(maps.Keys(given)) {
		val := given[name]
		at, ok := findTemplateAttr(tpl, name)
		if !ok {
			return Reject(KindMalformed, "template %s has no attribute %q", tpl.ID, name)
		}
		switch at.Kind {
		case worlds.AttrAmount:
			x, isInt := val.(int64)
			b := o.Bounds[name]
			if !isInt {
				return Reject(KindMalformed, "attribute %s must be a whole amount, got %v", name, val)
			}
			if x < b.Min || x > b.Max {
				return Violation("open-case", "attribute %s = %d is outside its bounds [%d, %d]", name, x, b.Min, b.Max)
			}
		case worlds.AttrChoice:
			str, _ := val.(string)
			if !slices.ContainsFunc(at.Choices, func(c worlds.Choice) bool { return c.Value == str }) {
				return Violation("open-case", "attribute %s = %v is not one of its values", name, val)
			}
		case worlds.AttrText:
			if _, isStr := val.(string); !isStr {
				return Reject(KindMalformed, "attribute %s must be text", name)
			}
			if str := val.(string); sizes && len(str) > s.limits().MessageBytes {
				return Reject(KindMalformed, "attribute %s is %d bytes; the limit is %d", name, len(str), s.limits().MessageBytes)
			}
		}
	}
	return nil
}

func findTemplateAttr(tpl *worlds.CaseTemplate, name string) (*worlds.Attr, bool) {
	for i := range tpl.Attrs {
		if tpl.Attrs[i].Name == name {
			return &tpl.Attrs[i], true
		}
	}
	return nil, false
}

// CheckAskStep reports whether m may ask NPC to to perform step task id:
// the task is a step its recipient performs, not done, whose dependencies
// are done.
func (s *State) CheckAskStep(m *Member, to, id string) *Rejection {
	t := s.Task(id)
	switch {
	case t == nil:
		return Reject(KindUnknown, "no task %q", id)
	case t.Spec.NPC == "":
		return Reject(KindState, "task %q is not a step an NPC performs when asked", id)
	case t.Spec.NPC != to:
		return Reject(KindState, "step %q is performed by %s, not %s", id, t.Spec.NPC, to)
	case t.Status == StatusDone:
		return Reject(KindState, "step %q is already done", id)
	case !s.DepsDone(t):
		return Reject(KindState, "step %q waits on %s", id, firstPending(t))
	}
	return nil
}

func firstPending(t *Task) string {
	for _, d := range t.deps {
		if d.Status != StatusDone {
			return d.ID
		}
	}
	return ""
}

// Separated returns the first separation-of-duties rule that bars member
// from doing (approve false) or approving (approve true) step task t, and
// why; nil when none does. A rule binds in both directions: the member who
// did a did step may not do a not_do step nor approve a not_approve step,
// and the member who did a not_do step may not do a did step; no member
// does two distinct steps.
func (s *State) Separated(t *Task, member string, approve bool) (*worlds.Separation, string) {
	return s.separated(t, member, approve, false)
}

// SeparatedWhenDone is Separated as it stood when t was completed: only
// the steps done before t (by sequence) bind its doer and approvers. The
// rubric reads it, so that a step done first is not undone by a later one
// that broke a rule (the later one is what does not count), and a step
// counts in the score as it did in the dense reward at its completion.
func (s *State) SeparatedWhenDone(t *Task, member string, approve bool) (*worlds.Separation, string) {
	return s.separated(t, member, approve, true)
}

func (s *State) separated(t *Task, member string, approve, before bool) (*worlds.Separation, string) {
	c := s.CaseOf(t)
	if c == nil {
		return nil, ""
	}
	step := t.Spec.Step
	// doneBy is the first of steps member did: any of its tasks, the first
	// or one a requester's reopening made (a redo binds as the step does).
	doneBy := func(steps []string) string {
		for _, st := range steps {
			if st == step {
				continue
			}
			for _, id := range c.StepTasks(st) {
				if o := s.tasks[id]; o != nil && o.Status == StatusDone && o.DoneBy == member && (!before || o.DoneSeq < t.DoneSeq) {
					return st
				}
			}
		}
		return ""
	}
	for i := range s.World.Separation {
		r := &s.World.Separation[i]
		if r.Template != c.Template {
			continue
		}
		if approve {
			if slices.Contains(r.NotApprove, step) {
				if d := doneBy(r.Did); d != "" {
					return r, fmt.Sprintf("separation rule %s: %s did step %s of case %s, so may not approve step %s", r.ID, member, d, c.ID, step)
				}
			}
			continue
		}
		if slices.Contains(r.NotDo, step) {
			if d := doneBy(r.Did); d != "" {
				return r, fmt.Sprintf("separation rule %s: %s did step %s of case %s, so may not do step %s", r.ID, member, d, c.ID, step)
			}
		}
		if slices.Contains(r.Did, step) {
			if d := doneBy(r.NotDo); d != "" {
				return r, fmt.Sprintf("separation rule %s: %s did step %s of case %s, so may not do step %s", r.ID, member, d, c.ID, step)
			}
		}
		if slices.Contains(r.Distinct, step) {
			if d := doneBy(r.Distinct); d != "" {
				return r, fmt.Sprintf("separation rule %s (four eyes): %s did step %s of case %s, so may not do step %s", r.ID, member, d, c.ID, step)
			}
		}
	}
	return nil, ""
}
