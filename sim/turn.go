package sim

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// takeTurn records a member's answer and applies its actions in order.
// Each action is checked by org's structural check (State.Check, the same
// preconditions Apply asks of the events it causes), then by the company's
// rules; a refused one becomes an action.rejected event.
func (e *Engine) takeTurn(a Answer) {
	m := e.st.Member(a.Member)
	if m.NPC && e.format >= 3 && e.quietly(m, a) {
		return
	}
	if a.TimedOut {
		e.emit(payload.EvTurnTimeout, m.ID, m.WakeCause, payload.TurnTimeout{Turn: m.Turn + 1, Seen: e.seen})
		return
	}
	if a.Failed != "" && (a.Turn == 0 || a.Turn == m.Turn+1) { // a reply to another turn is malformed (below)
		e.emit(payload.EvTurnFailed, m.ID, m.WakeCause, payload.TurnFailed{Turn: m.Turn + 1, Seen: e.seen, Reason: failReason(a.Failed)})
		return
	}
	cal := e.col(m).sched
	cursor := cal.AddWork(e.now, e.cost(m, e.cfg.World.ActionCosts().Turn))
	actions := a.Actions
	if actions == nil {
		actions = []org.Action{}
	}
	turn := payload.Turn{Turn: m.Turn + 1, Seen: e.seen, Actions: actions, BusyUntil: cursor}
	if lim := e.st.Limits.WithDefaults().Inbox; len(m.Inbox) > lim {
		turn.InboxRead = lim // the observation showed the first lim messages
	}
	turnSeq := emitVia(e, &e.slots.turn, payload.EvTurn, m.ID, m.WakeCause, turn)
	if a.Malformed == "" && a.Turn != 0 && a.Turn != m.Turn {
		a.Malformed = fmt.Sprintf("reply answers turn %d, but turn %d was asked", a.Turn, m.Turn)
	}
	if a.Malformed != "" {
		e.reject(m.ID, turnSeq, -1, org.Action{}, org.Reject(org.KindMalformed, "%s", a.Malformed))
		return
	}
	ended := false
	for i, act := range a.Actions {
		if ended {
			e.reject(m.ID, turnSeq, i, act, org.Reject(org.KindState, "%s", org.ReasonTurnEnded))
			continue
		}
		c, rej := e.st.Check(m, act, e.now)
		if rej == nil {
			rej = e.book.Check(e.st, m.ID, &a.Actions[i]) // act's original: a pointer to it does not escape to the heap
		}
		if rej != nil {
			e.reject(m.ID, turnSeq, i, act, rej)
			continue
		}
		cursor, ended = e.perform(m, &c, turnSeq, cursor)
	}
	if len(a.Actions) == 0 {
		emitVia(e, &e.slots.waiting, payload.EvMemberWaiting, m.ID, turnSeq, payload.MemberWaiting{})
	}
}

// quietly records a simulated colleague's answer without a turn event
// (format 3) when it is a serving colleague's routine: taking the next
// ticket and starting on it (ticket.served), or waiting (member.waiting
// with seen). Either is one event where a turn and its actions were two
// or three. It reports false, having emitted nothing, for any other answer,
// or one that the turn's checks would refuse in part: takeTurn then
// records it as a turn.
func (e *Engine) quietly(m *org.Member, a Answer) bool {
	if !e.turnless(m) {
		return false
	}
	cal := e.col(m).sched
	acts := a.Actions
	switch {
	case len(acts) == 1 && acts[0].Type == org.ActWait && acts[0].For == "":
		if _, rej := e.st.Check(m, acts[0], e.now); rej != nil || e.book.Check(e.st, m.ID, &acts[0]) != nil {
			return false
		}
		until := clock.Time(acts[0].Until)
		if !e.then(m, payload.TicketResolved{Waits: true, NextUntil: until}) {
			emitVia(e, &e.slots.waiting, payload.EvMemberWaiting, m.ID, m.WakeCause, payload.MemberWaiting{Until: until, Seen: e.seen})
		}
		return true
	case len(acts) == 2 && acts[0].Type == org.ActClaim && acts[1].Type == org.ActWork && acts[0].Task == acts[1].Task && acts[1].For == "":
		t := e.st.Task(acts[0].Task)
		if t == nil || e.st.CheckServe(m, t, e.now) != nil ||
			e.book.Check(e.st, m.ID, &acts[0]) != nil || e.book.Check(e.st, m.ID, &acts[1]) != nil {
			return false
		}
		d := min(e.cfg.World.ActionCosts().Work, t.Effort-t.Spent)
		until := cal.AddWork(e.now, d)
		if !e.then(m, payload.TicketResolved{Next: t.ID, NextWork: d, NextUntil: until}) {
			emitVia(e, &e.slots.served, payload.EvTicketServed, m.ID, m.WakeCause,
				payload.TicketServed{Task: t.ID, Work: d, Until: until, Seen: e.seen})
		}
		return true
	}
	return false
}

