package analyze

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
)

// This file explains cases (format 2): the story of one case (Case, as
// corpsim trace --case tells it) and the cases of a session at a glance
// (Cases: lead time per template, SLA by priority, and where each late or
// breached case waited, as corpsim report shows it).

// Case outcomes.
const (
	CaseInSLA     = "in SLA"             // done, and never past its SLA
	CaseDoneLate  = "done after its SLA" // done, but its SLA passed while it was open
	CaseBreached  = "breached, open"     // still open at the end, its SLA passed
	CaseOpen      = "open"               // still open at the end, within its SLA
	CaseUnchecked = "done, unverified"   // every step done, but the rubric does not count one
)

// CaseTrace is the story of one case: how it was opened, with what, and
// each of its steps.
type CaseTrace struct {
	Case     string  `json:"case"`
	Template string  `json:"template"`
	Title    string  `json:"title"`
	Queue    string  `json:"queue"`
	Team     string  `json:"team"`
	Priority int     `json:"priority"`
	Value    float64 `json:"value"`
	Opened   Stamp   `json:"opened"`
	OpenedBy string  `json:"opened_by,omitempty"` // the member who opened it; "" for an arrival
	Arrival  string  `json:"arrival,omitempty"`   // the arrival stream that opened it
	// Attributes are what every member who sees the case sees.
	Attributes payload.Attrs `json:"attributes"`
	// HiddenFacts are the facts drawn for the case: ground truth for
	// analysts that no member sees (an NPC's answer may tell some of it).
	HiddenFacts payload.Attrs `json:"hidden_facts,omitempty"`
	Skipped     []string      `json:"skipped,omitempty"` // optional steps whose condition did not hold
	Deadline    *Stamp        `json:"deadline,omitempty"`
	Due         *Stamp        `json:"due,omitempty"`      // its SLA
	Breached    *Stamp        `json:"breached,omitempty"` // its sla.breached
	Done        *Stamp        `json:"done,omitempty"`     // its last step's completion
	Outcome     string        `json:"outcome"`
	// Unverified is why the rubric does not count the case ("" if it does
	// or it is open): the first step that does not verify.
	Unverified string `json:"unverified,omitempty"`
	// LeadTime is the working time (its team's schedule) from opening to
	// done, or to the end of the log while open.
	LeadTime Work            `json:"lead_time"`
	Steps    []CaseStepTrace `json:"steps"`
	// Waits are its steps' waits, longest first, without the waits of a
	// step for the steps before it (those are the earlier steps' time).
	Waits []Delay `json:"waits"`
	// AtSLA is what its open steps waited for when its SLA passed.
	AtSLA    []StepWait `json:"at_sla,omitempty"`
	Timeline []Entry    `json:"timeline"`
	Summary  string     `json:"summary"`
}

// CaseStepTrace is one step of a case.
type CaseStepTrace struct {
	Step   string `json:"step"`
	Task   string `json:"task"`
	Title  string `json:"title,omitempty"`
	Role   string `json:"role,omitempty"`
	NPC    string `json:"npc,omitempty"` // the NPC who performs it when asked
	Status string `json:"status"`
	Ready  *Stamp `json:"ready,omitempty"`
	Holds  []Hold `json:"holds,omitempty"`
	Done   *Stamp `json:"done,omitempty"`
	DoneBy string `json:"done_by,omitempty"`
	// Asks are the messages asking its NPC to perform it; Answers the
	// NPC's replies to them (the per-case answer text).
	Asks      []Note      `json:"asks,omitempty"`
	Answers   []Note      `json:"answers,omitempty"`
	Approvals []*Approval `json:"approvals,omitempty"`
	// Refusals are the refused actions on it (separation rules among them).
	Refusals   []Refusal `json:"refusals,omitempty"`
	Unverified string    `json:"unverified,omitempty"`
	// Outcome is what the step had to leave behind on a record and what
	// its completer read and wrote (format 2 systems, outcomes.go).
	Outcome *OutcomeTrace `json:"outcome,omitempty"`
}

