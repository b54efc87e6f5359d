package sim

import (
	"fmt"
	"sort"
	"strings"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/worlds"
)

// takeTurn records a member's answer and applies its actions in order.
func (e *Engine) takeTurn(a Answer) {
	m := e.st.Member(a.Member)
	if a.TimedOut {
		e.emit(org.EvTurnTimeout, m.ID, m.WakeCause, org.TurnTimeout{Turn: m.Turn + 1, Seen: e.seen})
		return
	}
	cal := &e.cfg.World.Calendar
	cursor := cal.AddWork(e.now, e.cost(m, MinTurnCost))
	actions := a.Actions
	if actions == nil {
		actions = []org.Action{}
	}
	turn := org.Turn{Turn: m.Turn + 1, Seen: e.seen, Actions: actions, BusyUntil: cursor}
	if lim := e.st.Limits.WithDefaults().Inbox; len(m.Inbox) > lim {
		turn.InboxRead = lim // the observation showed the first lim messages
	}
	turnSeq := emitVia(e, &e.slots.turn, org.EvTurn, m.ID, m.WakeCause, turn)
	if a.Malformed == "" && a.Turn != 0 && a.Turn != m.Turn {
		a.Malformed = fmt.Sprintf("reply answers turn %d, but turn %d was asked", a.Turn, m.Turn)
	}
	if a.Malformed != "" {
		e.reject(m.ID, turnSeq, -1, org.Action{}, policies.Reject(policies.KindMalformed, "%s", a.Malformed))
		return
	}
	ended := false
	for i, act := range a.Actions {
		if ended {
			e.reject(m.ID, turnSeq, i, act, policies.Reject(policies.KindState, "the turn already ended with a work or wait action"))
			continue
		}
		rej := e.check(m, act)
		if rej == nil {
			rej = e.rules.Check(e.st, m.ID, act)
		}
		if rej != nil {
			e.reject(m.ID, turnSeq, i, act, rej)
			continue
		}
		cursor, ended = e.perform(m, act, turnSeq, cursor)
	}
	if len(a.Actions) == 0 {
		emitVia(e, &e.slots.waiting, org.EvMemberWaiting, m.ID, turnSeq, org.MemberWaiting{})
	}
}

func (e *Engine) reject(member string, cause uint64, i int, a org.Action, r *policies.Rejection) {
	e.emit(org.EvActionRejected, member, cause, org.ActionRejected{Index: i, Action: a, Kind: r.Kind, Rule: r.Rule, Reason: r.Reason})
}

