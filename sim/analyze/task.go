package analyze

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
)

// Delay kinds.
const (
	DelayDependency = "dependency" // waiting for its dependencies to be done
	DelayUnclaimed  = "unclaimed"  // ready, but nobody had claimed it
	DelayApproval   = "approval"   // an approval step sat with an approver
	DelayLeave      = "leave"      // whoever held it was on leave
	DelayOutage     = "outage"     // its queue was down
	DelayChange     = "change"     // its requirements changed: more effort
	DelayNotAsked   = "not_asked"  // an NPC step, ready, but nobody had asked its NPC to perform it
	DelayNPC        = "npc"        // an NPC step asked for, waiting for the NPC's answer
)

// Delay is one thing a task waited on, with how long (working time) and
// the event that explains it.
type Delay struct {
	Task   string `json:"task"` // the task that waited
	Kind   string `json:"kind"`
	Who    string `json:"who,omitempty"` // the member it waited on
	From   Stamp  `json:"from"`
	To     Stamp  `json:"to"`
	Waited Work   `json:"waited"`
	Seq    uint64 `json:"seq,omitempty"` // the event that explains it (a leave, an outage, a completion…)
	Text   string `json:"text"`
}

// DepState is one dependency of a task and who held it.
type DepState struct {
	Task    string   `json:"task"`
	Status  string   `json:"status"`
	Done    *Stamp   `json:"done,omitempty"`
	DoneBy  string   `json:"done_by,omitempty"`
	Holders []string `json:"holders,omitempty"` // who held it, in order
	Gating  bool     `json:"gating,omitempty"`  // the last one done: it made the task ready
}

// RuleCount counts refused actions by rule (or by kind, for refusals that
// are not policy violations).
type RuleCount struct {
	Rule  string `json:"rule"`
	Count int    `json:"count"`
}

// TaskTrace is the causal story of one task or ticket.
type TaskTrace struct {
	Task     string `json:"task"`
	Kind     string `json:"kind"`
	Title    string `json:"title,omitempty"`
	Project  string `json:"project,omitempty"`
	Queue    string `json:"queue"`
	Status   string `json:"status"`
	Assignee string `json:"assignee,omitempty"`
	Effort   Work   `json:"effort"`
	Spent    Work   `json:"spent"`
	Stints   int    `json:"stints"`

	Created  Stamp      `json:"created"`
	Deps     []DepState `json:"deps,omitempty"`
	Ready    *Stamp     `json:"ready,omitempty"` // when it was visible with every dependency done
	Holds    []Hold     `json:"holds,omitempty"`
	Deadline *Stamp     `json:"deadline,omitempty"`
	Done     *Stamp     `json:"done,omitempty"`
	DoneBy   string     `json:"done_by,omitempty"`
	// Outcome is "on time", "late", "done" (no deadline), "overdue" (open
	// past its deadline) or "open".
	Outcome string `json:"outcome"`
	Late    Work   `json:"late"` // working time past the deadline (done or, if open, by the end of the log)
	// Unverified is why the rubric does not count the completion ("" if it does).
	Unverified string `json:"unverified,omitempty"`

	Approvals  []*Approval `json:"approvals,omitempty"`
	Rejections []RuleCount `json:"rejections,omitempty"`
	// Delays are the waits that explain the outcome, longest first.
	Delays []Delay `json:"delays"`
	// Chain is the Cause chain of its completion (or of its latest event).
	Chain    []Link  `json:"chain"`
	Timeline []Entry `json:"timeline"`
	Summary  string  `json:"summary"`
}

// taskOf is the task an event is about, if any.
func taskOf(p any) string {
	switch p := p.(type) {
	case *payload.TaskClaimed:
		return p.Task
	case *payload.WorkStarted:
		return p.Task
	case *payload.WorkFinished:
		return p.Task
	case *payload.TaskCompleted:
		return p.Task
	case *payload.TicketServed:
		return p.Task
	case *payload.TicketResolved:
		return p.Task
	case *payload.TaskHandedOff:
		return p.Task
	case *payload.ApprovalRequested:
		return p.Task
	case *payload.TaskReprioritized:
		return p.Task
	case *payload.TaskChanged:
		return p.Task
	case *payload.TaskCreated:
		return p.Task.ID
	case *payload.SLABreached:
		return p.Task
	case *payload.ActionRejected:
		return p.Action.Task
	}
	return ""
}

