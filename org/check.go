package org

import (
	"strings"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
)

// This file holds each action's preconditions, written once: whether a
// member may do it now, and if not, why (a Rejection). The engine asks
// Check before it emits an action's events; Apply asks the same checks of
// the event it applies (claim, work, handoff, …), so an event whose
// precondition does not hold — a tampered log — is refused, never applied.
//
// A company's configurable rules (dependencies first, approval above a
// threshold, …) are not here: they live in package policies, which the
// engine asks after these checks. The rubric verifies outcomes on its own
// and does not call these checks.

// Checked is an action that passed Check, with what the check found, so
// the engine does not look it up or parse it again: the task or request it
// names, and its duration.
type Checked struct {
	Action  Action
	Task    *Task    // claim, work, complete, handoff, request_approval
	Request *Request // approve, reject, escalate
	// For is the parsed "for" of work and wait; 0 when the action gives none.
	For clock.Duration
	// Fields are a record tool's fields, normalized to their types.
	Fields payload.Attrs
}

// Check is the structural check of action a by member m at time now: the
// action is well formed and names things that exist and are in a state it
// fits. It returns the checked action, or why it is refused.
func (s *State) Check(m *Member, a Action, now clock.Time) (Checked, *Rejection) {
	c := Checked{Action: a}
	var rej *Rejection
	switch a.Type {
	case ActClaim:
		if c.Task, rej = s.named(a); rej == nil {
			rej = s.CheckClaim(m, c.Task, now)
		}
	case ActWork:
		if c.Task, rej = s.named(a); rej != nil {
			break
		}
		if rej = s.holds(m, c.Task); rej != nil {
			break
		}
		if c.For, rej = s.parseFor(a); rej == nil {
			rej = s.workable(c.Task, now)
		}
	case ActComplete:
		if c.Task, rej = s.named(a); rej == nil {
			rej = s.CheckComplete(m, c.Task)
		}
	case ActHandoff:
		if c.Task, rej = s.named(a); rej == nil {
			rej = s.CheckHandoff(m, c.Task, a.To)
		}
	case ActEscalate:
		if a.Request == "" {
			return c, Reject(KindMalformed, "escalate needs a request")
		}
		if c.Request = s.Request(a.Request); c.Request == nil {
			return c, Reject(KindUnknown, "no request %q", a.Request)
		}
		rej = s.CheckEscalate(m, c.Request)
	case ActRequestApproval:
		if c.Task, rej = s.named(a); rej == nil {
			rej = s.CheckRequestApproval(m, c.Task)
		}
	case ActApprove, ActReject:
		if a.Request == "" {
			return c, Reject(KindMalformed, "%s needs a request", a.Type)
		}
		if c.Request = s.Request(a.Request); c.Request == nil {
			return c, Reject(KindUnknown, "no request %q", a.Request)
		}
		rej = s.CheckDecide(c.Request, a.Type == ActReject, a.Reason)
	case ActMessage:
		rej = s.CheckMessage(m, a.To, a.Text, a.ReplyTo, a.Topic)
		if rej == nil && a.Task != "" {
			if c.Task, rej = s.named(a); rej == nil {
				rej = s.CheckAskStep(m, a.To, a.Task)
			}
		}
	case ActOpenCase:
		rej = s.CheckOpenCase(m, a)
	case ActDecide:
		if c.Task, rej = s.named(a); rej == nil {
			rej = s.CheckDecideStep(m, c.Task, a.Option)
		}
	case ActReopen:
		rej = s.CheckReopen(m, a.Case)
	case ActGet, ActSearch, ActUpdate, ActCreate, ActDelete:
		c.Fields, rej = s.CheckRecord(m, a)
	case ActScheduleMeeting:
		c.Task, _, _, rej = s.CheckMeeting(m, a, now)
	case ActWait:
		if c.For, rej = s.parseFor(a); rej == nil {
			rej = checkWaitUntil(clock.Time(a.Until), now)
		}
	case "":
		rej = Reject(KindMalformed, "action has no type")
	default:
		rej = Reject(KindMalformed, "unknown action type %q (known: %s)", a.Type, strings.Join(ActionTypes, ", "))
	}
	return c, rej
}

// named returns the task action a names.
func (s *State) named(a Action) (*Task, *Rejection) {
	if a.Task == "" {
		return nil, Reject(KindMalformed, "%s needs a task", a.Type)
	}
	t := s.Task(a.Task)
	if t == nil {
		return nil, Reject(KindUnknown, "no task %q", a.Task)
	}
	return t, nil
}