// then records colleague m's next step (step's Next, NextWork, Waits and
// NextUntil) in the ticket.resolved of m that this Tick emitted last, when
// that is the last event and the one m decided on (format 5): the step is
// then no event of its own, and the resolve's payload is encoded with it.
// It reports false, changing nothing, otherwise; the step is then its own
// event, as in format 4.
func (e *Engine) then(m *org.Member, step payload.TicketResolved) bool {
	r := e.resolved
	if r.seq == 0 || r.seq != e.st.LastSeq || r.seq != e.seen || e.pending[r.at].Actor != m.ID {
		return false
	}
	p := &e.slots.resolved
	*p = r.p
	p.Next, p.NextWork, p.Waits, p.NextUntil = step.Next, step.NextWork, step.Waits, step.NextUntil
	ev := &e.pending[r.at]
	if err := e.st.ApplyThen(*ev, p); err != nil {
		panic(fmt.Sprintf("sim: a next step the checks passed does not apply: %v", err))
	}
	e.resolved = resolvedNow{}
	ev.Payload = e.encode(p)
	e.follow(ev, p)
	*p = payload.TicketResolved{}
	return true
}

// turnless reports whether colleague m may act now without a turn event:
// the turn would change nothing but its counters, since it would clear no
// inbox, refusal or read result, and its cursor is now (m is not off
// shift).
func (e *Engine) turnless(m *org.Member) bool {
	return len(m.Inbox) == 0 && len(m.Rejected) == 0 && len(m.Results) == 0 && e.col(m).sched.AddWork(e.now, 0) == e.now
}

// absentAt reports whether npc is away at now, and until when.
func absentAt(npc *worlds.NPC, now clock.Time) (until clock.Time, away bool) {
	for _, w := range npc.Absent {
		if now >= w.From && now < w.To {
			return w.To, true
		}
	}
	return 0, false
}

// resolves reports whether the stint of ticket t that ends now is
// recorded as ticket.resolved (format 3) rather than work.finished: a
// simulated colleague serving queues holds it, is at work now, the stint
// spends the ticket's last effort, and the completion the colleague makes
// next passes the turn's checks on the state after the work. A ticket of a
// case or with a purchase is recorded as in format 2.
func (e *Engine) resolves(t *org.Task) bool {
	if e.format < 3 || t.Kind != org.KindTicket || t.Case != "" || t.Project != "" || t.Spec.Purchase > 0 || t.Spent+t.Stint < t.Effort {
		return false
	}
	m := e.st.Member(t.Assignee)
	npc := e.col(m).npc
	if npc == nil || len(npc.Serves) == 0 {
		return false
	}
	if _, away := absentAt(npc, e.now); away {
		return false
	}
	if !e.turnless(m) {
		return false
	}
	ok := false
	e.st.AsIfFinished(t, func() {
		// The engine's own action, reused: one made here would escape to
		// the heap through the rules' interface.
		a := &e.scratch.complete
		*a = org.Action{Type: org.ActComplete, Task: t.ID}
		if _, rej := e.st.Check(m, *a, e.now); rej == nil {
			ok = e.book.Check(e.st, m.ID, a) == nil
		}
	})
	return ok
}