// Note is a message of a case's story.
type Note struct {
	At   Stamp  `json:"at"`
	From string `json:"from"`
	To   string `json:"to"`
	Text string `json:"text"`
}

// Refusal is an action on a step that the company refused.
type Refusal struct {
	At     Stamp  `json:"at"`
	Member string `json:"member"`
	Action string `json:"action"`
	Kind   string `json:"kind"`
	Rule   string `json:"rule,omitempty"`
	Reason string `json:"reason"`
}

// StepWait is what one step of a case waited for at an instant.
type StepWait struct {
	Task  string `json:"task"`
	Kind  string `json:"kind"` // a Delay kind, or "held" (someone held it and had not completed it)
	Who   string `json:"who,omitempty"`
	Since Stamp  `json:"since"`
	Text  string `json:"text"`
}

// Case traces case id.
func (s *Session) Case(id string) (*CaseTrace, error) {
	c := s.State.Case(id)
	if c == nil {
		return nil, unknown("case", id, s.State.CaseIDs())
	}
	end := s.State.Now
	ct := &CaseTrace{Case: id, Template: c.Template, Title: c.Title, Queue: c.Queue, Team: c.Team, Priority: c.Priority, Value: c.Value,
		Opened: s.stamp(s.caseSeq[id], c.Opened), OpenedBy: c.OpenedBy, Arrival: c.Arrival, Attributes: c.Attributes,
		HiddenFacts: c.Facts, Skipped: c.Skipped}
	if c.Deadline > 0 {
		st := s.stamp(0, c.Deadline)
		ct.Deadline = &st
	}
	if c.Due > 0 {
		st := s.stamp(0, c.Due)
		ct.Due = &st
	}
	if seq := s.breachSeq[id]; seq != 0 {
		st := s.stampOf(seq)
		ct.Breached = &st
	}
	seqs := map[uint64]bool{}
	add := func(seq uint64) {
		if seq != 0 {
			seqs[seq] = true
		}
	}
	add(ct.Opened.Seq)
	add(s.breachSeq[id])
	for _, tid := range c.Steps {
		t := s.State.Task(tid)
		tr, err := s.Task(tid)
		if err != nil {
			return nil, err
		}
		st := CaseStepTrace{Step: t.Spec.Step, Task: tid, Title: t.Spec.Title, Role: t.Spec.Role, NPC: t.Spec.NPC, Status: t.Status,
			Ready: tr.Ready, Holds: tr.Holds, Done: tr.Done, DoneBy: tr.DoneBy, Approvals: tr.Approvals, Unverified: tr.Unverified}
		for _, seq := range s.asks[tid] {
			st.Asks = append(st.Asks, s.note(seq))
		}
		for _, seq := range s.answers[tid] {
			st.Answers = append(st.Answers, s.note(seq))
		}
		for _, seq := range s.aboutOf(tid) {
			if p, ok := s.payload(seq).(*payload.ActionRejected); ok {
				ev, _ := s.Event(seq)
				st.Refusals = append(st.Refusals, Refusal{At: s.stampOf(seq), Member: ev.Actor, Action: p.Action.Type, Kind: p.Kind, Rule: p.Rule, Reason: p.Reason})
			}
		}
		for _, d := range tr.Delays {
			if d.Kind != DelayDependency || !s.inCase(t, d) {
				ct.Waits = append(ct.Waits, d)
			}
		}
		for _, e := range tr.Timeline {
			add(e.Seq)
		}
		st.Outcome = s.outcomeTrace(c, t)
		if ct.Unverified == "" && tr.Unverified != "" {
			ct.Unverified = tid + ": " + tr.Unverified
		}
		ct.Steps = append(ct.Steps, st)
	}
	slices.SortStableFunc(ct.Waits, func(a, b Delay) int {
		if c := cmp.Compare(b.Waited.MS, a.Waited.MS); c != 0 {
			return c
		}
		return cmp.Compare(a.From.Time, b.From.Time)
	})
	sched := s.World.TeamSchedule(c.Team)
	to := end
	switch {
	case c.Done():
		st := s.stamp(s.lastStepSeq(c), c.DoneAt)
		ct.Done, to = &st, c.DoneAt
		ct.Outcome = CaseInSLA
		if c.Breached {
			ct.Outcome = CaseDoneLate
		}
		if ct.Unverified != "" {
			ct.Outcome = CaseUnchecked
		}
	case c.Breached:
		ct.Outcome = CaseBreached
	default:
		ct.Outcome = CaseOpen
	}
	ct.LeadTime = s.dur(sched.WorkBetween(c.Opened, max(to, c.Opened)))
	if c.Breached && c.Due > 0 {
		ct.AtSLA = s.waitingAt(c, c.Due)
	}
	for _, seq := range sortedSeqs(seqs) {
		ct.Timeline = append(ct.Timeline, s.entry(seq))
	}
	ct.Summary = s.caseSummary(ct)
	return ct, nil
}

