package analyze

import (
	"fmt"
	"strings"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
)

// Entry is one event of a timeline, with a sentence saying what happened
// and the chain of events that led to it.
type Entry struct {
	Stamp
	Type  string `json:"type"`
	Actor string `json:"actor,omitempty"`
	Cause uint64 `json:"cause,omitempty"`
	Text  string `json:"text"`
	// Because is the nearest event in the Cause chain that is not a turn
	// (a turn only says that its member was asked), if there is one.
	Because *Link `json:"because,omitempty"`
}

// Link is one event of a Cause chain.
type Link struct {
	Stamp
	Type  string `json:"type"`
	Actor string `json:"actor,omitempty"`
	Text  string `json:"text"`
	// Note explains a step of the chain that is not the recorded Cause: a
	// turn records what last woke its member, which the member may already
	// have seen at an earlier turn; such a turn came due because the
	// member's previous action ended, and the chain goes on from the
	// member's latest event before it.
	Note string `json:"note,omitempty"`
}

// MaxChain bounds how many links Chain follows.
const MaxChain = 16

// Chain follows the Cause links from the event seq back to an event with no
// cause: seq's event first, then what caused it, and so on. A turn whose
// recorded cause its member had already seen at an earlier turn is followed
// instead to the member's latest event before it (what kept it busy until
// then), with a Note saying so. A run of one member's stints of work on one
// task is shown as its latest and earliest events with one Link of type
// "stints" (and seq 0) between; the chain holds at most MaxChain links.
func (s *Session) Chain(seq uint64) []Link { return s.links(s.walk(seq, maxWalk)) }

// links makes the Links of a walk, collapsing runs of stints.
func (s *Session) links(steps []step) []Link {
	var out []Link
	var upTo []int // the last step of steps each link of out stands for
	add := func(l Link, k int) { out, upTo = append(out, l), append(upTo, k) }
	for i := 0; i < len(steps) && len(out) < MaxChain; {
		key := s.workOn(steps[i].seq)
		if key == "" || s.Events[steps[i].seq-1].Type != payload.EvWorkFinished {
			add(s.link(steps[i]), i)
			i++
			continue
		}
		// A run: this work.finished and what follows while it is the same
		// work or a turn that only came due when a stint ended.
		actor := s.Events[steps[i].seq-1].Actor
		j, first := i+1, i
		for j < len(steps) {
			if s.workOn(steps[j].seq) == key {
				first = j
			} else if ev := s.Events[steps[j].seq-1]; ev.Type != payload.EvTurn || steps[j].note == "" || ev.Actor != actor {
				break
			}
			j++
		}
		if first-i < 4 {
			for k := i; k <= first; k++ {
				add(s.link(steps[k]), k)
			}
		} else {
			stints := 0
			for k := i; k <= first; k++ {
				if s.Events[steps[k].seq-1].Type == payload.EvWorkStarted {
					stints++
				}
			}
			last := s.link(steps[first])
			add(s.link(steps[i]), i)
			add(Link{Stamp: Stamp{Time: last.Time, Wall: last.Wall}, Type: "stints", Actor: actor,
				Text: fmt.Sprintf("%d stints of %s's work on %s, from #%d to #%d", stints, actor, taskOf(s.payload(steps[i].seq)), steps[first].seq, steps[i].seq)}, first-1)
			add(last, first)
		}
		i = first + 1
	}
	if len(out) > MaxChain {
		out, upTo = out[:MaxChain], upTo[:MaxChain]
	}
	// Cut at MaxChain links: the last one says where the chain goes on.
	if n := len(out); n > 0 {
		if k := upTo[n-1]; k+1 < len(steps) {
			more := len(steps) - k - 1
			cut := fmt.Sprintf("the chain is cut here at %d links: it goes on with #%d", MaxChain, steps[k+1].seq)
			if more > 1 {
				cut += fmt.Sprintf(", %d events in all back to #%d", more, steps[len(steps)-1].seq)
			}
			if out[n-1].Note != "" {
				cut = out[n-1].Note + "; " + cut
			}
			out[n-1].Note = cut
		}
	}
	return out
}

