package sim

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// This file drives what the world does by itself: tickets arriving,
// projects starting, interruptions, leave ending, outages ending and
// approvals escalating. Every timer is pushed while applying the event that
// makes it due, so replay rebuilds the same timers.

func (e *Engine) load() float64 {
	if e.cfg.Load <= 0 {
		return 1
	}
	return e.cfg.Load
}

// unit returns a uniform number in [0, 1) drawn for key.
func unit[K ~string | ~[]byte](d worlds.Draws, key K) float64 {
	return float64(draw(d, key)>>11) / (1 << 53)
}

// expo returns an exponential number with mean 1 drawn for key.
func expo[K ~string | ~[]byte](d worlds.Draws, key K) float64 {
	return -math.Log(1 - unit(d, key))
}

// key returns, in the engine's reused key buffer, prefix, id, "/" and n:
// the key of the n-th draw of a stream. The bytes are valid until the next
// call.
func (e *Engine) key(prefix, id string, n int) []byte {
	if cap(e.keyBuf) < 256 {
		e.keyBuf = make([]byte, 0, 256) // room for the suffixes keyWith adds
	}
	b := append(e.keyBuf[:0], prefix...)
	b = append(b, id...)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(n), 10)
	e.keyBuf = b
	return b
}

// keyWith returns base (a key from the buffer) followed by suffix, written
// after base in the same buffer, leaving base intact. The result is valid
// until the next key or keyWith call.
func (e *Engine) keyWith(base []byte, suffix string) []byte {
	return append(base, suffix...)
}

// arrivalAt is when arrival a brings ticket number n (0-based), counting
// from prev, the time of ticket n-1 (or the process's start); ok is false
// when it brings no more. Time 0 is a time like any other: a process whose
// first ticket falls at the world's start brings it then. Gaps are working
// time and shrink with the load.
func (e *Engine) arrivalAt(a *worlds.Arrival, n int, prev clock.Time) (at clock.Time, ok bool) {
	load := e.load()
	if a.Count > 0 && float64(n) >= math.Round(float64(a.Count)*load) {
		return 0, false
	}
	cal := e.teamSchedule(e.arrivalTeam(a))
	switch a.Process {
	case "scheduled":
		if len(a.At) > 0 {
			// A load of 2 brings each scheduled ticket twice; 0.5 every other one.
			idx := float64(n) / load
			if !(idx < float64(len(a.At))) {
				return 0, false
			}
			at = a.At[int(idx)]
		} else if n == 0 {
			at = cal.NextWorking(prev)
		} else {
			gap, ok := workGap(float64(a.Every) / load)
			if !ok {
				return 0, false
			}
			at = cal.AddWork(prev, gap)
		}
	case "poisson":
		gap, ok := workGap(expo(e.draws, e.key("arrival/", a.ID, n)) * float64(a.Every) / load)
		if !ok {
			return 0, false
		}
		at = cal.AddWork(cal.NextWorking(prev), gap)
	case "bursty":
		burst := max(1, int(math.Round(float64(a.Burst)*load)))
		if n%burst != 0 {
			at = prev // the rest of a burst arrives together
		} else if n == 0 {
			at = cal.NextWorking(prev)
		} else {
			at = cal.AddWork(prev, a.Every)
		}
	default:
		return 0, false
	}
	until := a.Until
	if until == 0 {
		until = e.cfg.World.Horizon
	}
	if at > until {
		return 0, false
	}
	return max(at, e.now), true
}

// workGap is a gap of x milliseconds of working time; ok is false when x
// is not a number or so long (a world's huge gap at a small load) that it
// would overflow a time: no ticket comes after such a gap. (Overflowed, a
// gap was negative, which working time takes for none: every ticket came
// at the same instant, without end.)
func workGap(x float64) (gap clock.Duration, ok bool) {
	if !(x >= 0 && x < maxGap) {
		return 0, false
	}
	return clock.Duration(x), true
}

// maxGap bounds workGap: about 36 million years of working time, past any
// horizon, and far from overflowing the times it is added to.
const maxGap = float64(1 << 60)