// inCase reports whether a dependency wait of step t was for another step
// of its own case.
func (s *Session) inCase(t *org.Task, d Delay) bool {
	if d.Seq == 0 { // still waiting at the end: for its own earlier steps
		return true
	}
	ev, ok := s.Event(d.Seq)
	if !ok {
		return false
	}
	if p, ok := s.payload(ev.Seq).(*payload.TaskCompleted); ok {
		o := s.State.Task(p.Task)
		return o != nil && o.Case == t.Case
	}
	return false
}

// lastStepSeq is the seq of the completion of c's last step.
func (s *Session) lastStepSeq(c *org.Case) uint64 {
	var last uint64
	for _, id := range c.Steps {
		last = max(last, s.State.Task(id).DoneSeq)
	}
	return last
}

func (s *Session) note(seq uint64) Note {
	ev, _ := s.Event(seq)
	p, _ := s.payload(seq).(*payload.MessageSent)
	n := Note{At: s.stampOf(seq), From: ev.Actor}
	if p != nil {
		n.To, n.Text = p.To, p.Text
	}
	return n
}

// waitingAt says what each step of c that was ready and not done at at
// waited for then: a claim, an ask of its NPC, the NPC's answer, an
// approval, or the member who held it. Steps still waiting for the case's
// earlier steps are left out.
func (s *Session) waitingAt(c *org.Case, at clock.Time) []StepWait {
	var out []StepWait
	for _, id := range c.Steps {
		t := s.State.Task(id)
		if t.Status == org.StatusDone && t.DoneAt <= at {
			continue
		}
		ready, readySeq := c.Opened, s.caseSeq[c.ID]
		blocked := false
		for _, d := range t.Spec.Deps {
			dt := s.State.Task(d)
			if dt == nil || dt.Status != org.StatusDone || dt.DoneAt > at {
				blocked = true
				break
			}
			if dt.DoneAt > ready {
				ready, readySeq = dt.DoneAt, dt.DoneSeq
			}
		}
		if blocked {
			continue
		}
		readySt := s.stamp(readySeq, ready)
		var held *Hold
		for _, h := range s.spans(id) {
			if h.fromT <= at && (h.to == 0 || h.toT > at) {
				out := s.writeOut(h)
				held = &out
			}
		}
		w := StepWait{Task: id}
		switch {
		case t.Spec.NPC != "":
			var ask uint64
			for _, seq := range s.asks[id] {
				if ev, _ := s.Event(seq); clock.Time(ev.Time) <= at {
					ask = seq
					break
				}
			}
			if ask == 0 {
				w.Kind, w.Who, w.Since = DelayNotAsked, t.Spec.NPC, readySt
				w.Text = fmt.Sprintf("ready since %s; nobody had asked %s to perform it", readySt.Human(), t.Spec.NPC)
			} else {
				ev, _ := s.Event(ask)
				w.Kind, w.Who, w.Since = DelayNPC, t.Spec.NPC, s.stampOf(ask)
				w.Text = fmt.Sprintf("waiting for %s's answer, asked by %s at %s (#%d)", t.Spec.NPC, ev.Actor, w.Since.Human(), ask)
			}
		case held == nil:
			w.Kind, w.Since = DelayUnclaimed, readySt
			w.Text = fmt.Sprintf("ready since %s; nobody had claimed it", readySt.Human())
			if back := s.handedBackBy(id, at); back != nil && back.To.Time >= ready {
				w.Who, w.Since = back.Member, *back.To
				w.Text = fmt.Sprintf("back in its queue since %s, when %s handed it back (#%d); nobody had claimed it since", back.To.Human(), back.Member, back.To.Seq)
			}
		default:
			w.Kind, w.Who, w.Since = "held", held.Member, held.From
			doing := "not working on it"
			for _, sn := range s.stintsOf(id) {
				if ev, _ := s.Event(sn.start); clock.Time(ev.Time) <= at && (sn.finish == 0 || clock.Time(s.Events[sn.finish-1].Time) > at) {
					doing = "working on it"
				}
			}
			w.Text = fmt.Sprintf("with %s since %s, %s", held.Member, held.From.Human(), doing)
			for _, a := range s.approvals[id] {
				for _, step := range a.Steps {
					for _, h := range step.Holds {
						if h.From.Time <= at && (h.To == nil || h.To.Time > at) {
							w.Kind, w.Who, w.Since = DelayApproval, h.Approver, h.From
							w.Text = fmt.Sprintf("held by %s, its approval %s step %d (%s) with %s since %s, %s", held.Member, a.Request, h.Step+1, h.Role,
								h.Approver, h.From.Human(), h.Via)
						}
					}
				}
			}
		}
		out = append(out, w)
	}
	return out
}