// maxWalk bounds how far back Chain looks.
const maxWalk = 100000

type step struct {
	seq  uint64
	note string
}

// walk follows the Cause links (and the stale turns' substitutes) from seq,
// at most limit steps.
func (s *Session) walk(seq uint64, limit int) []step {
	var out []step
	for seq != 0 && len(out) < limit {
		ev, ok := s.Event(seq)
		if !ok {
			break
		}
		st, next := step{seq: seq}, ev.Cause
		if prev, ok := s.after[seq]; ok {
			st.note = fmt.Sprintf("due when %s's previous action ended (#%d); its recorded cause #%d was seen at an earlier turn", ev.Actor, prev, ev.Cause)
			next = prev
		}
		out = append(out, st)
		if next >= seq { // never in a valid log; do not loop
			break
		}
		seq = next
	}
	return out
}

func (s *Session) link(st step) Link {
	ev := s.Events[st.seq-1]
	return Link{Stamp: s.stampOf(st.seq), Type: ev.Type, Actor: ev.Actor, Text: s.Describe(st.seq), Note: st.note}
}

// workOn names the member and task of a work.started or work.finished event.
func (s *Session) workOn(seq uint64) string {
	ev := s.Events[seq-1]
	if ev.Type == payload.EvWorkStarted || ev.Type == payload.EvWorkFinished {
		return ev.Actor + "/" + taskOf(s.payload(seq))
	}
	return ""
}

// entry is the timeline entry of event seq.
func (s *Session) entry(seq uint64) Entry {
	ev, _ := s.Event(seq)
	e := Entry{Stamp: s.stampOf(seq), Type: ev.Type, Actor: ev.Actor, Cause: ev.Cause, Text: s.Describe(seq)}
	// Turns come in small runs; a few steps reach what caused them.
	for _, st := range s.walk(ev.Cause, 8) {
		if t := s.Events[st.seq-1].Type; t != payload.EvTurn && t != payload.EvTurnTimeout && t != payload.EvTurnFailed {
			l := s.link(st)
			e.Because = &l
			break
		}
	}
	return e
}

// wall writes an instant for a sentence.
func (s *Session) wall(t clock.Time) string { return s.World.Calendar.Wall(t).Format(HumanLayout) }