// ticket makes the definition of a ticket from a template.
func (e *Engine) ticket(t *worlds.Template, id string, key []byte) worlds.Task {
	def := worlds.Task{ID: id, Title: t.Title, Role: t.Role, Skill: t.Skill, Value: t.Value, Chain: t.Chain, Info: t.Info}
	seed := e.draws
	def.Effort = clock.Duration(t.Effort.Sample(unit(seed, e.keyWith(key, "/effort/u")), expo(seed, e.keyWith(key, "/effort/e"))))
	if t.Purchase.Kind != "" {
		def.Purchase = t.Purchase.Sample(unit(seed, e.keyWith(key, "/purchase/u")), expo(seed, e.keyWith(key, "/purchase/e")))
	}
	if len(t.Priority) > 0 {
		total := 0
		for _, w := range t.Priority {
			total += w.Weight
		}
		if total > 0 {
			x := int(unit(seed, e.keyWith(key, "/priority")) * float64(total))
			for _, w := range t.Priority {
				if x < w.Weight {
					def.Priority = w.Priority
					break
				}
				x -= w.Weight
			}
		}
	}
	return def
}

// arrivalTeam is the team whose calendar an arrival's process follows:
// its tickets' team, or for an arrival of cases the template's team (its
// queue's when it names none), as the cases' deadlines do.
func (e *Engine) arrivalTeam(a *worlds.Arrival) string {
	if tpl, ok := e.cfg.World.CaseTemplate(a.Case); ok && a.Case != "" {
		if tpl.Team != "" {
			return tpl.Team
		}
		return e.ticketTeam(&worlds.Template{}, tpl.Queue)
	}
	return e.ticketTeam(&a.Ticket, a.Queue)
}

func (e *Engine) ticketTeam(t *worlds.Template, queue string) string {
	if t.Team != "" {
		return t.Team
	}
	if team, ok := e.queueTeam[queue]; ok {
		return team
	}
	// The team of the first member serving the queue, else the first team.
	team := ""
	if len(e.cfg.World.Teams) > 0 {
		team = e.cfg.World.Teams[0].ID
	}
	if q, ok := e.cfg.World.Queue(queue); ok {
		for _, m := range e.cfg.World.Members {
			if slices.Contains(q.ServedBy, m.Role) {
				team = m.Team
				break
			}
		}
	}
	if e.queueTeam == nil {
		e.queueTeam = map[string]string{}
	}
	e.queueTeam[queue] = team
	return team
}

// sla is the deadline of a ticket of priority from template t that
// team's queue takes now: its SLA in the working time of the team.
func (e *Engine) sla(t *worlds.Template, priority int, team string) clock.Time {
	d := t.SLAFor(priority)
	if d == 0 {
		return 0
	}
	return e.teamSchedule(team).AddWork(e.now, d)
}

// fireTimer does what a world timer says, if it is still valid.
func (e *Engine) fireTimer(t timer) {
	w := e.cfg.World
	switch t.kind {
	case timerArrival:
		a, _ := arrivalByID(w, t.id)
		st := e.st.Arrival(t.id)
		n := st.N
		if a.Case != "" {
			e.arrivalCase(a, n, t.cause)
			return
		}
		at := e.now
		// A burst brings all of its tickets at once; every other process one.
		for {
			id := seqID(a.ID, n+1)
			next, more := e.arrivalAt(a, n+1, at)
			def := e.ticket(&a.Ticket, id, e.key("ticket/", a.ID, n))
			team := e.ticketTeam(&a.Ticket, a.Queue)
			created := payload.TaskCreated{Task: org.TaskSpecOf(&def), Queue: a.Queue, Team: team,
				Deadline: e.sla(&a.Ticket, def.Priority, team), Arrival: a.ID, Interruption: -1}
			created.SetNext(next, more)
			emitVia(e, &e.slots.created, payload.EvTaskCreated, "", t.cause, created)
			n++
			if !more || next != e.now || !e.room(1) {
				break // a burst cut by the budget ends the session (settle)
			}
		}
	case timerInterrupt:
		var i int
		fmt.Sscanf(t.id, "%d", &i)
		e.interrupt(i, &w.Interruptions[i])
	case timerProject:
		e.emit(payload.EvProjectStarted, "", 0, payload.ProjectStarted{Project: t.id})
	case timerReturn:
		e.emit(payload.EvMemberReturned, t.id, t.cause, struct{}{})
	case timerQueueUp:
		e.emit(payload.EvQueueUp, "", t.cause, payload.QueueUp{Queue: t.id})
	case timerSLA:
		e.emit(payload.EvSLABreached, "", t.cause, payload.SLABreached{Task: t.id})
	case timerCaseSLA:
		e.emit(payload.EvSLABreached, "", t.cause, payload.SLABreached{Case: t.id})
	case timerShiftEnd:
		e.shiftEnded(t.id)
	case timerEscalate:
		r := e.st.Request(t.id)
		to := e.st.EscalationTarget(t.who, r)
		if to != "" {
			e.emit(payload.EvApprovalEscalated, "", t.cause, payload.ApprovalEscalated{Request: r.ID, Step: t.step, From: t.who, To: to, Reason: "timeout"})
		}
	}
}