func (s *Session) caseSummary(ct *CaseTrace) string {
	var b strings.Builder
	by := "arrival " + ct.Arrival
	if ct.OpenedBy != "" {
		by = ct.OpenedBy
	}
	fmt.Fprintf(&b, "case %s (%s, priority %d) was opened by %s at %s", ct.Case, ct.Template, ct.Priority, by, ct.Opened.Human())
	switch ct.Outcome {
	case CaseInSLA:
		fmt.Fprintf(&b, " and done within its SLA at %s, after %s", ct.Done.Human(), ct.LeadTime.Text)
	case CaseDoneLate:
		fmt.Fprintf(&b, " and done at %s, after %s; its SLA passed at %s", ct.Done.Human(), ct.LeadTime.Text, ct.Breached.Human())
	case CaseUnchecked:
		fmt.Fprintf(&b, "; its steps were done at %s but the rubric does not count it (%s)", ct.Done.Human(), ct.Unverified)
	case CaseBreached:
		fmt.Fprintf(&b, "; still open at the end after %s, its SLA passed at %s", ct.LeadTime.Text, ct.Breached.Human())
	default:
		fmt.Fprintf(&b, "; still open at the end after %s", ct.LeadTime.Text)
	}
	for _, w := range ct.AtSLA {
		fmt.Fprintf(&b, ". When its SLA passed, %s was %s", w.Task, w.Text)
	}
	if len(ct.Waits) > 0 && ct.Waits[0].Waited.MS > 0 {
		fmt.Fprintf(&b, ". Longest wait: %s %s", ct.Waits[0].Task, ct.Waits[0].Text)
	}
	return b.String()
}

