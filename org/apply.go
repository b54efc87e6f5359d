package org

import (
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/worlds"
)

// This file is the state's transition function: Apply dispatches each
// event type to one method, apply<Type>, which validates first and
// mutates last, so a failed event changes nothing. An event that an
// action caused is checked with that action's precondition (check.go),
// the one the engine asked before it emitted the event.

func badEvent(ev *events.Event, format string, args ...any) error {
	return fmt.Errorf("%w: seq %d (%s): %s", ErrBadEvent, ev.Seq, ev.Type, fmt.Sprintf(format, args...))
}

// refused is the error of an event whose action's precondition does not hold.
func refused(ev *events.Event, rej *Rejection) error {
	return badEvent(ev, "its action would be refused: %v", rej)
}

// Apply changes the state by one event. Events must come in sequence order;
// an event that does not fit the state is an error wrapping ErrBadEvent and
// leaves the state unchanged.
func (s *State) Apply(ev events.Event) error {
	if ev.Seq != s.LastSeq+1 {
		return badEvent(&ev, "expected seq %d", s.LastSeq+1)
	}
	if clock.Time(ev.Time) < s.Now {
		return badEvent(&ev, "time %d is before now %d", ev.Time, s.Now)
	}
	if s.Ended {
		return badEvent(&ev, "session already ended")
	}
	if ev.Seq == 1 && ev.Type != payload.EvSessionStarted {
		return badEvent(&ev, "the first event must be session.started")
	}
	due := len(s.dueToRetire) // completed before this event: they retire after it
	if err := s.apply(&ev); err != nil {
		return err
	}
	if err := s.retireDue(due); err != nil {
		return err
	}
	s.Now = clock.Time(ev.Time)
	s.LastSeq = ev.Seq
	return nil
}

// decode returns an event's payload: the value the engine made it from when
// it applies its own event (ApplyWith), else the JSON decoded. The engine
// encodes that same value into the event, so both paths see equal payloads.
func decode[T any](s *State, ev *events.Event) (T, error) {
	if v, ok := s.typed.(T); ok {
		return v, nil
	}
	if p, ok := s.typed.(*T); ok && p != nil {
		return *p, nil
	}
	var v T
	if err := json.Unmarshal(ev.Payload, &v); err != nil {
		return v, badEvent(ev, "payload: %v", err)
	}
	return v, nil
}

// ApplyWith is Apply for an event whose payload was just encoded from
// payload: it skips decoding the JSON again. The result is the same as Apply's.
func (s *State) ApplyWith(ev events.Event, payload any) error {
	s.typed = payload
	err := s.Apply(ev)
	s.typed = nil
	return err
}

func (s *State) actor(ev *events.Event) (*Member, error) {
	m := s.Member(ev.Actor)
	if m == nil {
		return nil, badEvent(ev, "unknown actor %q", ev.Actor)
	}
	return m, nil
}

// task returns the task an event names.
func (s *State) task(ev *events.Event, id string) (*Task, error) {
	t := s.Task(id)
	if t == nil {
		return nil, badEvent(ev, "unknown task %q", id)
	}
	return t, nil
}

// actorAndTask returns the event's actor and the task it names.
func (s *State) actorAndTask(ev *events.Event, id string) (*Member, *Task, error) {
	m, err := s.actor(ev)
	if err != nil {
		return nil, nil, err
	}
	t, err := s.task(ev, id)
	return m, t, err
}