// check is the structural check: the action is well formed and names things
// that exist and are in a state it fits. Company rules come after it.
func (e *Engine) check(m *org.Member, a org.Action) *policies.Rejection {
	bad := func(format string, args ...any) *policies.Rejection {
		return policies.Reject(policies.KindMalformed, format, args...)
	}
	state := func(format string, args ...any) *policies.Rejection {
		return policies.Reject(policies.KindState, format, args...)
	}
	task := func() (*org.Task, *policies.Rejection) {
		if a.Task == "" {
			return nil, bad("%s needs a task", a.Type)
		}
		t := e.st.Task(a.Task)
		if t == nil {
			return nil, policies.Reject(policies.KindUnknown, "no task %q", a.Task)
		}
		return t, nil
	}
	mine := func(t *org.Task) *policies.Rejection {
		switch {
		case t.Status == org.StatusDone:
			return state("task %q is already done", t.ID)
		case t.Assignee == "":
			return state("task %q is not claimed; claim it first", t.ID)
		case t.Assignee != m.ID:
			return state("task %q is held by %s, not %s", t.ID, t.Assignee, m.ID)
		case t.Status == org.StatusInProgress:
			return state("task %q is being worked on until %d", t.ID, t.WorkUntil)
		}
		return nil
	}
	switch a.Type {
	case org.ActClaim:
		t, rej := task()
		if rej != nil {
			return rej
		}
		if t.Status != org.StatusOpen {
			if t.Assignee == m.ID {
				return state("task %q is already yours", t.ID)
			}
			return state("task %q is already %s by %s", t.ID, t.Status, t.Assignee)
		}
		if t.Hidden {
			return policies.Reject(policies.KindUnknown, "no task %q", a.Task)
		}
		if !e.st.Serves(m.Role, t.Queue) && t.Spec.Role == m.Role {
			return state("queue %q is not served by role %q", t.Queue, m.Role)
		}
		if q := e.st.Queue(t.Queue); q.Down(e.now) {
			return state("queue %s is down until %d", q.ID, q.DownUntil)
		}
	case org.ActWork:
		t, rej := task()
		if rej != nil {
			return rej
		}
		if rej := mine(t); rej != nil {
			return rej
		}
		if a.For != "" {
			d, err := clock.ParseDuration(a.For, e.cfg.World.Calendar.DayLength())
			if err != nil || d <= 0 {
				return bad("work for %q: not a positive duration", a.For)
			}
		}
		if t.Spent >= t.Effort {
			return state("task %q has no effort left (%s of %s spent); complete it", t.ID, t.Spent, t.Effort)
		}
		if q := e.st.Queue(t.Queue); q.Down(e.now) {
			return state("queue %s is down until %d", q.ID, q.DownUntil)
		}
	case org.ActComplete:
		t, rej := task()
		if rej != nil {
			return rej
		}
		if rej := mine(t); rej != nil {
			return rej
		}
	case org.ActHandoff:
		t, rej := task()
		if rej != nil {
			return rej
		}
		if rej := mine(t); rej != nil {
			return rej
		}
		if a.To != "" {
			switch to := e.st.Member(a.To); {
			case to == nil:
				return policies.Reject(policies.KindUnknown, "no member %q", a.To)
			case to.ID == m.ID:
				return bad("handoff to yourself")
			case to.NPC && !e.npcServes(to.ID, t.Queue):
				return state("%s is a colleague the simulation plays and does not take work", to.ID)
			case !e.st.CanTake(to.ID, t):
				return state("%s cannot take task %q (it needs role %q%s)", to.ID, t.ID, t.Spec.Role, skillNote(t.Spec.Skill))
			case to.OnLeave:
				return state("%s is on leave until %d", to.ID, to.LeaveUntil)
			}
		}
	case org.ActEscalate:
		if a.Request == "" {
			return bad("escalate needs a request")
		}
		r := e.st.Request(a.Request)
		switch {
		case r == nil:
			return policies.Reject(policies.KindUnknown, "no request %q", a.Request)
		case r.Requester != m.ID:
			return state("request %s is %s's, not yours to escalate", r.ID, r.Requester)
		case r.Status != org.RequestPending:
			return state("request %s is already %s", r.ID, r.Status)
		case e.escalationTarget(r.Steps[r.Current].Approver, r.Requester) == "":
			return state("nobody stands above %s to take request %s", r.Steps[r.Current].Approver, r.ID)
		}
	case org.ActRequestApproval:
		t, rej := task()
		if rej != nil {
			return rej
		}
		if rej := mine(t); rej != nil {
			return rej
		}
		steps := e.st.StepsFor(t)
		if len(steps) == 0 {
			return state("task %q needs no approval", t.ID)
		}
		if st := e.st.ApprovalStatus(t); st == org.RequestPending || st == org.RequestApproved {
			return state("task %q already has request %s, %s", t.ID, t.Request, st)
		}
		for _, s := range steps {
			if e.approverFor(s.Role, m.ID) == "" {
				return state("nobody but %s holds role %q to approve", m.ID, s.Role)
			}
		}
	case org.ActApprove, org.ActReject:
		if a.Request == "" {
			return bad("%s needs a request", a.Type)
		}
		r := e.st.Request(a.Request)
		if r == nil {
			return policies.Reject(policies.KindUnknown, "no request %q", a.Request)
		}
		if r.Status != org.RequestPending {
			return state("request %s is already %s", r.ID, r.Status)
		}
		if a.Type == org.ActReject && strings.TrimSpace(a.Reason) == "" {
			return bad("reject needs a reason")
		}
	case org.ActMessage:
		switch {
		case a.To == "":
			return bad("message needs a recipient (to)")
		case e.st.Member(a.To) == nil:
			return policies.Reject(policies.KindUnknown, "no member %q", a.To)
		case a.To == m.ID:
			return bad("message to yourself")
		case strings.TrimSpace(a.Text) == "":
			return bad("message needs text")
		case len(a.Text) > e.st.Limits.WithDefaults().MessageBytes:
			return bad("message is %d bytes; the limit is %d", len(a.Text), e.st.Limits.WithDefaults().MessageBytes)
		case a.ReplyTo != "" && (e.st.Message(a.ReplyTo) == nil || e.st.Message(a.ReplyTo).To != m.ID || !e.st.Message(a.ReplyTo).Delivered):
			return policies.Reject(policies.KindUnknown, "no message %q to %s to reply to", a.ReplyTo, m.ID)
		case a.Topic != "":
			// Only a colleague who holds information can give it.
			if w, ok := e.cfg.World.Member(m.ID); !ok || w.NPC == nil || w.NPC.Knows[a.Topic] == "" {
				return &policies.Rejection{Kind: policies.KindPolicy, Rule: "info-source",
					Reason: fmt.Sprintf("%s does not hold %q and cannot pass it on as given information", m.ID, a.Topic)}
			}
		}
	case org.ActWait:
		if a.For != "" {
			d, err := clock.ParseDuration(a.For, e.cfg.World.Calendar.DayLength())
			if err != nil || d <= 0 {
				return bad("wait for %q: not a positive duration", a.For)
			}
		}
		if a.Until != 0 && clock.Time(a.Until) <= e.now {
			return bad("wait until %d: not in the future (now is %d)", a.Until, e.now)
		}
	case "":
		return bad("action has no type")
	default:
		return bad("unknown action type %q (known: %s)", a.Type, strings.Join(org.ActionTypes, ", "))
	}
	return nil
}