// seqID is prefix-n as one allocation.
func seqID(prefix string, n int) string {
	var b [48]byte
	buf := append(append(b[:0], prefix...), '-')
	return string(strconv.AppendInt(buf, int64(n), 10))
}

func arrivalByID(w *worlds.World, id string) (*worlds.Arrival, bool) {
	for i := range w.Arrivals {
		if w.Arrivals[i].ID == id {
			return &w.Arrivals[i], true
		}
	}
	return nil, false
}

// interrupt makes interruption i happen.
func (e *Engine) interrupt(i int, in *worlds.Interruption) {
	fired := payload.InterruptionFired{Interruption: i, Note: in.Note}
	switch in.Kind {
	case worlds.Reprioritize:
		e.emit(payload.EvTaskReprioritized, "", 0, payload.TaskReprioritized{InterruptionFired: fired, Task: in.Task, Value: in.Value, Priority: in.Priority})
	case worlds.Change:
		e.emit(payload.EvTaskChanged, "", 0, payload.TaskChanged{InterruptionFired: fired, Task: in.Task, Effort: in.Effort})
	case worlds.Outage:
		// Its length is working time of the queue's team, as its tickets' SLAs are.
		until := e.teamSchedule(e.ticketTeam(&worlds.Template{}, in.Queue)).AddWork(e.now, in.For)
		e.emit(payload.EvQueueDown, "", 0, payload.QueueDown{InterruptionFired: fired, Queue: in.Queue, Until: until})
	case worlds.Urgent:
		id := fmt.Sprintf("urgent-%d", i+1)
		def := e.ticket(in.Ticket, id, e.key("urgent", "", i))
		if in.Priority != nil {
			def.Priority = *in.Priority
		}
		team := e.ticketTeam(in.Ticket, in.Queue)
		e.emit(payload.EvTaskCreated, "", 0, payload.TaskCreated{Task: org.TaskSpecOf(&def), Queue: in.Queue, Team: team,
			Deadline: e.sla(in.Ticket, def.Priority, team), Interruption: i})
	case worlds.Leave:
		seq := e.emit(payload.EvMemberLeft, in.Member, 0, payload.MemberLeft{InterruptionFired: fired, Until: e.schedule(in.Member).AddWork(e.now, in.For), Delegate: in.Delegate})
		// Whatever waits for the member's approval goes to who stands in.
		for _, r := range e.st.Requests {
			if r.Status == org.RequestPending && r.Steps[r.Current].Approver == in.Member {
				e.standIn(r, seq)
			}
		}
	}
}

// standIn escalates request r's current step, which waits for a member on
// leave, to who stands in for it (EscalationTarget), if anyone does: at
// the leave's start, and when a step comes up for a member away (a later
// step routed before the leave, or a delegate away itself).
func (e *Engine) standIn(r *org.Request, cause uint64) {
	from := r.Steps[r.Current].Approver
	if to := e.st.EscalationTarget(from, r); to != "" {
		reason := "leave"
		if e.st.DelegatePassedOver(from, r) {
			reason = "delegate_limit" // the delegate may not take it: the fallback does
		}
		e.emit(payload.EvApprovalEscalated, "", cause, payload.ApprovalEscalated{Request: r.ID, Step: r.Current, From: from, To: to, Reason: reason})
	}
}

// stepUp escalates the step of request id that has just come up (it was
// requested, or the step before it granted) if it waits for a member on
// leave.
func (e *Engine) stepUp(id string, cause uint64) {
	r := e.st.Request(id)
	if r == nil || r.Status != org.RequestPending {
		return
	}
	if m := e.st.Member(r.Steps[r.Current].Approver); m != nil && m.OnLeave {
		e.standIn(r, cause)
	}
}

// worldTimerValid reports whether a world timer still has something to do.
func (e *Engine) worldTimerValid(at clock.Time, t timer) bool {
	switch t.kind {
	case timerArrival:
		a := e.st.Arrival(t.id)
		if a == nil {
			return false
		}
		next, ok := a.Next()
		return ok && next == at
	case timerInterrupt:
		var i int
		fmt.Sscanf(t.id, "%d", &i)
		return i < len(e.st.Fired) && !e.st.Fired[i]
	case timerProject:
		for _, task := range e.st.Tasks() {
			if task.Project == t.id && task.Hidden {
				return true
			}
		}
		return false
	case timerReturn:
		m := e.st.Member(t.id)
		return m.OnLeave && m.LeaveUntil == at
	case timerQueueUp:
		q := e.st.Queue(t.id)
		return q.DownUntil == at
	case timerEscalate:
		r := e.st.Request(t.id)
		return r != nil && r.Status == org.RequestPending && r.Current == t.step && r.Steps[t.step].Approver == t.who
	case timerSLA:
		task := e.st.Task(t.id)
		return task != nil && task.Status != org.StatusDone && !task.Breached
	case timerCaseSLA:
		c := e.st.Case(t.id)
		return c != nil && !c.Done() && !c.Breached
	case timerShiftEnd:
		return len(e.heldAtShiftEnd(t.id, at)) > 0
	}
	return false
}