// Describe says in one sentence what the event with seq did.
func (s *Session) Describe(seq uint64) string {
	ev, ok := s.Event(seq)
	if !ok {
		return fmt.Sprintf("no event %d", seq)
	}
	who := ev.Actor
	switch p := s.payload(seq).(type) {
	case *payload.TurnFailed:
		return fmt.Sprintf("%s's agent could not decide turn %d: %s", who, p.Turn, p.Reason)
	case *payload.TaskClaimed:
		return fmt.Sprintf("%s claimed %s", who, p.Task)
	case *payload.WorkStarted:
		return fmt.Sprintf("%s started %s of work on %s (until %s)", who, s.dur(p.Work).Text, p.Task, s.wall(p.Until))
	case *payload.WorkFinished:
		return fmt.Sprintf("%s of %s's work on %s finished", s.dur(p.Work).Text, who, p.Task)
	case *payload.TaskCompleted:
		return fmt.Sprintf("%s completed %s", who, p.Task)
	case *payload.TicketServed:
		return fmt.Sprintf("%s took %s from its queue and started %s of work on it (until %s)", who, p.Task, s.dur(p.Work).Text, s.wall(p.Until))
	case *payload.TicketResolved:
		done := fmt.Sprintf("%s of %s's work on %s finished, and %s completed it", s.dur(p.Work).Text, who, p.Task, who)
		switch {
		case p.Next != "":
			return fmt.Sprintf("%s, then took %s from its queue and started %s of work on it (until %s)", done, p.Next, s.dur(p.NextWork).Text, s.wall(p.NextUntil))
		case p.Waits && p.NextUntil > 0:
			return fmt.Sprintf("%s, then waits until %s", done, s.wall(p.NextUntil))
		case p.Waits:
			return done + ", then waits for news"
		}
		return done
	case *payload.TaskHandedOff:
		if p.To == "" {
			return fmt.Sprintf("%s handed %s back to its queue", who, p.Task)
		}
		return fmt.Sprintf("%s handed %s to %s", who, p.Task, p.To)
	case *payload.ApprovalRequested:
		var steps []string
		for i, st := range p.Steps {
			steps = append(steps, fmt.Sprintf("step %d (%s) with %s", i+1, st.Role, st.Approver))
		}
		return fmt.Sprintf("%s asked for approval %s of %s (%d): %s", who, p.Request, p.Task, p.Amount, strings.Join(steps, ", "))
	case *payload.ApprovalDecided:
		task := ""
		if a := s.requests[p.Request]; a != nil {
			task = " of " + a.Task
		}
		if ev.Type == payload.EvApprovalRejected {
			return fmt.Sprintf("%s rejected step %d of %s%s: %s", who, p.Step+1, p.Request, task, p.Reason)
		}
		return fmt.Sprintf("%s granted step %d of %s%s", who, p.Step+1, p.Request, task)
	case *payload.ApprovalEscalated:
		by := ""
		if who != "" {
			by = " by " + who
		}
		return fmt.Sprintf("step %d of %s moved from %s to %s (%s%s)", p.Step+1, p.Request, p.From, p.To, p.Reason, by)
	case *payload.MemberLeft:
		d := ""
		if p.Delegate != "" {
			d = ", delegate " + p.Delegate
		}
		return fmt.Sprintf("%s went on leave until %s%s", who, s.wall(p.Until), d)
	case *payload.QueueDown:
		return fmt.Sprintf("queue %s went down until %s", p.Queue, s.wall(p.Until))
	case *payload.QueueUp:
		return fmt.Sprintf("queue %s is up again", p.Queue)
	case *payload.TaskReprioritized:
		var ch []string
		if p.Value != nil {
			ch = append(ch, fmt.Sprintf("value %g", *p.Value))
		}
		if p.Priority != nil {
			ch = append(ch, fmt.Sprintf("priority %d", *p.Priority))
		}
		return fmt.Sprintf("%s reprioritized: %s", p.Task, strings.Join(ch, ", ")) + note(p.Note)
	case *payload.TaskChanged:
		return fmt.Sprintf("%s changed: +%s effort", p.Task, s.dur(p.Effort).Text) + note(p.Note)
	case *payload.TaskCreated:
		sla := ""
		if p.Deadline > 0 {
			sla = ", due " + s.wall(p.Deadline)
		}
		return fmt.Sprintf("ticket %s arrived in queue %s%s", p.Task.ID, p.Queue, sla)
	case *payload.ProjectStarted:
		return fmt.Sprintf("project %s started", p.Project)
	case *payload.SLABreached:
		if p.Case != "" {
			return fmt.Sprintf("case %s breached its SLA", p.Case)
		}
		return fmt.Sprintf("%s breached its SLA", p.Task)
	case *payload.CaseOpened:
		by := "arrival " + p.Arrival
		if p.OpenedBy != "" {
			by = p.OpenedBy
		}
		return fmt.Sprintf("case %s (%s, priority %d) opened by %s: %s", p.Case, p.Template, p.Priority, by, p.Title)
	case *payload.ActionRejected:
		act := p.Action.Type
		if p.Action.Task != "" {
			act += " " + p.Action.Task
		} else if p.Action.Request != "" {
			act += " " + p.Action.Request
		}
		rule := p.Kind
		if p.Rule != "" {
			rule += " " + p.Rule
		}
		return fmt.Sprintf("%s's %s was refused (%s): %s", who, strings.TrimSpace(act), rule, p.Reason)
	case *payload.Turn:
		var acts []string
		for _, a := range p.Actions {
			acts = append(acts, strings.TrimSpace(a.Type+" "+a.Task+a.Request))
		}
		return fmt.Sprintf("%s's turn %d: %s", who, p.Turn, strings.Join(acts, ", "))
	case *payload.MessageSent:
		if p.Task != "" {
			return fmt.Sprintf("%s asked %s to perform %s (%s)", who, p.To, p.Task, p.Message)
		}
		if task := s.askOf[p.ReplyTo]; task != "" {
			return fmt.Sprintf("%s answered %s's ask for %s (%s): %q", who, p.To, task, p.Message, p.Text)
		}
		return fmt.Sprintf("%s sent %s to %s", who, p.Message, p.To)
	case *payload.MessageDelivered:
		return fmt.Sprintf("message %s delivered", p.Message)
	case *payload.SessionEnded:
		return "session ended: " + p.Reason
	case *payload.Reward:
		return fmt.Sprintf("reward %+g", p.Team)
	case *payload.MemberWaiting:
		if p.Until > 0 {
			return fmt.Sprintf("%s waits until %s", who, s.wall(p.Until))
		}
		return who + " waits for news"
	}
	switch ev.Type {
	case payload.EvSessionStarted:
		return fmt.Sprintf("session of %s started (seed %d)", s.World.Name, s.Seed)
	case payload.EvMemberReturned:
		return who + " returned from leave"
	case payload.EvTurnTimeout:
		return who + " did not answer in time"
	}
	return ev.Type
}