// perform emits the events of an accepted action starting at cursor; it
// returns when the member is next free and whether the turn has ended.
func (e *Engine) perform(m *org.Member, a org.Action, cause uint64, cursor clock.Time) (clock.Time, bool) {
	cal := &e.cfg.World.Calendar
	switch a.Type {
	case org.ActClaim:
		cursor = cal.AddWork(cursor, e.cost(m, ClaimCost))
		emitVia(e, &e.slots.claimed, org.EvTaskClaimed, m.ID, cause, org.TaskClaimed{Task: a.Task, BusyUntil: cursor})
	case org.ActWork:
		t := e.st.Task(a.Task)
		d := min(DefaultWorkSpan, t.Effort-t.Spent)
		if a.For != "" {
			d, _ = clock.ParseDuration(a.For, cal.DayLength())
			d = min(d, t.Effort-t.Spent)
		}
		until := cal.AddWork(cursor, d)
		emitVia(e, &e.slots.started, org.EvWorkStarted, m.ID, cause, org.WorkStarted{Task: a.Task, Work: d, Until: until})
		return until, true
	case org.ActComplete:
		cursor = cal.AddWork(cursor, e.cost(m, CompleteCost))
		emitVia(e, &e.slots.completed, org.EvTaskCompleted, m.ID, cause, org.TaskCompleted{Task: a.Task, BusyUntil: cursor})
	case org.ActHandoff:
		cursor = cal.AddWork(cursor, e.cost(m, ClaimCost))
		e.emit(org.EvTaskHandedOff, m.ID, cause, org.TaskHandedOff{Task: a.Task, To: a.To, BusyUntil: cursor})
	case org.ActEscalate:
		r := e.st.Request(a.Request)
		from := r.Steps[r.Current].Approver
		cursor = cal.AddWork(cursor, e.cost(m, MessageCost))
		e.emit(org.EvApprovalEscalated, m.ID, cause, org.ApprovalEscalated{Request: r.ID, Step: r.Current, From: from,
			To: e.escalationTarget(from, r.Requester), Reason: "requested", BusyUntil: cursor})
	case org.ActRequestApproval:
		t := e.st.Task(a.Task)
		var steps []org.RequestStep
		for _, s := range e.st.StepsFor(t) {
			who := e.approverFor(s.Role, m.ID)
			steps = append(steps, org.RequestStep{Role: s.Role, Approver: who, Delegated: e.st.Member(who).Role != s.Role})
		}
		cursor = cal.AddWork(cursor, e.cost(m, RequestCost))
		id := fmt.Sprintf("r%d", len(e.st.Requests)+1)
		e.emit(org.EvApprovalRequested, m.ID, cause, org.ApprovalRequested{Request: id, Task: t.ID, Chain: t.Spec.Chain,
			Amount: t.Spec.Purchase, Steps: steps, BusyUntil: cursor})
	case org.ActApprove, org.ActReject:
		r := e.st.Request(a.Request)
		cursor = cal.AddWork(cursor, e.cost(m, DecideCost))
		typ := org.EvApprovalGranted
		if a.Type == org.ActReject {
			typ = org.EvApprovalRejected
		}
		e.emit(typ, m.ID, cause, org.ApprovalDecided{Request: r.ID, Step: r.Current, Reason: a.Reason, BusyUntil: cursor})
	case org.ActMessage:
		cursor = cal.AddWork(cursor, e.cost(m, MessageCost))
		id := fmt.Sprintf("m%d", len(e.st.Messages)+1)
		e.emit(org.EvMessageSent, m.ID, cause, org.MessageSent{Message: id, To: a.To, Text: a.Text, Topic: a.Topic,
			ReplyTo: a.ReplyTo, DeliverAt: cal.AddWork(cursor, MessageLatency), BusyUntil: cursor})
	case org.ActWait:
		var until clock.Time
		switch {
		case a.Until != 0:
			until = clock.Time(a.Until)
		case a.For != "":
			d, _ := clock.ParseDuration(a.For, cal.DayLength())
			until = cal.AddWork(cursor, d)
		}
		emitVia(e, &e.slots.waiting, org.EvMemberWaiting, m.ID, cause, org.MemberWaiting{Until: until})
		return cursor, true
	}
	return cursor, false
}