// nextOf is the ticket a format-5 ticket.resolved serves next, if any: a
// second task the event is about.
func nextOf(p any) string {
	if p, ok := p.(*payload.TicketResolved); ok {
		return p.Next
	}
	return ""
}

// requestOf is the approval request an event is about, if any.
func requestOf(p any) string {
	switch p := p.(type) {
	case *payload.ApprovalRequested:
		return p.Request
	case *payload.ApprovalDecided:
		return p.Request
	case *payload.ApprovalEscalated:
		return p.Request
	case *payload.ActionRejected:
		return p.Action.Request
	}
	return ""
}

// Task traces task (or ticket) id.
func (s *Session) Task(id string) (*TaskTrace, error) {
	t := s.State.Task(id)
	if t == nil {
		projects := map[string]bool{}
		for i := range s.World.Projects {
			projects[s.World.Projects[i].ID] = true
		}
		var ids []string
		for k := range s.tasks {
			if !projects[k] {
				ids = append(ids, k)
			}
		}
		return nil, unknown("task", id, ids)
	}
	end := s.State.Now
	tr := &TaskTrace{Task: id, Kind: t.Kind, Title: t.Spec.Title, Project: t.Project, Queue: t.Queue, Status: t.Status,
		Assignee: t.Assignee, Effort: s.dur(t.Effort), Spent: s.dur(t.Spent), Stints: len(s.stintsOf(id)),
		Created: s.stamp(s.createdSeq(id), t.Created), Holds: s.holds(id), Approvals: s.approvals[id]}
	if t.Project != "" {
		// A project's tasks appear when it starts: with project.started, or
		// with the session if the project starts at once.
		if tr.Created.Seq = s.createdSeq(t.Project); tr.Created.Seq == 0 && t.Created == 0 {
			tr.Created.Seq = 1
		}
	}
	seqs := map[uint64]bool{}
	add := func(seq uint64) {
		if seq != 0 {
			seqs[seq] = true
		}
	}
	add(tr.Created.Seq)

	// Dependencies: when it became ready, and on whom it waited.
	readyAt, readySeq, gate := t.Created, tr.Created.Seq, ""
	allDone := true
	for _, d := range t.Spec.Deps {
		dt := s.State.Task(d)
		ds := DepState{Task: d, Status: dt.Status, DoneBy: dt.DoneBy}
		for _, h := range s.spans(d) {
			if !slices.Contains(ds.Holders, h.member) {
				ds.Holders = append(ds.Holders, h.member)
			}
		}
		if dt.Status == org.StatusDone {
			st := s.stamp(dt.DoneSeq, dt.DoneAt)
			ds.Done = &st
			add(dt.DoneSeq)
			if dt.DoneAt > readyAt || (dt.DoneAt == readyAt && dt.DoneSeq > readySeq) {
				readyAt, readySeq, gate = dt.DoneAt, dt.DoneSeq, d
			}
		} else {
			allDone = false
		}
		tr.Deps = append(tr.Deps, ds)
	}
	for i := range tr.Deps {
		tr.Deps[i].Gating = allDone && tr.Deps[i].Task == gate
	}
	if allDone && !t.Hidden {
		st := s.stamp(readySeq, readyAt)
		tr.Ready = &st
	}
	if gate != "" && allDone && readyAt > t.Created {
		dt := s.State.Task(gate)
		holders := ""
		if hs := s.holds(gate); len(hs) > 0 {
			var names []string
			for _, h := range hs {
				names = append(names, fmt.Sprintf("%s from %s", h.Member, h.From.Human()))
			}
			holders = "; held by " + strings.Join(names, ", then ")
		}
		w := s.work(t.Created, readyAt)
		tr.Delays = append(tr.Delays, Delay{Kind: DelayDependency, Who: dt.DoneBy, From: tr.Created, To: *tr.Ready, Waited: w, Seq: dt.DoneSeq,
			Text: fmt.Sprintf("waited %s for its dependency %s, completed by %s at %s (#%d)%s", w.Text, gate, dt.DoneBy, s.wall(dt.DoneAt), dt.DoneSeq, holders)})
	} else if !allDone {
		var open []string
		for _, d := range tr.Deps {
			if d.Done == nil {
				who := "nobody held it"
				if len(d.Holders) > 0 {
					who = "held by " + strings.Join(d.Holders, ", ")
				}
				open = append(open, fmt.Sprintf("%s (%s, %s)", d.Task, d.Status, who))
			}
		}
		w := s.work(t.Created, end)
		tr.Delays = append(tr.Delays, Delay{Kind: DelayDependency, From: tr.Created, To: s.stamp(0, end), Waited: w,
			Text: fmt.Sprintf("still waiting at the end for %s", strings.Join(open, "; "))})
	}

	// Unclaimed while ready (an NPC step: not yet asked, then waiting for
	// the NPC's answer).
	if tr.Ready != nil && t.Spec.NPC != "" {
		tr.Delays = append(tr.Delays, s.npcDelays(t, tr, end, add)...)
	} else if tr.Ready != nil {
		if len(tr.Holds) > 0 {
			first := tr.Holds[0]
			if w := s.work(tr.Ready.Time, first.From.Time); w.MS > 0 {
				tr.Delays = append(tr.Delays, Delay{Kind: DelayUnclaimed, Who: first.Member, From: *tr.Ready, To: first.From, Waited: w, Seq: first.From.Seq,
					Text: fmt.Sprintf("ready for %s before %s claimed it", w.Text, first.Member) + s.meanwhile(t, tr.Ready.Time, first.From.Time)})
			}
		} else if t.Status != org.StatusDone {
			w := s.work(tr.Ready.Time, end)
			tr.Delays = append(tr.Delays, Delay{Kind: DelayUnclaimed, From: *tr.Ready, To: s.stamp(0, end), Waited: w,
				Text: fmt.Sprintf("ready for %s and never claimed", w.Text) + s.meanwhile(t, tr.Ready.Time, end)})
		}
		tr.Delays = append(tr.Delays, s.backInQueue(t, tr, end)...)
	}
	// Its life: from when it appeared to when it was done (or the end).
	lifeEnd := end
	if t.Status == org.StatusDone {
		lifeEnd = t.DoneAt
	}

	// Approvals: every span a step sat with someone.
	for _, a := range tr.Approvals {
		for _, st := range a.Steps {
			for _, h := range st.Holds {
				add(h.From.Seq)
				if h.To != nil {
					add(h.To.Seq)
				}
				text := fmt.Sprintf("approval %s step %d (%s) sat with %s for %s, %s, from %s to %s", a.Request, h.Step+1, h.Role, h.Approver,
					h.Waited.Text, h.Via, h.From.Human(), stampWall(h.To, "the end"))
				seq := h.From.Seq
				if h.To != nil {
					seq = h.To.Seq
					text += " (" + h.End + ")"
				} else {
					text += " (still waiting)"
				}
				if l := h.OnLeave; l != nil {
					add(l.From.Seq)
					if l.Returned != nil {
						add(l.Returned.Seq)
					}
					seq = l.From.Seq
					text += fmt.Sprintf("; %s was on leave from %s until %s (member.left #%d), %s of the wait", h.Approver, l.From.Human(),
						stampWall(l.Returned, l.Until.Human()), l.From.Seq, h.LeaveWait.Text)
				}
				tr.Delays = append(tr.Delays, Delay{Kind: DelayApproval, Who: h.Approver, From: h.From, To: stampOr(h.To, s.stamp(0, end)),
					Waited: h.Waited, Seq: seq, Text: text})
			}
		}
	}
	// Leaves of whoever held it, while they held it.
	for _, h := range tr.Holds {
		to := end
		if h.To != nil {
			to = h.To.Time
		}
		for _, l := range s.leaves[h.Member] {
			back := end
			if l.Returned != nil {
				back = l.Returned.Time
			}
			from, until := max(l.From.Time, h.From.Time), min(back, to)
			if until <= from {
				continue
			}
			add(l.From.Seq)
			if l.Returned != nil {
				add(l.Returned.Seq)
			}
			w := s.work(from, until)
			tr.Delays = append(tr.Delays, Delay{Kind: DelayLeave, Who: h.Member, From: s.stamp(l.From.Seq, from), To: s.stamp(0, until), Waited: w, Seq: l.From.Seq,
				Text: fmt.Sprintf("%s, who held it, was on leave for %s of it (member.left #%d, from %s until %s)", h.Member, w.Text, l.From.Seq,
					l.From.Human(), stampWall(l.Returned, l.Until.Human()))})
		}
	}
	// Outages of its queue while it was ready and not done (before it was
	// ready, its dependencies held it up anyway).
	for _, o := range s.outages[t.Queue] {
		if tr.Ready == nil {
			break
		}
		up := end
		if o.Up != nil {
			up = o.Up.Time
		}
		from, until := max(o.From.Time, tr.Ready.Time), min(up, lifeEnd)
		if until <= from {
			continue
		}
		add(o.From.Seq)
		if o.Up != nil {
			add(o.Up.Seq)
		}
		w := s.work(from, until)
		tr.Delays = append(tr.Delays, Delay{Kind: DelayOutage, From: s.stamp(o.From.Seq, from), To: s.stamp(0, until), Waited: w, Seq: o.From.Seq,
			Text: fmt.Sprintf("queue %s was down for %s while it was ready (queue.down #%d): no claims or work meanwhile", t.Queue, w.Text, o.From.Seq)})
	}

	// Every event about the task or its requests.
	rules := map[string]int{}
	for _, seq := range s.aboutOf(id) {
		ev, _ := s.Event(seq)
		add(seq)
		switch p := s.payload(seq).(type) {
		case *payload.ActionRejected:
			rules[ruleOf(p)]++
		case *payload.TaskChanged:
			if s.State.Format >= org.ChangeFormat && t.Status == org.StatusDone && t.DoneSeq < ev.Seq {
				// It landed on the work delivered, which stands (format 9):
				// no delay (the timeline lists the event).
				continue
			}
			w := s.dur(p.Effort)
			tr.Delays = append(tr.Delays, Delay{Kind: DelayChange, From: s.stampOf(ev.Seq), To: s.stampOf(ev.Seq), Waited: w, Seq: ev.Seq,
				Text: fmt.Sprintf("its requirements changed at %s (#%d): +%s of effort%s", s.wall(clock.Time(ev.Time)), ev.Seq, w.Text, note(p.Note))})
		}
	}
	tr.Rejections = countRules(rules)

	// Outcome.
	if t.Deadline > 0 {
		st := s.stamp(0, t.Deadline)
		tr.Deadline = &st
	}
	switch {
	case t.Status == org.StatusDone:
		st := s.stamp(t.DoneSeq, t.DoneAt)
		tr.Done, tr.DoneBy = &st, t.DoneBy
		tr.Outcome = "done"
		if t.Deadline > 0 {
			if t.DoneAt <= t.Deadline {
				tr.Outcome = "on time"
			} else {
				tr.Outcome, tr.Late = "late", s.work(t.Deadline, t.DoneAt)
			}
		}
		tr.Unverified = policies.Verify(s.State, t)
	case t.Deadline > 0 && end > t.Deadline:
		tr.Outcome, tr.Late = "overdue", s.work(t.Deadline, end)
	default:
		tr.Outcome = "open"
	}
	if tr.Late.MS == 0 {
		tr.Late = s.dur(0)
	}

	for i := range tr.Delays {
		tr.Delays[i].Task = id
	}
	slices.SortStableFunc(tr.Delays, func(a, b Delay) int {
		if c := cmp.Compare(b.Waited.MS, a.Waited.MS); c != 0 {
			return c
		}
		return cmp.Compare(a.From.Time, b.From.Time)
	})
	order := sortedSeqs(seqs)
	for _, seq := range order {
		tr.Timeline = append(tr.Timeline, s.entry(seq))
	}
	if tr.Done != nil {
		tr.Chain = s.ChainFor(id, tr.Done.Seq)
	} else if len(order) > 0 {
		tr.Chain = s.ChainFor(id, order[len(order)-1])
	}
	tr.Summary = s.taskSummary(tr)
	return tr, nil
}