// failReason is why a turn failed as turn.failed records it: valid UTF-8
// (as encoding/json would carry it), at most MaxFailReason bytes.
func failReason(why string) string {
	why = strings.ToValidUTF8(why, "\uFFFD")
	if len(why) <= MaxFailReason {
		return why
	}
	cut := MaxFailReason - len("…")
	for cut > 0 && !utf8.RuneStart(why[cut]) {
		cut--
	}
	return why[:cut] + "…"
}

func (e *Engine) reject(member string, cause uint64, i int, a org.Action, r *org.Rejection) {
	e.emit(payload.EvActionRejected, member, cause, payload.ActionRejected{Index: i, Action: a, Kind: r.Kind, Rule: r.Rule, Reason: r.Reason})
}

// perform emits the events of an accepted action starting at cursor; it
// returns when the member is next free and whether the turn has ended.
func (e *Engine) perform(m *org.Member, c *org.Checked, cause uint64, cursor clock.Time) (clock.Time, bool) {
	cal := e.col(m).sched
	costs := e.cfg.World.ActionCosts()
	a := &c.Action
	switch a.Type {
	case org.ActClaim:
		cursor = cal.AddWork(cursor, e.cost(m, costs.Claim))
		emitVia(e, &e.slots.claimed, payload.EvTaskClaimed, m.ID, cause, payload.TaskClaimed{Task: a.Task, BusyUntil: cursor})
	case org.ActWork:
		t := c.Task
		d := min(costs.Work, t.Effort-t.Spent)
		if c.For > 0 {
			d = min(c.For, t.Effort-t.Spent)
		}
		until := cal.AddWork(cursor, d)
		emitVia(e, &e.slots.started, payload.EvWorkStarted, m.ID, cause, payload.WorkStarted{Task: a.Task, Work: d, Until: until})
		return until, true
	case org.ActComplete:
		cursor = cal.AddWork(cursor, e.cost(m, costs.Complete))
		emitVia(e, &e.slots.completed, payload.EvTaskCompleted, m.ID, cause, payload.TaskCompleted{Task: a.Task, BusyUntil: cursor})
	case org.ActHandoff:
		cursor = cal.AddWork(cursor, e.cost(m, costs.Handoff))
		e.emit(payload.EvTaskHandedOff, m.ID, cause, payload.TaskHandedOff{Task: a.Task, To: a.To, BusyUntil: cursor})
	case org.ActEscalate:
		r := c.Request
		from := r.Steps[r.Current].Approver
		cursor = cal.AddWork(cursor, e.cost(m, costs.Escalate))
		e.emit(payload.EvApprovalEscalated, m.ID, cause, payload.ApprovalEscalated{Request: r.ID, Step: r.Current, From: from,
			To: e.st.EscalationTarget(from, r), Reason: "requested", BusyUntil: cursor})
	case org.ActRequestApproval:
		t := c.Task
		steps := e.st.RouteSteps(t, m.ID)
		cursor = cal.AddWork(cursor, e.cost(m, costs.RequestApproval))
		id := fmt.Sprintf("r%d", len(e.st.Requests)+1)
		seq := e.emit(payload.EvApprovalRequested, m.ID, cause, payload.ApprovalRequested{Request: id, Task: t.ID, Chain: t.Spec.Chain,
			Amount: t.Spec.ApprovalAmount(), Steps: steps, BusyUntil: cursor})
		e.stepUp(id, seq)
	case org.ActApprove, org.ActReject:
		r := c.Request
		cursor = cal.AddWork(cursor, e.cost(m, costs.Decide))
		typ := payload.EvApprovalGranted
		if a.Type == org.ActReject {
			typ = payload.EvApprovalRejected
		}
		seq := e.emit(typ, m.ID, cause, payload.ApprovalDecided{Request: r.ID, Step: r.Current, Reason: a.Reason, BusyUntil: cursor})
		e.stepUp(r.ID, seq)
	case org.ActMessage:
		cursor = cal.AddWork(cursor, e.cost(m, costs.Message))
		id := fmt.Sprintf("m%d", len(e.st.Messages)+1)
		e.emit(payload.EvMessageSent, m.ID, cause, payload.MessageSent{Message: id, To: a.To, Text: a.Text, Topic: a.Topic,
			ReplyTo: a.ReplyTo, Task: a.Task, DeliverAt: cal.AddWork(cursor, costs.MessageLatency), BusyUntil: cursor})
	case org.ActOpenCase:
		tpl, _ := e.cfg.World.CaseTemplate(a.Template)
		cursor = cal.AddWork(cursor, e.cost(m, costs.Claim))
		p := e.openCase(tpl, memberCase(tpl.ID, m.ID, e.st.OpenedBy(m.ID, tpl.ID)+1), a.Attributes.Attrs(), true)
		p.OpenedBy, p.BusyUntil = m.ID, cursor
		e.emit(payload.EvCaseOpened, m.ID, cause, p)
	case org.ActGet, org.ActSearch, org.ActUpdate, org.ActCreate, org.ActDelete:
		cursor = e.performRecord(m, c, cause, cursor)
	case org.ActDecide, org.ActReopen:
		cursor = e.performKind(m, c, cause, cursor)
	case org.ActScheduleMeeting:
		cursor = e.performMeeting(m, c, cause, cursor)
	case org.ActWait:
		var until clock.Time
		switch {
		case a.Until != 0:
			until = clock.Time(a.Until)
		case c.For > 0:
			until = cal.AddWork(cursor, c.For)
		}
		emitVia(e, &e.slots.waiting, payload.EvMemberWaiting, m.ID, cause, payload.MemberWaiting{Until: until})
		return cursor, true
	}
	return cursor, false
}