// apply dispatches ev to the method of its type.
func (s *State) apply(ev *events.Event) error {
	switch ev.Type {
	case payload.EvSessionStarted:
		return s.applySessionStarted(ev)
	case payload.EvSessionEnded:
		return s.applySessionEnded(ev)
	case payload.EvTurn:
		return s.applyTurn(ev)
	case payload.EvTurnTimeout:
		return s.applyTurnTimeout(ev)
	case payload.EvTurnFailed:
		return s.applyTurnFailed(ev)
	case payload.EvActionRejected:
		return s.applyActionRejected(ev)
	case payload.EvMemberWaiting:
		return s.applyMemberWaiting(ev)
	case payload.EvTaskHandedOff:
		return s.applyTaskHandedOff(ev)
	case payload.EvTaskClaimed:
		return s.applyTaskClaimed(ev)
	case payload.EvWorkStarted:
		return s.applyWorkStarted(ev)
	case payload.EvWorkFinished:
		return s.applyWorkFinished(ev)
	case payload.EvTaskCompleted:
		return s.applyTaskCompleted(ev)
	case payload.EvTicketServed:
		return s.applyTicketServed(ev)
	case payload.EvTicketResolved:
		return s.applyTicketResolved(ev)
	case payload.EvApprovalRequested:
		return s.applyApprovalRequested(ev)
	case payload.EvApprovalGranted, payload.EvApprovalRejected:
		return s.applyApprovalDecided(ev)
	case payload.EvMessageSent:
		return s.applyMessageSent(ev)
	case payload.EvMessageDelivered:
		return s.applyMessageDelivered(ev)
	case payload.EvTaskCreated:
		return s.applyTaskCreated(ev)
	case payload.EvSLABreached:
		return s.applySLABreached(ev)
	case payload.EvReward:
		return s.applyReward(ev)
	case payload.EvProjectStarted:
		return s.applyProjectStarted(ev)
	case payload.EvTaskReprioritized:
		return s.applyTaskReprioritized(ev)
	case payload.EvTaskChanged:
		return s.applyTaskChanged(ev)
	case payload.EvMemberLeft:
		return s.applyMemberLeft(ev)
	case payload.EvMemberReturned:
		return s.applyMemberReturned(ev)
	case payload.EvQueueDown:
		return s.applyQueueDown(ev)
	case payload.EvQueueUp:
		return s.applyQueueUp(ev)
	case payload.EvApprovalEscalated:
		return s.applyApprovalEscalated(ev)
	case payload.EvCaseOpened:
		return s.applyCaseOpened(ev)
	case payload.EvRecordRead:
		return s.applyRecordRead(ev)
	case payload.EvRecordWritten:
		return s.applyRecordWritten(ev)
	case payload.EvCaseDecided:
		return s.applyCaseDecided(ev)
	case payload.EvCaseReopened:
		return s.applyCaseReopened(ev)
	case payload.EvMeetingScheduled:
		return s.applyMeetingScheduled(ev)
	}
	return badEvent(ev, "unknown event type")
}

func (s *State) applySessionStarted(ev *events.Event) error {
	if ev.Seq != 1 {
		return badEvent(ev, "session.started must be the first event")
	}
	p, err := decode[payload.SessionStarted](s, ev)
	if err != nil {
		return err
	}
	if err := p.CheckFormat(); err != nil {
		return fmt.Errorf("%w: seq %d (%s): %w", ErrBadEvent, ev.Seq, ev.Type, err)
	}
	if err := p.Limits.Validate(); err != nil {
		return badEvent(ev, "%v", err)
	}
	for _, an := range p.Arrivals {
		if s.Arrival(an.Arrival) == nil {
			return badEvent(ev, "unknown arrival %q", an.Arrival)
		}
		if an.AtZero && an.At != 0 {
			return badEvent(ev, "arrival %q: at_zero with at %d", an.Arrival, an.At)
		}
	}
	if n := len(p.DrawKey); n != 0 && n != payload.DrawKeyBytes {
		return badEvent(ev, "a draw key of %d bytes, not %d", n, payload.DrawKeyBytes)
	}
	s.Limits = p.Limits.WithDefaults()
	s.Format = p.Format
	s.seedRecords(worlds.NewDraws(p.Seed, p.DrawKey))
	for _, an := range p.Arrivals {
		s.Arrival(an.Arrival).setNext(an.Next())
	}
	for _, m := range s.Members {
		if !m.NPC {
			s.wake(m.ID, ev.Seq)
		}
	}
	return nil
}

func (s *State) applySessionEnded(ev *events.Event) error {
	p, err := decode[payload.SessionEnded](s, ev)
	if err != nil {
		return err
	}
	s.Ended, s.EndReason = true, p.Reason
	return nil
}

func (s *State) applyTurn(ev *events.Event) error {
	p, err := decode[payload.Turn](s, ev)
	if err != nil {
		return err
	}
	m, err := s.actor(ev)
	if err != nil {
		return err
	}
	m.Turn++
	m.Seen = p.Seen
	// A turn reads the inbox, or its first InboxRead messages when the
	// observation was paged.
	if p.InboxRead > 0 && p.InboxRead < len(m.Inbox) {
		m.Inbox = append([]string(nil), m.Inbox[p.InboxRead:]...)
	} else {
		m.Inbox = nil
	}
	m.Rejected = nil
	m.Results = nil
	s.Turns++
	s.busy(m, p.BusyUntil)
	return nil
}

func (s *State) applyTurnTimeout(ev *events.Event) error {
	p, err := decode[payload.TurnTimeout](s, ev)
	if err != nil {
		return err
	}
	m, err := s.actor(ev)
	if err != nil {
		return err
	}
	m.Turn++
	m.Seen = p.Seen
	m.Pending = m.WakeCause > m.Seen
	s.mayIdle(m)
	s.Timeouts++
	s.passed(m, ev.Seq)
	return nil
}