// parseFor parses the "for" of a work or wait action: a positive duration
// on the world's calendar, or 0 when it gives none.
func (s *State) parseFor(a Action) (clock.Duration, *Rejection) {
	if a.For == "" {
		return 0, nil
	}
	d, err := clock.ParseDuration(a.For, s.World.Calendar.DayLength())
	if err != nil || d <= 0 {
		return 0, Reject(KindMalformed, "%s for %q: not a positive duration", a.Type, a.For)
	}
	return d, nil
}

// CheckClaim reports whether m may claim task t at now: it is open, has
// appeared, and its queue is served by m's role and not down.
func (s *State) CheckClaim(m *Member, t *Task, now clock.Time) *Rejection {
	if t.Status != StatusOpen {
		if t.Assignee == m.ID {
			return Reject(KindState, "task %q is already yours", t.ID)
		}
		return Reject(KindState, "task %q is already %s by %s", t.ID, t.Status, t.Assignee)
	}
	if t.Hidden {
		return Reject(KindUnknown, "no task %q", t.ID)
	}
	if t.Spec.NPC != "" && t.Spec.NPC != m.ID {
		// Even a member holding the NPC's role: the stage is the NPC's.
		return Reject(KindState, "step %q is performed by %s when asked: send it a message naming the task", t.ID, t.Spec.NPC)
	}
	if !s.servesTask(m.Role, t) && t.Spec.Role == m.Role && t.Spec.NPC != m.ID {
		return Reject(KindState, "queue %q is not served by role %q", t.Queue, m.Role)
	}
	return s.queueUp(t, now)
}

// CheckServe reports whether m may claim task t and start work on it at
// now, in one event (ticket.served): CheckClaim, and then CheckWork of the
// claimed task.
func (s *State) CheckServe(m *Member, t *Task, now clock.Time) *Rejection {
	if rej := s.CheckClaim(m, t, now); rej != nil {
		return rej
	}
	return s.workable(t, now)
}

// CheckWork reports whether m may start work on task t at now: m holds it,
// is not already working on it, effort is left and its queue is not down.
func (s *State) CheckWork(m *Member, t *Task, now clock.Time) *Rejection {
	if rej := s.holds(m, t); rej != nil {
		return rej
	}
	return s.workable(t, now)
}

// CheckComplete reports whether m may mark task t done: m holds it and is
// not working on it. (Whether its effort is spent is a company rule,
// policies.WorkDone.)
func (s *State) CheckComplete(m *Member, t *Task) *Rejection { return s.holds(m, t) }

// CheckHandoff reports whether m may hand task t to member to, or back to
// its queue when to is empty.
func (s *State) CheckHandoff(m *Member, t *Task, to string) *Rejection {
	if rej := s.holds(m, t); rej != nil {
		return rej
	}
	if to == "" {
		return nil
	}
	switch o := s.Member(to); {
	case o == nil:
		return Reject(KindUnknown, "no member %q", to)
	case o.ID == m.ID:
		return Reject(KindMalformed, "handoff to yourself")
	case o.NPC && !s.npcServes(o, t.Queue):
		return Reject(KindState, "%s is a colleague the simulation plays and does not take work", o.ID)
	case !s.CanTake(o.ID, t):
		return Reject(KindState, "%s cannot take task %q (it needs role %q%s)", o.ID, t.ID, t.Spec.Role, skillNote(t.Spec.Skill))
	case o.OnLeave:
		return Reject(KindState, "%s is on leave until %d", o.ID, o.LeaveUntil)
	}
	return nil
}

// CheckRequestApproval reports whether m may ask for the approval of task
// t's purchase: m holds t, the purchase needs approval, none is pending or
// granted, and someone other than m can approve every step.
func (s *State) CheckRequestApproval(m *Member, t *Task) *Rejection {
	if rej := s.holds(m, t); rej != nil {
		return rej
	}
	steps := s.StepsFor(t)
	if len(steps) == 0 {
		return Reject(KindState, "task %q needs no approval", t.ID)
	}
	if st := s.ApprovalStatus(t); st == RequestPending || st == RequestApproved {
		return Reject(KindState, "task %q already has request %s, %s", t.ID, t.Request, st)
	}
	for _, st := range steps {
		if s.approverFor(st.Role, t.Spec.Chain, t.Spec.ApprovalAmount(), t, m.ID) == "" {
			return Reject(KindState, "nobody but %s holds role %q to approve", m.ID, st.Role)
		}
	}
	return nil
}