func (s *Session) taskSummary(tr *TaskTrace) string {
	var b strings.Builder
	switch tr.Outcome {
	case "late":
		fmt.Fprintf(&b, "%s was completed %s late by %s at %s (deadline %s)", tr.Task, tr.Late.Text, tr.DoneBy, tr.Done.Human(), tr.Deadline.Human())
	case "on time":
		fmt.Fprintf(&b, "%s was completed on time by %s at %s (deadline %s)", tr.Task, tr.DoneBy, tr.Done.Human(), tr.Deadline.Human())
	case "done":
		fmt.Fprintf(&b, "%s was completed by %s at %s", tr.Task, tr.DoneBy, tr.Done.Human())
	case "overdue":
		fmt.Fprintf(&b, "%s was still %s at the end, %s past its deadline %s", tr.Task, tr.Status, tr.Late.Text, tr.Deadline.Human())
	default:
		fmt.Fprintf(&b, "%s was still %s at the end", tr.Task, tr.Status)
	}
	if tr.Unverified != "" {
		fmt.Fprintf(&b, "; the rubric does not count it: %s", tr.Unverified)
	}
	if len(tr.Delays) > 0 && tr.Delays[0].Waited.MS > 0 {
		fmt.Fprintf(&b, ". Longest wait: %s", tr.Delays[0].Text)
	}
	return b.String()
}