// scheduleFor pushes the timers an applied event makes due.
func (e *Engine) scheduleFor(ev events.Event, typed any) {
	w := e.cfg.World
	seq := ev.Seq
	switch ev.Type {
	case payload.EvSessionStarted:
		p, _ := payload.As[payload.SessionStarted](&ev, typed)
		for _, a := range p.Arrivals {
			if at, ok := a.Next(); ok {
				e.setTimer(at, timer{kind: timerArrival, id: a.Arrival, cause: seq})
			}
		}
		for i, in := range w.Interruptions {
			e.setTimer(in.At, timer{kind: timerInterrupt, id: fmt.Sprint(i)})
		}
		for _, p := range w.Projects {
			if p.Start > 0 {
				e.setTimer(p.Start, timer{kind: timerProject, id: p.ID})
			}
		}
	case payload.EvTaskCreated:
		p, _ := payload.As[payload.TaskCreated](&ev, typed)
		if at, ok := p.Next(); ok && p.Arrival != "" {
			e.setTimer(at, timer{kind: timerArrival, id: p.Arrival, cause: seq})
		}
		if p.Deadline > 0 {
			// A ticket open a moment after its deadline has breached its SLA.
			e.setTimer(p.Deadline+1, timer{kind: timerSLA, id: p.Task.ID, cause: seq})
		}
	case payload.EvCaseOpened:
		p, _ := payload.As[payload.CaseOpened](&ev, typed)
		if at, ok := p.Next(); ok && p.Arrival != "" {
			e.setTimer(at, timer{kind: timerArrival, id: p.Arrival, cause: seq})
		}
		if p.Due > 0 {
			e.setTimer(p.Due+1, timer{kind: timerCaseSLA, id: p.Case, cause: seq})
		}
	case payload.EvCaseReopened:
		// A case reopened past its SLA breaches it now (it was not done after all).
		p, _ := payload.As[payload.CaseReopened](&ev, typed)
		if c := e.st.Case(p.Case); c != nil && c.Due > 0 {
			e.setTimer(max(c.Due+1, clock.Time(ev.Time)), timer{kind: timerCaseSLA, id: p.Case, cause: seq})
		}
	case payload.EvMemberLeft:
		p, _ := payload.As[payload.MemberLeft](&ev, typed)
		e.setTimer(p.Until, timer{kind: timerReturn, id: ev.Actor, cause: seq})
	case payload.EvQueueDown:
		p, _ := payload.As[payload.QueueDown](&ev, typed)
		e.setTimer(p.Until, timer{kind: timerQueueUp, id: p.Queue, cause: seq})
	case payload.EvApprovalRequested, payload.EvApprovalGranted, payload.EvApprovalEscalated:
		e.scheduleEscalation(requestOf(&ev, typed), seq)
	}
}

// scheduleEscalation watches the current step of a request, if its chain escalates.
func (e *Engine) scheduleEscalation(id string, seq uint64) {
	r := e.st.Request(id)
	if r == nil || r.Status != org.RequestPending {
		return
	}
	c, ok := e.cfg.World.Chain(r.Chain)
	if !ok {
		return
	}
	step := r.Steps[r.Current]
	var after clock.Duration
	for _, s := range c.Steps {
		if s.Role == step.Role {
			after = s.EscalateAfter
		}
	}
	if after == 0 {
		return
	}
	at := e.schedule(step.Approver).AddWork(e.now, after)
	e.setTimer(at, timer{kind: timerEscalate, id: id, cause: seq, step: r.Current, who: step.Approver})
}

// requestOf returns the request an approval event is about.
func requestOf(ev *events.Event, typed any) string {
	switch p := typed.(type) {
	case payload.ApprovalRequested:
		return p.Request
	case payload.ApprovalDecided:
		return p.Request
	case payload.ApprovalEscalated:
		return p.Request
	}
	var p struct {
		Request string `json:"request"`
	}
	_ = json.Unmarshal(ev.Payload, &p)
	return p.Request
}