// applyTurnFailed passes a turn whose agent could not decide, as a timeout
// does, and counts it.
func (s *State) applyTurnFailed(ev *events.Event) error {
	p, err := decode[payload.TurnFailed](s, ev)
	if err != nil {
		return err
	}
	m, err := s.actor(ev)
	if err != nil {
		return err
	}
	if m.NPC {
		return badEvent(ev, "%s is a simulated colleague: its turns do not fail", m.ID)
	}
	m.Turn++
	m.Failed++
	m.Seen = p.Seen
	m.Pending = m.WakeCause > m.Seen
	s.mayIdle(m)
	s.TurnErrors++
	s.passed(m, ev.Seq)
	return nil
}

func (s *State) applyActionRejected(ev *events.Event) error {
	p, err := decode[payload.ActionRejected](s, ev)
	if err != nil {
		return err
	}
	m, err := s.actor(ev)
	if err != nil {
		return err
	}
	m.Rejected = append(m.Rejected, RejectedView{Action: p.Action, Kind: p.Kind, Rule: p.Rule, Reason: p.Reason})
	s.Rejections++
	if p.Kind == KindPolicy {
		s.Violations++
		m.Violations++
	}
	return nil
}

func (s *State) applyMemberWaiting(ev *events.Event) error {
	p, err := decode[payload.MemberWaiting](s, ev)
	if err != nil {
		return err
	}
	m, err := s.actor(ev)
	if err != nil {
		return err
	}
	if rej := checkWaitUntil(p.Until, clock.Time(ev.Time)); rej != nil {
		return refused(ev, rej)
	}
	if p.Seen > 0 {
		// A simulated colleague waiting without a turn (format 3).
		if !m.NPC {
			return badEvent(ev, "%s is not a simulated colleague: its waits follow its turn", m.ID)
		}
		if p.Seen >= ev.Seq {
			return badEvent(ev, "seen %d is not before the event", p.Seen)
		}
		m.Seen = p.Seen
	}
	s.wait(m, p.Until, ev.Seq)
	return nil
}

// wait is member.waiting's change of m at seq: busy until until, or
// asleep (until 0) unless something it has not seen woke it meanwhile.
func (s *State) wait(m *Member, until clock.Time, seq uint64) {
	if until > 0 {
		s.busy(m, until)
		return
	}
	m.Pending = m.WakeCause > m.Seen
	s.mayIdle(m)
	s.passed(m, seq)
}

func (s *State) applyTaskHandedOff(ev *events.Event) error {
	p, err := decode[payload.TaskHandedOff](s, ev)
	if err != nil {
		return err
	}
	m, t, err := s.actorAndTask(ev, p.Task)
	if err != nil {
		return err
	}
	if rej := s.CheckHandoff(m, t, p.To); rej != nil {
		return refused(ev, rej)
	}
	m.Holding--
	s.mayIdle(m)
	m.held = removeTask(m.held, t)
	if to := s.members[p.To]; to != nil {
		t.Assignee = to.ID
		to.Holding++
		to.hold(t)
		s.wake(to.ID, ev.Seq)
	} else {
		t.Status, t.Assignee = StatusOpen, ""
		s.queueOf(t).claimed--
		s.offer(t)
		if t.Kind == KindTicket {
			s.reopen(t)
		}
		if s.DepsDone(t) {
			s.wakeServers(t, ev.Seq, true)
		}
	}
	s.busy(m, p.BusyUntil)
	return nil
}

func (s *State) applyTaskClaimed(ev *events.Event) error {
	p, err := decode[payload.TaskClaimed](s, ev)
	if err != nil {
		return err
	}
	m, t, err := s.actorAndTask(ev, p.Task)
	if err != nil {
		return err
	}
	return s.claim(ev, m, t, p.BusyUntil)
}

func (s *State) claim(ev *events.Event, m *Member, t *Task, busyUntil clock.Time) error {
	if rej := s.CheckClaim(m, t, clock.Time(ev.Time)); rej != nil {
		return refused(ev, rej)
	}
	s.unoffer(t)
	if t.Kind == KindTicket {
		s.countOpen(t, -1)
	}
	t.Status, t.Assignee = StatusClaimed, m.ID
	m.Holding++
	m.hold(t)
	s.queueOf(t).claimed++
	s.busy(m, busyUntil)
	if s.Dispatch != nil {
		s.Dispatch.newRound(m.Role, ev.Seq) // work was taken: a new round
	}
	return nil
}

func (s *State) applyWorkStarted(ev *events.Event) error {
	p, err := decode[payload.WorkStarted](s, ev)
	if err != nil {
		return err
	}
	m, t, err := s.actorAndTask(ev, p.Task)
	if err != nil {
		return err
	}
	return s.startWork(ev, m, t, p.Work, p.Until)
}