// cost is what an action costs a member: NPCs are simulated colleagues
// whose bookkeeping takes no simulated time.
func (e *Engine) cost(m *org.Member, d clock.Duration) clock.Duration {
	if m.NPC {
		return 0
	}
	return d
}

// npcDecide is an NPC colleague's turn. In order: it decides each approval
// waiting for it and answers each message once its reply latency (drawn per
// request step or message) has passed; if it serves queues, it finishes the
// ticket it holds and takes the next one in queue order; then it waits until
// the next reply is due, or until something changes. While absent it waits
// until it is back.
func (e *Engine) npcDecide(id string) Answer {
	m := e.st.Member(id)
	c := e.col(m)
	npc, cal := c.npc, c.sched
	// The actions are appended to the engine's action arena; Step (or
	// settle, for a colleague due alone) resets it once every answer of
	// the instant has been taken.
	start := len(e.acts)
	answer := func() Answer {
		acts := e.acts[start:len(e.acts):len(e.acts)]
		return Answer{Member: id, Turn: m.Turn + 1, Actions: acts}
	}
	if back, away := absentAt(npc, e.now); away {
		e.acts = append(e.acts, org.Action{Type: org.ActWait, Until: int64(back)})
		return answer()
	}
	var next clock.Time
	due := func(since clock.Time, key string) bool {
		lat := uniform(e.draws, key, int64(npc.ReplyMin), int64(npc.ReplyMax))
		at := cal.AddWork(since, clock.Duration(lat))
		if at <= e.now {
			return true
		}
		if next == 0 || at < next {
			next = at
		}
		return false
	}
	for _, r := range e.st.PendingRequests() {
		if r.Steps[r.Current].Approver != id {
			continue
		}
		if !due(r.Steps[r.Current].Since, fmt.Sprintf("npc/%s/%s/%d", id, r.ID, r.Current)) {
			continue
		}
		if why := e.npcObjection(r); why != "" {
			e.acts = append(e.acts, org.Action{Type: org.ActReject, Request: r.ID, Reason: why})
		} else {
			e.acts = append(e.acts, org.Action{Type: org.ActApprove, Request: r.ID})
		}
	}
	for _, msg := range e.st.Unanswered(id) {
		if !msg.Delivered || e.st.Member(msg.From).NPC {
			continue
		}
		if !due(msg.SentAt, "npc/"+id+"/msg/"+msg.ID) {
			continue
		}
		if t := e.st.Task(msg.Task); msg.Task != "" && t != nil && t.Spec.NPC == id && t.Status != org.StatusDone {
			e.acts = append(e.acts, e.npcStep(msg, t)...)
			continue
		}
		if reply, ok := e.factReply(id, msg); ok {
			e.acts = append(e.acts, reply)
			continue
		}
		reply := org.Action{Type: org.ActMessage, To: msg.From, ReplyTo: msg.ID,
			Text: "Sorry, I can't help with that. I can tell you about: " + strings.Join(slices.Sorted(maps.Keys(npc.Knows)), ", ")}
		if len(npc.Knows) == 0 {
			reply.Text = "Sorry, I can't help with that."
		}
		text := strings.ToLower(msg.Text)
		if says, ok := e.availabilityAnswer(id, msg.Text); ok {
			reply.Text = says
			e.acts = append(e.acts, reply)
			continue
		}
		for _, topic := range slices.Sorted(maps.Keys(npc.Knows)) {
			if strings.Contains(text, strings.ToLower(topic)) {
				reply.Text, reply.Topic = npc.Knows[topic], topic
				break
			}
		}
		e.acts = append(e.acts, reply)
	}
	e.reopens(id, due)
	if len(npc.Serves) > 0 {
		e.npcWork(m)
	}
	if n := len(e.acts); n > start && e.acts[n-1].Type == org.ActWork {
		return answer()
	}
	if next != 0 {
		e.acts = append(e.acts, org.Action{Type: org.ActWait, Until: int64(next)})
	} else {
		e.acts = append(e.acts, org.Action{Type: org.ActWait})
	}
	return answer()
}