// npcDelays are the waits of an NPC step t that was ready: until someone
// asked its NPC to perform it, then for the NPC's answer.
func (s *Session) npcDelays(t *org.Task, tr *TaskTrace, end clock.Time, add func(uint64)) []Delay {
	npc, ready := t.Spec.NPC, *tr.Ready
	for _, seq := range s.answers[t.ID] {
		add(seq)
	}
	var ask uint64
	for _, seq := range s.asks[t.ID] {
		add(seq)
		if ask == 0 {
			ask = seq
		}
	}
	if ask == 0 {
		if len(tr.Holds) > 0 || t.Status == org.StatusDone {
			return nil
		}
		w := s.work(ready.Time, end)
		return []Delay{{Kind: DelayNotAsked, Who: npc, From: ready, To: s.stamp(0, end), Waited: w,
			Text: fmt.Sprintf("ready for %s and nobody asked %s to perform it", w.Text, npc)}}
	}
	var out []Delay
	asker, _ := s.Event(ask)
	asked := s.stampOf(ask)
	if w := s.work(ready.Time, asked.Time); w.MS > 0 {
		out = append(out, Delay{Kind: DelayNotAsked, Who: asker.Actor, From: ready, To: asked, Waited: w, Seq: ask,
			Text: fmt.Sprintf("ready for %s before %s asked %s to perform it (#%d)", w.Text, asker.Actor, npc, ask)})
	}
	from := asked
	if ready.Time > asked.Time {
		from = ready
	}
	if len(tr.Holds) > 0 {
		h := tr.Holds[0]
		w := s.work(from.Time, h.From.Time)
		out = append(out, Delay{Kind: DelayNPC, Who: npc, From: from, To: h.From, Waited: w, Seq: h.From.Seq,
			Text: fmt.Sprintf("waited %s for %s's answer, asked by %s at %s (#%d), performed at %s (#%d)", w.Text, npc, asker.Actor,
				asked.Human(), ask, h.From.Human(), h.From.Seq)})
	} else {
		w := s.work(from.Time, end)
		out = append(out, Delay{Kind: DelayNPC, Who: npc, From: from, To: s.stamp(0, end), Waited: w, Seq: ask,
			Text: fmt.Sprintf("still waiting at the end for %s's answer, asked by %s at %s (#%d), %s before", npc, asker.Actor, asked.Human(), ask, w.Text)})
	}
	return out
}

// CaseSummary is a session's cases at a glance: lead time per template,
// SLA by priority, and where each late or breached case waited.
type CaseSummary struct {
	Cases      int             `json:"cases"`
	Done       int             `json:"done"`
	InSLA      int             `json:"in_sla"`
	Breached   int             `json:"breached"`
	Templates  []TemplateCases `json:"templates"`
	ByPriority []PriorityCases `json:"by_priority"`
	// Late are the cases that breached their SLA or missed their deadline,
	// furthest past it first; LateOmitted counts those left out.
	Late        []LateCase `json:"late"`
	LateOmitted int        `json:"late_omitted,omitempty"`
}

// TemplateCases is how one template's cases fared, with their lead times
// (working time on their team's schedule, of the done cases).
type TemplateCases struct {
	Template string `json:"template"`
	Cases    int    `json:"cases"`
	Done     int    `json:"done"` // every step done and verified
	InSLA    int    `json:"in_sla"`
	Breached int    `json:"breached"`
	Open     int    `json:"open"`
	Mean     Work   `json:"lead_time_mean"`
	P90      Work   `json:"lead_time_p90"`
}

// PriorityCases is how the cases of one priority fared against their SLA.
type PriorityCases struct {
	Priority int     `json:"priority"`
	Cases    int     `json:"cases"`
	Done     int     `json:"done"`
	InSLA    int     `json:"in_sla"`
	Breached int     `json:"breached"`
	Open     int     `json:"open"`
	Share    float64 `json:"share_in_sla"`
}

// LateCase is a case that breached its SLA or missed its deadline, and
// where it waited.
type LateCase struct {
	Case     string `json:"case"`
	Template string `json:"template"`
	Priority int    `json:"priority"`
	Outcome  string `json:"outcome"`
	// Over is the working time past its SLA (or its deadline, when it has
	// no SLA), until done or the end of the log.
	Over  Work       `json:"over"`
	AtSLA []StepWait `json:"at_sla,omitempty"`
	// Waits are its longest waits (maxLateWaits), longest first.
	Waits        []Delay `json:"waits"`
	WaitsOmitted int     `json:"waits_omitted,omitempty"`
}

// maxLateWaits is how many waits of a late case the summary keeps.
const maxLateWaits = 3