func (s *State) startWork(ev *events.Event, m *Member, t *Task, work clock.Duration, until clock.Time) error {
	if rej := s.CheckWork(m, t, clock.Time(ev.Time)); rej != nil {
		return refused(ev, rej)
	}
	if work <= 0 || work > t.Effort-t.Spent {
		return badEvent(ev, "work %s on task %q is not within the %s of effort left", work, t.ID, t.Effort-t.Spent)
	}
	t.Status, t.WorkUntil, t.Stint = StatusInProgress, until, work
	s.busy(m, until)
	return nil
}

func (s *State) applyWorkFinished(ev *events.Event) error {
	p, err := decode[payload.WorkFinished](s, ev)
	if err != nil {
		return err
	}
	return s.finishWork(ev, p.Task, p.Work)
}

func (s *State) finishWork(ev *events.Event, task string, work clock.Duration) error {
	t := s.tasks[task]
	if t == nil || t.Status != StatusInProgress {
		return badEvent(ev, "task %q is not in progress", task)
	}
	if work != t.Stint {
		return badEvent(ev, "work %s does not match the stint %s", work, t.Stint)
	}
	t.Status, t.WorkUntil, t.Stint = StatusClaimed, 0, 0
	t.Spent += work
	if b, cost := s.WorkCost(t, work); b != nil {
		b.spend(cost)
	}
	return nil
}

// WorkCost is what work on t costs its assignee's team, and that team's
// budget (nil when it has none, or the role is not paid by the hour): what
// work.finished spends, and what the dense reward's overrun reads.
func (s *State) WorkCost(t *Task, work clock.Duration) (*Budget, int64) {
	w := s.Member(t.Assignee)
	if w == nil {
		return nil, 0
	}
	r, ok := s.World.Role(w.Role)
	if !ok || r.Rate <= 0 {
		return nil, 0
	}
	b := s.budgetOf(w)
	if b == nil {
		return nil, 0
	}
	return b, hourly(r.Rate, work)
}

// hourly is rate × work / one hour, rounded down as integer division does
// it, without the product's overflow: a world's rate and a long stint
// multiply past int64 (1e12 an hour for three days), which wrapped a
// budget's spending negative, so that an overrun scored as none. What
// does not fit an int64 is the largest one.
func hourly(rate int64, work clock.Duration) int64 {
	if rate <= 0 || work <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(rate), uint64(work))
	if hi >= uint64(clock.Hour) {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, uint64(clock.Hour))
	return int64(min(q, math.MaxInt64))
}