func skillNote(skill string) string {
	if skill == "" {
		return ""
	}
	return " and skill " + skill
}

func (e *Engine) npcServes(member, queue string) bool {
	w, ok := e.cfg.World.Member(member)
	return ok && w.NPC != nil && contains(w.NPC.Serves, queue)
}

// approverFor picks who approves a step of role for requester: the first
// other member holding the role, by ID.
func (e *Engine) approverFor(role, requester string) string {
	for _, m := range e.st.Members {
		if m.Role == role && m.ID != requester && !m.OnLeave {
			return m.ID
		}
	}
	// Everyone holding the role is away: whoever stands in for them.
	for _, m := range e.st.Members {
		if m.Role == role && m.ID != requester && m.Delegate != "" && m.Delegate != requester {
			return m.Delegate
		}
	}
	return ""
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
	npc := e.npcSpec[id]
	m := e.st.Member(id)
	cal := &e.cfg.World.Calendar
	// The actions are appended to the engine's action arena; Step resets it
	// once every answer of the instant has been taken.
	start := len(e.acts)
	answer := func() Answer {
		acts := e.acts[start:len(e.acts):len(e.acts)]
		return Answer{Member: id, Turn: m.Turn + 1, Actions: acts}
	}
	for _, w := range npc.Absent {
		if e.now >= w.From && e.now < w.To {
			e.acts = append(e.acts, org.Action{Type: org.ActWait, Until: int64(w.To)})
			return answer()
		}
	}
	var next clock.Time
	due := func(since clock.Time, key string) bool {
		lat := uniform(e.cfg.Seed, key, int64(npc.ReplyMin), int64(npc.ReplyMax))
		at := cal.AddWork(since, clock.Duration(lat))
		if at <= e.now {
			return true
		}
		if next == 0 || at < next {
			next = at
		}
		return false
	}
	for _, r := range e.st.Requests {
		if r.Status != org.RequestPending || r.Steps[r.Current].Approver != id {
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
	for _, msg := range e.st.Messages {
		if msg.To != id || !msg.Delivered || msg.Answered || e.st.Member(msg.From).NPC {
			continue
		}
		if !due(msg.SentAt, "npc/"+id+"/msg/"+msg.ID) {
			continue
		}
		reply := org.Action{Type: org.ActMessage, To: msg.From, ReplyTo: msg.ID,
			Text: "Sorry, I can't help with that. I can tell you about: " + strings.Join(sortedKeys(npc.Knows), ", ")}
		if len(npc.Knows) == 0 {
			reply.Text = "Sorry, I can't help with that."
		}
		text := strings.ToLower(msg.Text)
		for _, topic := range sortedKeys(npc.Knows) {
			if strings.Contains(text, strings.ToLower(topic)) {
				reply.Text, reply.Topic = npc.Knows[topic], topic
				break
			}
		}
		e.acts = append(e.acts, reply)
	}
	if len(npc.Serves) > 0 {
		e.npcWork(m, npc)
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
func (e *Engine) npcWork(m *org.Member, npc *worlds.NPC) {
	start := len(e.acts)
	for _, t := range e.st.Held(m.ID) {
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
	for _, q := range npc.Serves {
		if e.st.Queue(q).Down(e.now) {
			continue
		}
		if t := e.st.QueueHead(q, m.ID); t != nil {
			e.acts = append(e.acts, org.Action{Type: org.ActClaim, Task: t.ID}, org.Action{Type: org.ActWork, Task: t.ID})
			return
		}
	}
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// npcObjection is why an NPC approver refuses a request, or "".
func (e *Engine) npcObjection(r *org.Request) string {
	t := e.st.Task(r.Task)
	if t.Assignee != r.Requester {
		return fmt.Sprintf("%s does not hold task %s", r.Requester, t.ID)
	}
	if r.Amount != t.Spec.Purchase {
		return fmt.Sprintf("amount %d does not match the task's purchase of %d", r.Amount, t.Spec.Purchase)
	}
	if b := e.st.Budget(t.Team); b != nil && r.Amount > b.Remaining() {
		return fmt.Sprintf("team %s has %d left, less than %d", b.Team, b.Remaining(), r.Amount)
	}
	return ""
}