func stampWall(st *Stamp, otherwise string) string {
	if st == nil {
		return otherwise
	}
	return st.Human()
}

func stampOr(st *Stamp, otherwise Stamp) Stamp {
	if st == nil {
		return otherwise
	}
	return *st
}

func ruleOf(p *payload.ActionRejected) string {
	if p.Rule != "" {
		return p.Rule
	}
	return p.Kind
}

func countRules(m map[string]int) []RuleCount {
	var out []RuleCount
	for r, n := range m {
		out = append(out, RuleCount{Rule: r, Count: n})
	}
	slices.SortFunc(out, func(a, b RuleCount) int { return cmp.Compare(a.Rule, b.Rule) })
	return out
}

func sortedSeqs(m map[uint64]bool) []uint64 { return slices.Sorted(maps.Keys(m)) }

// backInQueue are the unclaimed waits of ready task t after each hand-back
// to its queue: until the next claim, or the end if none came (and t is
// not done).
func (s *Session) backInQueue(t *org.Task, tr *TaskTrace, end clock.Time) []Delay {
	var out []Delay
	for i, h := range tr.Holds {
		if h.End != EndHandedBack || h.To == nil {
			continue
		}
		from := *h.To
		if tr.Ready.Time > from.Time {
			from = *tr.Ready // handed back while it was blocked: unclaimed once ready
		}
		if i+1 < len(tr.Holds) {
			next := tr.Holds[i+1]
			if w := s.work(from.Time, next.From.Time); w.MS > 0 {
				out = append(out, Delay{Kind: DelayUnclaimed, Who: next.Member, From: from, To: next.From, Waited: w, Seq: next.From.Seq,
					Text: fmt.Sprintf("back in its queue for %s, from %s handing it back (#%d) until %s claimed it", w.Text, h.Member, h.To.Seq, next.Member) +
						s.meanwhile(t, from.Time, next.From.Time)})
			}
		} else if t.Status != org.StatusDone {
			if w := s.work(from.Time, end); w.MS > 0 {
				out = append(out, Delay{Kind: DelayUnclaimed, From: from, To: s.stamp(0, end), Waited: w, Seq: h.To.Seq,
					Text: fmt.Sprintf("back in its queue for %s, from %s handing it back (#%d), and never claimed again", w.Text, h.Member, h.To.Seq) +
						s.meanwhile(t, from.Time, end)})
			}
		}
	}
	return out
}