// CheckDecide reports whether request r may be approved (reject false) or
// rejected with reason now: it is pending, and a rejection says why. Who
// may decide is a company rule (policies.ApproverAuthority); Apply checks
// that the step waits for the actor (WaitsFor).
func (s *State) CheckDecide(r *Request, reject bool, reason string) *Rejection {
	if r.Status != RequestPending {
		return Reject(KindState, "request %s is already %s", r.ID, r.Status)
	}
	if reject && strings.TrimSpace(reason) == "" {
		return Reject(KindMalformed, "reject needs a reason")
	}
	return nil
}

// CheckEscalate reports whether m may move its request r's current step to
// the approver's stand-in (EscalationTarget).
func (s *State) CheckEscalate(m *Member, r *Request) *Rejection {
	switch {
	case r.Requester != m.ID:
		return Reject(KindState, "request %s is %s's, not yours to escalate", r.ID, r.Requester)
	case r.Status != RequestPending:
		return Reject(KindState, "request %s is already %s", r.ID, r.Status)
	case s.EscalationTarget(r.Steps[r.Current].Approver, r) == "":
		return Reject(KindState, "nobody stands above %s to take request %s", r.Steps[r.Current].Approver, r.ID)
	}
	return nil
}

// CheckMessage reports whether m may send text to member to, as a reply to
// message replyTo (if not empty), giving information topic (if not empty:
// only a colleague who holds it may give it).
func (s *State) CheckMessage(m *Member, to, text, replyTo, topic string) *Rejection {
	switch {
	case to == "":
		return Reject(KindMalformed, "message needs a recipient (to)")
	case s.Member(to) == nil:
		return Reject(KindUnknown, "no member %q", to)
	case to == m.ID:
		return Reject(KindMalformed, "message to yourself")
	case strings.TrimSpace(text) == "":
		return Reject(KindMalformed, "message needs text")
	case len(text) > s.limits().MessageBytes:
		return Reject(KindMalformed, "message is %d bytes; the limit is %d", len(text), s.limits().MessageBytes)
	case replyTo != "" && !s.repliable(replyTo, m.ID):
		return Reject(KindUnknown, "no message %q to %s to reply to", replyTo, m.ID)
	case topic != "":
		if w, ok := s.World.Member(m.ID); (!ok || w.NPC == nil || w.NPC.Knows[topic] == "") && !s.factTopic(m.ID, topic) {
			return Violation("info-source", "%s does not hold %q and cannot pass it on as given information", m.ID, topic)
		}
	}
	return nil
}

// repliable reports whether message id was delivered to member.
func (s *State) repliable(id, member string) bool {
	msg := s.Message(id)
	return msg != nil && msg.To == member && msg.Delivered
}

// checkWaitUntil refuses a wait until a time that is not after now (0:
// no time given).
func checkWaitUntil(until, now clock.Time) *Rejection {
	if until != 0 && until <= now {
		return Reject(KindMalformed, "wait until %d: not in the future (now is %d)", until, now)
	}
	return nil
}

// holds reports whether m holds task t and is not working on it.
func (s *State) holds(m *Member, t *Task) *Rejection {
	switch {
	case t.Status == StatusDone:
		return Reject(KindState, "task %q is already done", t.ID)
	case t.Assignee == "":
		return Reject(KindState, "task %q is not claimed; claim it first", t.ID)
	case t.Assignee != m.ID:
		return Reject(KindState, "task %q is held by %s, not %s", t.ID, t.Assignee, m.ID)
	case t.Status == StatusInProgress:
		return Reject(KindState, "task %q is being worked on until %d", t.ID, t.WorkUntil)
	}
	return nil
}

// workable reports whether work on held task t may start at now.
func (s *State) workable(t *Task, now clock.Time) *Rejection {
	if t.Spent >= t.Effort {
		return Reject(KindState, "task %q has no effort left (%s of %s spent); complete it", t.ID, t.Spent, t.Effort)
	}
	return s.queueUp(t, now)
}

// queueUp refuses work in t's queue while an outage blocks it.
func (s *State) queueUp(t *Task, now clock.Time) *Rejection {
	if q := s.queueOf(t).q; q != nil && q.Down(now) {
		return Reject(KindState, "queue %s is down until %d", q.ID, q.DownUntil)
	}
	return nil
}