// Cases summarises the session's cases; it explains at most maxLate late
// or breached cases (0: 30).
func (s *Session) Cases(maxLate int) *CaseSummary {
	if maxLate <= 0 {
		maxLate = 30
	}
	out := &CaseSummary{}
	if len(s.State.Cases) == 0 {
		return out
	}
	byTpl := map[string]*TemplateCases{}
	leads := map[string][]clock.Duration{}
	var tpls []string
	for i := range s.World.Cases {
		id := s.World.Cases[i].ID
		byTpl[id] = &TemplateCases{Template: id}
		tpls = append(tpls, id)
	}
	byPri := map[int]*PriorityCases{}
	type late struct {
		c    *org.Case
		over clock.Duration
	}
	var lates []late
	end := s.State.Now
	for _, c := range s.State.Cases {
		tc, pc := byTpl[c.Template], byPri[c.Priority]
		if pc == nil {
			pc = &PriorityCases{Priority: c.Priority}
			byPri[c.Priority] = pc
		}
		out.Cases++
		tc.Cases++
		pc.Cases++
		sched := s.World.TeamSchedule(c.Team)
		done := policies.CaseDone(s.State, c)
		if done {
			out.Done++
			tc.Done++
			pc.Done++
			leads[c.Template] = append(leads[c.Template], sched.WorkBetween(c.Opened, c.DoneAt))
			if !c.Breached {
				out.InSLA++
				tc.InSLA++
				pc.InSLA++
			}
		}
		if !c.Done() {
			tc.Open++
			pc.Open++
		}
		if c.Breached {
			out.Breached++
			tc.Breached++
			pc.Breached++
		}
		until := end
		if c.Done() {
			until = c.DoneAt
		}
		limit := c.Due
		if limit == 0 {
			limit = c.Deadline
		}
		if c.Breached || (limit > 0 && until > limit) {
			var over clock.Duration
			if limit > 0 && until > limit {
				over = sched.WorkBetween(limit, until)
			}
			lates = append(lates, late{c: c, over: over})
		}
	}
	for _, id := range tpls {
		tc := byTpl[id]
		if ls := leads[id]; len(ls) > 0 {
			slices.Sort(ls)
			var sum clock.Duration
			for _, l := range ls {
				sum += l
			}
			tc.Mean = s.dur(sum / clock.Duration(len(ls)))
			tc.P90 = s.dur(ls[(9*len(ls)+9)/10-1])
		} else {
			tc.Mean, tc.P90 = s.dur(0), s.dur(0)
		}
		out.Templates = append(out.Templates, *tc)
	}
	for _, pc := range byPri { // order: sorted below
		if pc.Cases > 0 {
			pc.Share = float64(pc.InSLA) / float64(pc.Cases)
		}
		out.ByPriority = append(out.ByPriority, *pc)
	}
	slices.SortFunc(out.ByPriority, func(a, b PriorityCases) int { return cmp.Compare(b.Priority, a.Priority) })
	slices.SortFunc(lates, func(a, b late) int {
		if c := cmp.Compare(b.over, a.over); c != 0 {
			return c
		}
		return cmp.Compare(a.c.ID, b.c.ID)
	})
	if len(lates) > maxLate {
		out.LateOmitted = len(lates) - maxLate
		lates = lates[:maxLate]
	}
	for _, l := range lates {
		ct, err := s.Case(l.c.ID)
		if err != nil {
			continue
		}
		lc := LateCase{Case: ct.Case, Template: ct.Template, Priority: ct.Priority, Outcome: ct.Outcome, Over: s.dur(l.over), AtSLA: ct.AtSLA}
		for _, d := range ct.Waits {
			if d.Waited.MS == 0 {
				continue
			}
			if len(lc.Waits) == maxLateWaits {
				lc.WaitsOmitted++
				continue
			}
			lc.Waits = append(lc.Waits, d)
		}
		out.Late = append(out.Late, lc)
	}
	return out
}

// handedBackBy is the last hold of task id that ended at or before at by a
// hand-back to its queue, if the hold that ended last by then ended so.
func (s *Session) handedBackBy(id string, at clock.Time) *Hold {
	var last *hold
	for _, h := range s.spans(id) {
		if h.to != 0 && h.toT <= at {
			last = &h
		}
	}
	if last == nil || last.end != EndHandedBack {
		return nil
	}
	out := s.writeOut(*last)
	return &out
}
