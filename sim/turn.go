package sim

import (
	"fmt"
	"sort"
	"strings"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
)

// MaxMessageBytes bounds a message's text.
const MaxMessageBytes = 4000

// takeTurn records a member's answer and applies its actions in order.
func (e *Engine) takeTurn(a Answer) {
	m := e.st.Member(a.Member)
	if a.TimedOut {
		e.emit(org.EvTurnTimeout, m.ID, m.WakeCause, org.TurnTimeout{Turn: m.Turn + 1, Seen: e.seen})
		return
	}
	cal := &e.cfg.World.Calendar
	cursor := cal.AddWork(e.now, MinTurnCost)
	actions := a.Actions
	if actions == nil {
		actions = []org.Action{}
	}
	turnSeq := e.emit(org.EvTurn, m.ID, m.WakeCause, org.Turn{Turn: m.Turn + 1, Seen: e.seen, Actions: actions, BusyUntil: cursor})
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
		e.emit(org.EvMemberWaiting, m.ID, turnSeq, org.MemberWaiting{})
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
		if !e.st.Serves(m.Role, t.Project.Queue) && t.Spec.Role == m.Role {
			return state("queue %q is not served by role %q", t.Project.Queue, m.Role)
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
		if t.Spent >= t.Spec.Effort {
			return state("task %q has no effort left (%s of %s spent); complete it", t.ID, t.Spent, t.Spec.Effort)
		}
	case org.ActComplete:
		t, rej := task()
		if rej != nil {
			return rej
		}
		if rej := mine(t); rej != nil {
			return rej
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
		case len(a.Text) > MaxMessageBytes:
			return bad("message is %d bytes; the limit is %d", len(a.Text), MaxMessageBytes)
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
		cursor = cal.AddWork(cursor, ClaimCost)
		e.emit(org.EvTaskClaimed, m.ID, cause, org.TaskClaimed{Task: a.Task, BusyUntil: cursor})
	case org.ActWork:
		t := e.st.Task(a.Task)
		d := min(DefaultWorkSpan, t.Spec.Effort-t.Spent)
		if a.For != "" {
			d, _ = clock.ParseDuration(a.For, cal.DayLength())
			d = min(d, t.Spec.Effort-t.Spent)
		}
		until := cal.AddWork(cursor, d)
		e.emit(org.EvWorkStarted, m.ID, cause, org.WorkStarted{Task: a.Task, Work: d, Until: until})
		return until, true
	case org.ActComplete:
		cursor = cal.AddWork(cursor, CompleteCost)
		e.emit(org.EvTaskCompleted, m.ID, cause, org.TaskCompleted{Task: a.Task, BusyUntil: cursor})
	case org.ActRequestApproval:
		t := e.st.Task(a.Task)
		var steps []org.RequestStep
		for _, s := range e.st.StepsFor(t) {
			steps = append(steps, org.RequestStep{Role: s.Role, Approver: e.approverFor(s.Role, m.ID)})
		}
		cursor = cal.AddWork(cursor, RequestCost)
		id := fmt.Sprintf("r%d", len(e.st.Requests)+1)
		e.emit(org.EvApprovalRequested, m.ID, cause, org.ApprovalRequested{Request: id, Task: t.ID, Chain: t.Spec.Chain,
			Amount: t.Spec.Purchase, Steps: steps, BusyUntil: cursor})
	case org.ActApprove, org.ActReject:
		r := e.st.Request(a.Request)
		cursor = cal.AddWork(cursor, DecideCost)
		typ := org.EvApprovalGranted
		if a.Type == org.ActReject {
			typ = org.EvApprovalRejected
		}
		e.emit(typ, m.ID, cause, org.ApprovalDecided{Request: r.ID, Step: r.Current, Reason: a.Reason, BusyUntil: cursor})
	case org.ActMessage:
		cursor = cal.AddWork(cursor, MessageCost)
		id := fmt.Sprintf("m%d", len(e.st.Messages)+1)
		e.emit(org.EvMessageSent, m.ID, cause, org.MessageSent{Message: id, To: a.To, Text: a.Text,
			DeliverAt: cal.AddWork(cursor, MessageLatency), BusyUntil: cursor})
	case org.ActWait:
		var until clock.Time
		switch {
		case a.Until != 0:
			until = clock.Time(a.Until)
		case a.For != "":
			d, _ := clock.ParseDuration(a.For, cal.DayLength())
			until = cal.AddWork(cursor, d)
		}
		e.emit(org.EvMemberWaiting, m.ID, cause, org.MemberWaiting{Until: until})
		return cursor, true
	}
	return cursor, false
}

// approverFor picks who approves a step of role for requester: the first
// other member holding the role, by ID.
func (e *Engine) approverFor(role, requester string) string {
	for _, m := range e.st.Members {
		if m.Role == role && m.ID != requester {
			return m.ID
		}
	}
	return ""
}

// npcDecide is an NPC colleague's turn: it decides each request waiting for
// it once its reply latency (drawn per request and step) has passed, and
// otherwise waits until the next one is due.
func (e *Engine) npcDecide(id string) Answer {
	spec, _ := e.cfg.World.Member(id)
	cal := &e.cfg.World.Calendar
	var acts []org.Action
	var next clock.Time
	for _, r := range e.st.Requests {
		if r.Status != org.RequestPending || r.Steps[r.Current].Approver != id {
			continue
		}
		arrived := r.CreatedAt
		if r.Current > 0 {
			arrived = r.Steps[r.Current-1].DecidedAt
		}
		lat := uniform(e.cfg.Seed, fmt.Sprintf("npc/%s/%s/%d", id, r.ID, r.Current), int64(spec.NPC.ReplyMin), int64(spec.NPC.ReplyMax))
		at := cal.AddWork(arrived, clock.Duration(lat))
		if at > e.now {
			if next == 0 || at < next {
				next = at
			}
			continue
		}
		if why := e.npcObjection(r); why != "" {
			acts = append(acts, org.Action{Type: org.ActReject, Request: r.ID, Reason: why})
		} else {
			acts = append(acts, org.Action{Type: org.ActApprove, Request: r.ID})
		}
	}
	sort.SliceStable(acts, func(i, j int) bool { return acts[i].Request < acts[j].Request })
	if next != 0 {
		acts = append(acts, org.Action{Type: org.ActWait, Until: int64(next)})
	} else {
		acts = append(acts, org.Action{Type: org.ActWait})
	}
	return Answer{Member: id, Turn: e.st.Member(id).Turn + 1, Actions: acts}
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
	if b := e.st.Budget(t.Project.Team); b != nil && r.Amount > b.Remaining() {
		return fmt.Sprintf("team %s has %d left, less than %d", b.Team, b.Remaining(), r.Amount)
	}
	return ""
}