// AddSat is a + b for amounts of money (b >= 0), the largest int64 where
// it does not fit: spending that only grows never wraps negative.
func AddSat(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func (s *State) applyTaskCompleted(ev *events.Event) error {
	p, err := decode[payload.TaskCompleted](s, ev)
	if err != nil {
		return err
	}
	m, t, err := s.actorAndTask(ev, p.Task)
	if err != nil {
		return err
	}
	return s.complete(ev, m, t, p.BusyUntil)
}

func (s *State) complete(ev *events.Event, m *Member, t *Task, busyUntil clock.Time) error {
	if rej := s.CheckComplete(m, t); rej != nil {
		return refused(ev, rej)
	}
	t.Status, t.DoneAt, t.DoneBy, t.DoneSeq = StatusDone, clock.Time(ev.Time), m.ID, ev.Seq
	if t.Case != "" {
		s.caseStepDone(t, m)
	}
	s.outcomeDone(t)
	s.meetingDone(t)
	m.Holding--
	s.mayIdle(m)
	s.open--
	q := s.queueOf(t)
	if !t.Hidden {
		if t.Project != "" {
			s.doneIn[t.Project]++
		}
		q.shown--
	}
	for _, d := range s.dependents[t.ID] {
		s.reoffer(d) // one dependency fewer to wait for
		s.depDone(d)
	}
	q.claimed--
	m.held = removeTask(m.held, t)
	if t.Spec.Purchase > 0 {
		if b := s.budgets[t.Team]; b != nil {
			b.spend(t.Spec.Purchase)
		}
	}
	s.busy(m, busyUntil)
	if t.Case != "" {
		s.stepDone(t, clock.Time(ev.Time), ev.Seq)
	}
	// Whoever could take a task this one unblocked wants to hear of it.
	s.wakeForReady(t, ev.Seq)
	s.noteDone(t)
	return nil
}

// applyTicketServed is a simulated colleague's claim of a ticket and the
// start of its work on it, without a turn (format 3): what task.claimed
// and work.started apply, in that order, and the turn's seen.
func (s *State) applyTicketServed(ev *events.Event) error {
	p, err := decode[payload.TicketServed](s, ev)
	if err != nil {
		return err
	}
	m, t, err := s.npcAndTask(ev, p.Task)
	if err != nil {
		return err
	}
	if p.Seen >= ev.Seq {
		return badEvent(ev, "seen %d is not before the event", p.Seen)
	}
	m.Seen = p.Seen
	if err := s.claim(ev, m, t, clock.Time(ev.Time)); err != nil {
		return err
	}
	return s.startWork(ev, m, t, p.Work, p.Until)
}

// applyTicketResolved is the end of a simulated colleague's last stint on
// a ticket with the ticket done (format 3): what work.finished and
// task.completed apply, in that order; then, from format 5, the
// colleague's next step that the event carries (then).
func (s *State) applyTicketResolved(ev *events.Event) error {
	p, err := decode[payload.TicketResolved](s, ev)
	if err != nil {
		return err
	}
	m, t, err := s.npcAndTask(ev, p.Task)
	if err != nil {
		return err
	}
	if t.Assignee != m.ID {
		return badEvent(ev, "%s does not hold task %q", m.ID, t.ID)
	}
	next, err := s.checkThen(ev, m, &p)
	if err != nil {
		return err
	}
	if err := s.finishWork(ev, t.ID, p.Work); err != nil {
		return err
	}
	if err := s.complete(ev, m, t, clock.Time(ev.Time)); err != nil {
		return err
	}
	return s.then(ev, m, next, &p)
}

// ThenFormat is the first log format whose ticket.resolved carries the
// colleague's next step (payload.TicketResolved.Then).
const ThenFormat = 5

// checkThen checks the next step that ticket.resolved p carries, before
// the resolve changes anything, and returns the ticket m serves next (nil
// when it waits, or the event carries no step). The checks are those of
// the ticket.served or member.waiting the step stands for: none of them
// reads what the resolve changes (the resolved ticket is not open, so it
// is not the one served; a wait's bound is the instant's).
func (s *State) checkThen(ev *events.Event, m *Member, p *payload.TicketResolved) (*Task, error) {
	if !p.Then() {
		if p.NextWork != 0 || p.NextUntil != 0 {
			return nil, badEvent(ev, "next_work or next_until without a next step")
		}
		return nil, nil
	}
	if s.Format < ThenFormat {
		return nil, badEvent(ev, "a next step in a log of format %d (format %d records them)", s.Format, ThenFormat)
	}
	now := clock.Time(ev.Time)
	if p.Waits {
		if p.Next != "" || p.NextWork != 0 {
			return nil, badEvent(ev, "the next step both waits and serves %q", p.Next)
		}
		if rej := checkWaitUntil(p.NextUntil, now); rej != nil {
			return nil, refused(ev, rej)
		}
		return nil, nil
	}
	t, err := s.task(ev, p.Next)
	if err != nil {
		return nil, err
	}
	if rej := s.CheckServe(m, t, now); rej != nil {
		return nil, refused(ev, rej)
	}
	if p.NextWork <= 0 || p.NextWork > t.Effort-t.Spent {
		return nil, badEvent(ev, "next work %s on task %q is not within the %s of effort left", p.NextWork, t.ID, t.Effort-t.Spent)
	}
	return t, nil
}

// then applies the next step checkThen passed, as the ticket.served (next
// not nil) or member.waiting of format 4 seen at this event would.
func (s *State) then(ev *events.Event, m *Member, next *Task, p *payload.TicketResolved) error {
	if !p.Then() {
		return nil
	}
	m.Seen = ev.Seq
	if next == nil {
		s.wait(m, p.NextUntil, ev.Seq)
		return nil
	}
	if err := s.claim(ev, m, next, clock.Time(ev.Time)); err != nil {
		return err
	}
	return s.startWork(ev, m, next, p.NextWork, p.NextUntil)
}

// ApplyThen adds to the ticket.resolved ev, the last event applied, the
// next step p carries (p is ev's payload with the step): the engine, which
// emitted the resolve before its colleague decided, records the decision
// in the same event (format 5), and the state becomes what Apply of the
// whole event makes. A step that does not check changes nothing.
func (s *State) ApplyThen(ev events.Event, p *payload.TicketResolved) error {
	if ev.Seq != s.LastSeq || ev.Type != payload.EvTicketResolved || !p.Then() {
		return badEvent(&ev, "not the last event applied, a ticket.resolved, with a next step")
	}
	m, err := s.actor(&ev)
	if err != nil {
		return err
	}
	next, err := s.checkThen(&ev, m, p)
	if err != nil {
		return err
	}
	return s.then(&ev, m, next, p)
}

// npcAndTask is actorAndTask for the events only a simulated colleague makes.
func (s *State) npcAndTask(ev *events.Event, id string) (*Member, *Task, error) {
	m, t, err := s.actorAndTask(ev, id)
	if err != nil {
		return nil, nil, err
	}
	if !m.NPC {
		return nil, nil, badEvent(ev, "%s is not a simulated colleague: %s is recorded as its turn's actions", m.ID, ev.Type)
	}
	return m, t, nil
}

func (s *State) applyApprovalRequested(ev *events.Event) error {
	p, err := decode[payload.ApprovalRequested](s, ev)
	if err != nil {
		return err
	}
	m, t, err := s.actorAndTask(ev, p.Task)
	if err != nil {
		return err
	}
	if s.requests[p.Request] != nil || len(p.Steps) == 0 {
		return badEvent(ev, "request %q exists or has no steps", p.Request)
	}
	if rej := s.CheckRequestApproval(m, t); rej != nil {
		return refused(ev, rej)
	}
	if !slices.Equal(p.Steps, s.RouteSteps(t, m.ID)) || p.Amount != t.Spec.ApprovalAmount() || p.Chain != t.Spec.Chain {
		return badEvent(ev, "request %q is not the approval task %q's purchase needs", p.Request, t.ID)
	}
	r := &Request{ID: p.Request, Task: p.Task, Requester: m.ID, Chain: p.Chain, Amount: p.Amount,
		Steps: append([]RequestStep(nil), p.Steps...), Status: RequestPending, CreatedAt: clock.Time(ev.Time)}
	for i := range r.Steps {
		r.Steps[i].Status = RequestPending
		r.Steps[i].Since, r.Steps[i].Escalated = 0, 0 // Delegated comes from the payload
	}
	r.Steps[0].Since = clock.Time(ev.Time)
	s.Requests = append(s.Requests, r)
	s.requests[r.ID] = r
	t.Request = r.ID
	s.busy(m, p.BusyUntil)
	s.wake(r.Steps[0].Approver, ev.Seq)
	return nil
}

func (s *State) applyApprovalDecided(ev *events.Event) error {
	p, err := decode[payload.ApprovalDecided](s, ev)
	if err != nil {
		return err
	}
	m, err := s.actor(ev)
	if err != nil {
		return err
	}
	r := s.requests[p.Request]
	if r == nil {
		return badEvent(ev, "unknown request %q", p.Request)
	}
	reject := ev.Type == payload.EvApprovalRejected
	if rej := s.CheckDecide(r, reject, p.Reason); rej != nil {
		return refused(ev, rej)
	}
	if p.Step != r.Current || !s.WaitsFor(r, m.ID) {
		return badEvent(ev, "request %q step %d is not waiting for %s", p.Request, p.Step, m.ID)
	}
	now := clock.Time(ev.Time)
	st := &r.Steps[p.Step]
	st.DecidedAt = now
	if reject {
		st.Status, r.Status, r.Reason, r.DecidedAt = RequestRejected, RequestRejected, p.Reason, now
		s.wake(r.Requester, ev.Seq)
	} else {
		st.Status = RequestApproved
		r.Current++
		if r.Current == len(r.Steps) {
			r.Status, r.DecidedAt = RequestApproved, now
			s.wake(r.Requester, ev.Seq)
		} else {
			r.Steps[r.Current].Since = now
			s.wake(r.Steps[r.Current].Approver, ev.Seq)
		}
	}
	s.busy(m, p.BusyUntil)
	return nil
}

func (s *State) applyMessageSent(ev *events.Event) error {
	p, err := decode[payload.MessageSent](s, ev)
	if err != nil {
		return err
	}
	m, err := s.actor(ev)
	if err != nil {
		return err
	}
	if s.messages[p.Message] != nil {
		return badEvent(ev, "message %q exists", p.Message)
	}
	if rej := s.CheckMessage(m, p.To, p.Text, p.ReplyTo, p.Topic); rej != nil {
		return refused(ev, rej)
	}
	if p.Task != "" {
		if rej := s.CheckAskStep(m, p.To, p.Task); rej != nil {
			return refused(ev, rej)
		}
	}
	msg := &Message{ID: p.Message, From: m.ID, To: p.To, Text: p.Text, Topic: p.Topic, ReplyTo: p.ReplyTo, SentAt: clock.Time(ev.Time), Task: p.Task}
	if p.ReplyTo != "" {
		if orig := s.messages[p.ReplyTo]; orig != nil && orig.To == m.ID {
			orig.Answered = true
		}
	}
	s.Messages = append(s.Messages, msg)
	s.messages[msg.ID] = msg
	s.busy(m, p.BusyUntil)
	return nil
}

func (s *State) applyMessageDelivered(ev *events.Event) error {
	p, err := decode[payload.MessageDelivered](s, ev)
	if err != nil {
		return err
	}
	msg := s.messages[p.Message]
	if msg == nil || msg.Delivered {
		return badEvent(ev, "message %q is not on its way", p.Message)
	}
	msg.Delivered = true
	to := s.members[msg.To]
	to.Inbox = append(to.Inbox, msg.ID)
	if msg.Topic != "" && !to.KnowsTopic(msg.Topic) {
		to.Knows = append(to.Knows, msg.Topic)
	}
	s.wake(msg.To, ev.Seq)
	return nil
}

func (s *State) applyTaskCreated(ev *events.Event) error {
	p, err := decode[payload.TaskCreated](s, ev)
	if err != nil {
		return err
	}
	if id := p.Task.ID; id == "" || s.tasks[id] != nil || s.queues[p.Queue] == nil || len(p.Task.Deps) > 0 {
		return badEvent(ev, "ticket %q exists, has dependencies or names no queue", id)
	}
	if p.NextAtZero && (p.NextAt != 0 || p.Arrival == "") {
		return badEvent(ev, "next_at_zero with next_at %d or without an arrival", p.NextAt)
	}
	var a *ArrivalState
	if p.Arrival != "" {
		if a = s.Arrival(p.Arrival); a == nil {
			return badEvent(ev, "unknown arrival %q", p.Arrival)
		}
	} else if !s.fire(p.Interruption) {
		return badEvent(ev, "interruption %d does not apply", p.Interruption)
	}
	if a != nil {
		a.N++
		a.setNext(p.Next())
	}
	t := s.newMade(&p.Task)
	t.Kind, t.Queue, t.Team, t.Arrival = KindTicket, p.Queue, p.Team, p.Arrival
	t.Created, t.Deadline = clock.Time(ev.Time), p.Deadline
	t.ord = s.nextOrd()
	s.list = append(s.list, t)
	s.tasks[t.ID] = t
	s.track(t)
	s.wakeServers(t, ev.Seq, true)
	return nil
}

func (s *State) applySLABreached(ev *events.Event) error {
	p, err := decode[payload.SLABreached](s, ev)
	if err != nil {
		return err
	}
	if p.Case != "" {
		c := s.cases[p.Case]
		if c == nil || p.Task != "" || c.Breached || c.Due == 0 || clock.Time(ev.Time) <= c.Due || c.Done() {
			return badEvent(ev, "case %q cannot breach its SLA now", p.Case)
		}
		c.Breached = true
		return nil
	}
	t := s.tasks[p.Task]
	if t == nil || t.Breached || t.Deadline == 0 || clock.Time(ev.Time) <= t.Deadline || t.Status == StatusDone {
		return badEvent(ev, "task %q cannot breach its deadline now", p.Task)
	}
	t.Breached = true
	return nil
}

func (s *State) applyReward(ev *events.Event) error {
	p, err := decode[payload.Reward](s, ev)
	if err != nil {
		return err
	}
	s.Reward += p.Team
	return nil
}

func (s *State) applyProjectStarted(ev *events.Event) error {
	p, err := decode[payload.ProjectStarted](s, ev)
	if err != nil {
		return err
	}
	found := false
	for _, t := range s.list {
		if t.Project == p.Project && t.Hidden {
			t.Hidden, found = false, true
			if t.Status != StatusDone {
				s.queueOf(t).shown++
			}
			s.offer(t)
		}
	}
	if !found {
		return badEvent(ev, "project %q has no hidden tasks", p.Project)
	}
	for _, t := range s.list {
		if t.Project == p.Project && s.DepsDone(t) {
			s.wakeServers(t, ev.Seq, false)
		}
	}
	return nil
}

func (s *State) applyTaskReprioritized(ev *events.Event) error {
	p, err := decode[payload.TaskReprioritized](s, ev)
	if err != nil {
		return err
	}
	t := s.tasks[p.Task]
	if t == nil || !s.fire(p.Interruption) {
		return badEvent(ev, "task %q or interruption %d does not apply", p.Task, p.Interruption)
	}
	if p.Value != nil {
		t.Value = *p.Value
		s.reoffer(t)
	}
	if p.Priority != nil {
		open := t.Kind == KindTicket && t.Status == StatusOpen
		if open {
			s.countOpen(t, -1)
		}
		t.Priority = *p.Priority
		if open {
			s.countOpen(t, 1)
			if s.queueOf(t).byPrio {
				s.place(t) // into the lane of its new priority
			}
		}
	}
	s.wakeAbout(t, ev.Seq)
	return nil
}

func (s *State) applyTaskChanged(ev *events.Event) error {
	p, err := decode[payload.TaskChanged](s, ev)
	if err != nil {
		return err
	}
	t := s.tasks[p.Task]
	if t == nil || p.Effort < 0 || !s.fire(p.Interruption) {
		return badEvent(ev, "task %q or interruption %d does not apply", p.Task, p.Interruption)
	}
	if t.Status == StatusDone && s.Format >= ChangeFormat {
		return nil // delivered before the change: it stands as done
	}
	t.Effort += p.Effort
	if t.Status == StatusDone {
		// Format 8 and before: its verification (effort spent) may change,
		// and with it its dependents': the rubric verifies again.
		s.forgetVerdicts()
	}
	s.wakeAbout(t, ev.Seq)
	return nil
}

// ChangeFormat is the log format from which a requirement change that
// lands on a task already done leaves it as it was delivered (see
// payload.LogFormat's 9).
const ChangeFormat = 9

func (s *State) applyMemberLeft(ev *events.Event) error {
	p, err := decode[payload.MemberLeft](s, ev)
	if err != nil {
		return err
	}
	m, err := s.actor(ev)
	if err != nil {
		return err
	}
	if p.Delegate != "" && s.members[p.Delegate] == nil || !s.fire(p.Interruption) {
		return badEvent(ev, "delegate %q or interruption %d does not apply", p.Delegate, p.Interruption)
	}
	m.OnLeave, m.LeaveUntil, m.Delegate = true, p.Until, p.Delegate
	s.busy(m, p.Until)
	s.left(m, ev.Seq)
	return nil
}

func (s *State) applyMemberReturned(ev *events.Event) error {
	m, err := s.actor(ev)
	if err != nil {
		return err
	}
	if !m.OnLeave {
		return badEvent(ev, "%s is not on leave", m.ID)
	}
	m.OnLeave, m.LeaveUntil, m.Delegate = false, 0, ""
	s.mayIdle(m)
	s.wake(m.ID, ev.Seq)
	return nil
}

func (s *State) applyQueueDown(ev *events.Event) error {
	p, err := decode[payload.QueueDown](s, ev)
	if err != nil {
		return err
	}
	q := s.queues[p.Queue]
	if q == nil || !s.fire(p.Interruption) {
		return badEvent(ev, "queue %q or interruption %d does not apply", p.Queue, p.Interruption)
	}
	q.DownUntil = p.Until
	return nil
}

func (s *State) applyQueueUp(ev *events.Event) error {
	p, err := decode[payload.QueueUp](s, ev)
	if err != nil {
		return err
	}
	q := s.queues[p.Queue]
	if q == nil || q.DownUntil == 0 {
		return badEvent(ev, "queue %q is not down", p.Queue)
	}
	q.DownUntil = 0
	for _, m := range s.Members {
		if !m.OnLeave && (s.Serves(m.Role, q.ID) || s.npcServes(m, q.ID)) {
			s.wake(m.ID, ev.Seq)
		}
	}
	return nil
}

func (s *State) applyApprovalEscalated(ev *events.Event) error {
	p, err := decode[payload.ApprovalEscalated](s, ev)
	if err != nil {
		return err
	}
	r := s.requests[p.Request]
	if r == nil || p.Step != r.Current || !s.WaitsFor(r, p.From) {
		return badEvent(ev, "request %q step %d is not waiting for %s", p.Request, p.Step, p.From)
	}
	m := s.members[ev.Actor] // the requester, when it asked for the escalation
	if p.Reason == "requested" {
		if m == nil {
			return badEvent(ev, "unknown actor %q", ev.Actor)
		}
		if rej := s.CheckEscalate(m, r); rej != nil {
			return refused(ev, rej)
		}
	}
	if to := s.EscalationTarget(p.From, r); p.To != to {
		return badEvent(ev, "request %q step %d goes to %q, not %q", p.Request, p.Step, to, p.To)
	}
	r.Steps[p.Step].Approver = p.To
	r.Steps[p.Step].Escalated++
	r.Steps[p.Step].Since = clock.Time(ev.Time)
	s.wake(p.To, ev.Seq)
	if m != nil && p.BusyUntil > 0 {
		s.busy(m, p.BusyUntil)
	}
	return nil
}

// AsIfFinished calls fn with the state as work.finished would leave it for
// task t, which is in progress, and then puts t (and its team's budget)
// back as they were. The engine asks it the checks of a completion that
// the same event would make (ticket.resolved), which run on the state
// after the work. fn must only read the state.
func (s *State) AsIfFinished(t *Task, fn func()) {
	status, until, stint, spent := t.Status, t.WorkUntil, t.Stint, t.Spent
	b, cost := s.WorkCost(t, stint)
	t.Status, t.WorkUntil, t.Stint, t.Spent = StatusClaimed, 0, 0, spent+stint
	var was Budget
	if b != nil {
		was = *b
		b.spend(cost)
	}
	fn()
	t.Status, t.WorkUntil, t.Stint, t.Spent = status, until, stint, spent
	if b != nil {
		*b = was
	}
}