// maxMeanwhile bounds the members, and the tasks of each, that meanwhile
// names.
const maxMeanwhile = 5

// meanwhile says what the members who could have taken t were doing from
// a to b, while it sat unclaimed: the other work they held (with how long
// of the wait) and their leaves, or that they held nothing.
func (s *Session) meanwhile(t *org.Task, a, b clock.Time) string {
	if t == nil || t.Spec == nil || b <= a {
		return ""
	}
	var parts []string
	eligible := 0
	for _, m := range s.State.Members {
		if m.NPC && !s.State.NPCServes(m.ID, t.Queue) ||
			!m.NPC && ((t.Spec.Role != "" && m.Role != t.Spec.Role) || !s.State.Serves(m.Role, t.Queue)) {
			continue
		}
		if t.Spec.Skill != "" { // skill-required refuses the others
			if wm, ok := s.World.Member(m.ID); !ok || !wm.HasSkill(t.Spec.Skill) {
				continue
			}
		}
		eligible++
		if len(parts) == maxMeanwhile {
			continue
		}
		what, heldFor := s.heldMeanwhile(m.ID, t.ID, a, b)
		desc := ""
		switch {
		case len(what) > 3:
			desc = fmt.Sprintf("held %s for %s in all", Plural(len(what), "other task"), s.dur(heldFor).Text)
		case len(what) > 0:
			desc = "held " + strings.Join(what, ", ")
		}
		for _, l := range s.leaves[m.ID] {
			until := b
			if l.Returned != nil {
				until = l.Returned.Time
			}
			if w := s.work(max(l.From.Time, a), min(until, b)); w.MS > 0 {
				if desc != "" {
					desc += "; "
				}
				desc += fmt.Sprintf("was on leave for %s of it (#%d)", w.Text, l.From.Seq)
			}
		}
		if wm, ok := s.World.Member(m.ID); ok && wm.Schedule != nil {
			// Its own hours (a shift, its team's calendar): whether it
			// was there to take it at all.
			shift := "was off shift throughout"
			if on := wm.Schedule.WorkBetween(a, b); on > 0 {
				shift = "was on shift for " + s.dur(on).Text + " of it"
			}
			if desc == "" {
				desc = "held nothing and " + shift
			} else {
				desc += "; " + shift
			}
		}
		if desc == "" {
			desc = "held nothing"
		}
		parts = append(parts, m.ID+" "+desc)
	}
	if eligible == 0 {
		return "; no member could take it (its role serves no one on its queue, and no simulated colleague serves it)"
	}
	out := fmt.Sprintf("; meanwhile the %s who could take it: %s", Plural(eligible, "member"), strings.Join(parts, "; "))
	if eligible > len(parts) {
		out += fmt.Sprintf("; and %d more", eligible-len(parts))
	}
	return out
}