// npcWork appends to the action arena what a serving NPC does about its
// work: finish what it holds, then take the next ticket its queues' order
// gives it and start on it.
func (e *Engine) npcWork(m *org.Member) {
	start := len(e.acts)
	for _, t := range m.Held() {
		if t.Status == org.StatusInProgress {
			e.acts = e.acts[:start]
			return
		}
		if t.Spent < t.Effort {
			e.acts = append(e.acts[:start], org.Action{Type: org.ActWork, Task: t.ID})
			return
		}
		e.acts = append(e.acts, org.Action{Type: org.ActComplete, Task: t.ID})
	}
	for _, qi := range e.col(m).serves {
		if e.st.QueueAt(qi).Down(e.now) {
			continue
		}
		if t := e.st.QueueHeadOf(qi, m); t != nil {
			e.acts = append(e.acts, org.Action{Type: org.ActClaim, Task: t.ID}, org.Action{Type: org.ActWork, Task: t.ID})
			return
		}
	}
}

// npcObjection is why an NPC approver refuses a request, or "".
func (e *Engine) npcObjection(r *org.Request) string {
	t := e.st.Task(r.Task)
	if t.Assignee != r.Requester {
		return fmt.Sprintf("%s does not hold task %s", r.Requester, t.ID)
	}
	if r.Amount != t.Spec.ApprovalAmount() {
		return fmt.Sprintf("amount %d does not match the task's purchase of %d", r.Amount, t.Spec.ApprovalAmount())
	}
	spend := r.Amount
	if t.Case != "" {
		spend = t.Spec.Purchase // a case's amount need not be spending
	}
	if b := e.st.Budget(t.Team); b != nil && spend > b.Remaining() {
		return fmt.Sprintf("team %s has %d left, less than %d", b.Team, b.Remaining(), spend)
	}
	return ""
}