func note(n string) string {
	if n == "" {
		return ""
	}
	return " — " + n
}

// ChainFor is Chain of event seq kept to what caused task's own progress:
// it ends at the task's creation (its ticket's arrival, its project's
// start), and it does not wander into other work. Where a turn came due
// after its member's previous action but that action was about other work
// (a task that is neither task nor one of its dependencies), the chain
// follows the turn's recorded cause instead when that one concerns task;
// where neither does (the arrival before its own, a colleague's
// completion elsewhere that woke a member), the chain ends, with a Note on
// its last link naming the event it did not follow. Interruptions and
// events about no task (a return from leave, a queue back up) are causes
// and stay.
func (s *Session) ChainFor(task string, seq uint64) []Link {
	related := map[string]bool{}
	var mark func(id string)
	mark = func(id string) {
		if related[id] {
			return
		}
		related[id] = true
		if t := s.State.Task(id); t != nil && t.Spec != nil {
			for _, d := range t.Spec.Deps {
				mark(d)
			}
		}
	}
	mark(task)
	project := ""
	if t := s.State.Task(task); t != nil {
		project = t.Project
	}
	concerns := func(seq uint64) bool {
		p := s.payload(seq)
		other := taskOf(p)
		return other == "" || related[other] || related[nextOf(p)]
	}
	var steps []step
	for seq != 0 && len(steps) < maxWalk {
		ev, ok := s.Event(seq)
		if !ok {
			break
		}
		st := step{seq: seq}
		p := s.payload(seq)
		if ps, ok := p.(*payload.ProjectStarted); ok && ps.Project == project {
			steps = append(steps, st)
			break
		}
		if ev.Type == payload.EvTaskCreated && taskOf(p) == task {
			steps = append(steps, st)
			break
		}
		next, note := ev.Cause, ""
		prev, stale := s.after[seq]
		switch {
		case stale && concerns(prev):
			next, note = prev, fmt.Sprintf("due when %s's previous action ended (#%d); its recorded cause #%d was seen at an earlier turn", ev.Actor, prev, ev.Cause)
		case stale && ev.Cause != 0 && concerns(ev.Cause):
			note = fmt.Sprintf("due when %s's previous action, on other work, ended (#%d); followed to its recorded cause #%d", ev.Actor, prev, ev.Cause)
		case ev.Cause != 0 && !concerns(ev.Cause):
			next, note = 0, fmt.Sprintf("its recorded cause #%d (%s) is other work, not a cause of %s's progress; the chain ends here", ev.Cause, s.Describe(ev.Cause), task)
		case stale:
			next, note = 0, fmt.Sprintf("due when %s's previous action, on other work, ended (#%d); the chain ends here", ev.Actor, prev)
		}
		st.note = note
		steps = append(steps, st)
		if next >= seq {
			break
		}
		seq = next
	}
	return s.links(steps)
}