func skillNote(skill string) string {
	if skill == "" {
		return ""
	}
	return " and skill " + skill
}

// WaitsFor reports whether request r's current step waits for member's decision.
func (s *State) WaitsFor(r *Request, member string) bool {
	return r.Status == RequestPending && r.Steps[r.Current].Approver == member
}

// ApproverFor picks who approves a step of role on chain for amount, for
// requester: the first other member holding the role, by ID; if all of
// them are away, whoever stands in for them: a delegate whose limit allows
// the step, else the manager of a holder whose delegate's limit does not
// or who has no delegate, else that holder itself (the step waits for its
// return); "" when nobody can. A delegate away itself is still named here
// (requests were recorded so): the engine escalates such a step at once
// to who stands in for it.
func (s *State) ApproverFor(role, chain string, amount int64, requester string) string {
	return s.approverFor(role, chain, amount, nil, requester)
}

// approverFor is ApproverFor for task t's request, passing over whoever a
// separation rule bars from approving it.
func (s *State) approverFor(role, chain string, amount int64, t *Task, requester string) string {
	barred := func(id string) bool {
		if t == nil || t.Case == "" {
			return false
		}
		r, _ := s.Separated(t, id, true)
		return r != nil
	}
	for _, m := range s.Members {
		if m.Role == role && m.ID != requester && !m.OnLeave && !barred(m.ID) {
			return m.ID
		}
	}
	for _, m := range s.Members {
		if m.Role == role && m.ID != requester && m.Delegate != "" && m.Delegate != requester && s.DelegateMay(m, chain, amount) && !barred(m.Delegate) {
			return m.Delegate
		}
	}
	for _, m := range s.Members {
		if m.Role == role && m.ID != requester && m.OnLeave && m.Delegate != "" && !s.DelegateMay(m, chain, amount) {
			if mgr := s.managerStandIn(m, requester); mgr != "" {
				return mgr
			}
			return m.ID
		}
	}
	// A holder away without a delegate: its manager, as a step waiting for
	// it when the leave began is escalated, else it (the step waits for its
	// return). The loop above keeps its answers: recorded requests were
	// routed by it, and this one's cases were refused.
	for _, m := range s.Members {
		if m.Role == role && m.ID != requester && m.OnLeave && m.Delegate == "" {
			if mgr := s.managerStandIn(m, requester); mgr != "" {
				return mgr
			}
			return m.ID
		}
	}
	return ""
}

// RouteSteps are the steps of an approval request for task t's purchase by
// requester, as they are routed now: each to ApproverFor its role, marked
// Delegated when that is a stand-in rather than a holder of the role. The
// engine emits them in approval.requested, and Apply checks them.
func (s *State) RouteSteps(t *Task, requester string) []RequestStep {
	var steps []RequestStep
	for _, st := range s.StepsFor(t) {
		who := s.approverFor(st.Role, t.Spec.Chain, t.Spec.ApprovalAmount(), t, requester)
		delegated := false
		if m := s.Member(who); m != nil {
			delegated = m.Role != st.Role
		}
		steps = append(steps, RequestStep{Role: st.Role, Approver: who, Delegated: delegated})
	}
	return steps
}

// EscalationTarget is who takes over request r's step from member: its
// delegate while on leave, if the delegation limit allows r, else its
// manager, else another holder of its role — never the requester, never
// someone on leave; "" when nobody can.
func (s *State) EscalationTarget(member string, r *Request) string {
	requester := r.Requester
	m := s.Member(member)
	wm, found := s.World.Member(member)
	if m == nil || !found {
		return ""
	}
	t := s.Task(r.Task)
	ok := func(id string) bool {
		o := s.Member(id)
		if o == nil || id == requester || id == member || o.OnLeave {
			return false
		}
		if t != nil && t.Case != "" {
			if rule, _ := s.Separated(t, id, true); rule != nil {
				return false // a separation rule bars it from approving this step
			}
		}
		return true
	}
	if m.OnLeave && ok(m.Delegate) && s.DelegateMay(m, r.Chain, r.Amount) {
		return m.Delegate
	}
	if wm.Manager != "" && ok(wm.Manager) {
		return wm.Manager
	}
	for _, o := range s.Members {
		if o.Role == m.Role && ok(o.ID) {
			return o.ID
		}
	}
	return ""
}