// heldMeanwhile lists what member held from a to b besides task skip:
// "task (time)" for each hold that overlaps it by some working time, in
// the order of the tasks' creation and then of their holds, and the
// working time they add up to.
func (s *Session) heldMeanwhile(member, skip string, a, b clock.Time) (what []string, total clock.Duration) {
	mh := s.heldBy()[member]
	if mh == nil {
		return nil, 0
	}
	// The holds that begin before b, back to the last that reaches past a.
	i, _ := slices.BinarySearchFunc(mh.spans, b, func(sp heldSpan, b clock.Time) int { return cmp.Compare(sp.from, b) })
	var hits []heldSpan
	for i--; i >= 0 && mh.reach[i] > a; i-- {
		if mh.spans[i].task != skip {
			hits = append(hits, mh.spans[i])
		}
	}
	slices.SortFunc(hits, func(x, y heldSpan) int { return cmp.Or(cmp.Compare(x.rank, y.rank), cmp.Compare(x.nth, y.nth)) })
	// A task held more than once (handed back, claimed again) is named
	// once, with its holds' time together.
	var tasks []string
	var held []clock.Duration
	for _, sp := range hits {
		if w := s.work(max(sp.from, a), min(sp.to, b)); w.MS > 0 {
			if n := len(tasks); n > 0 && tasks[n-1] == sp.task {
				held[n-1] += w.MS
			} else {
				tasks, held = append(tasks, sp.task), append(held, w.MS)
			}
			total += w.MS
		}
	}
	for i, t := range tasks {
		what = append(what, fmt.Sprintf("%s (%s)", t, s.dur(held[i]).Text))
	}
	return what, total
}

// heldSpan is one hold of a task, as the per-member index has it.
type heldSpan struct {
	from, to  clock.Time // to is endOfTime for a hold that lasted to the end of the log
	rank, nth int        // the task's place among all tasks (creation order), the hold's among the task's
	task      string
}

// memberHolds are the holds of one member, by their start, with reach[i]
// the latest end of spans[:i+1].
type memberHolds struct {
	spans []heldSpan
	reach []clock.Time
}

const endOfTime = clock.Time(math.MaxInt64)

// heldBy returns the holds of each member, indexed once, at the first
// trace that asks who held what meanwhile: a member's trace asks it of
// every task the member held, each of which would otherwise walk every
// task of the session. Concurrent readers share the one index.
func (s *Session) heldBy() map[string]*memberHolds {
	s.byMemberOnce.Do(s.indexHolds)
	return s.byMember
}

func (s *Session) indexHolds() {
	s.byMember = map[string]*memberHolds{}
	for rank, task := range s.State.AllTasks() {
		for nth, h := range s.spans(task.ID) {
			to := endOfTime
			if h.to != 0 {
				to = h.toT
			}
			mh := s.byMember[h.member]
			if mh == nil {
				mh = &memberHolds{}
				s.byMember[h.member] = mh
			}
			mh.spans = append(mh.spans, heldSpan{from: h.fromT, to: to, rank: rank, nth: nth, task: task.ID})
		}
	}
	for _, mh := range s.byMember { // order: each member's list is its own
		slices.SortStableFunc(mh.spans, func(x, y heldSpan) int { return cmp.Compare(x.from, y.from) })
		mh.reach = make([]clock.Time, len(mh.spans))
		for i, sp := range mh.spans {
			mh.reach[i] = sp.to
			if i > 0 {
				mh.reach[i] = max(sp.to, mh.reach[i-1])
			}
		}
	}
}
