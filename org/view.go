package org

import (
	"cmp"
	"slices"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/worlds"
)

// Observation is what one member sees when asked to decide. It is the JSON an
// agent receives.
type Observation struct {
	Session string     `json:"session"`
	Member  string     `json:"member"`
	Role    string     `json:"role"`
	Team    string     `json:"team"`
	Turn    uint64     `json:"turn"` // echo it in the reply
	Time    clock.Time `json:"time"` // simulated milliseconds since the world's start
	Wall    string     `json:"wall"` // the same instant on the world's calendar (RFC 3339)
	Horizon clock.Time `json:"horizon"`

	Assigned  []TaskView `json:"assigned"`  // tasks you hold that are not done, oldest first
	Available []TaskView `json:"available"` // open tasks you may take whose dependencies are done, most valuable first, those no budget can pay (not tickets) last
	Upcoming  []TaskView `json:"upcoming"`  // open tasks you may take, still waiting on dependencies, nearest first
	// AssignedMore, AvailableMore and UpcomingMore count the tasks left out
	// of lists cut at the session's listed limit.
	AssignedMore  int            `json:"assigned_more,omitempty"`
	AvailableMore int            `json:"available_more,omitempty"`
	UpcomingMore  int            `json:"upcoming_more,omitempty"`
	Approvals     []RequestView  `json:"approvals"`            // requests waiting for your decision
	Requests      []RequestView  `json:"requests"`             // your own requests
	Inbox         []MessageView  `json:"inbox"`                // messages delivered since your last turn, oldest first, at most the session's inbox limit
	InboxMore     int            `json:"inbox_more,omitempty"` // messages left for your next turns (the inbox is paged, never cut)
	Awaiting      []MessageView  `json:"awaiting,omitempty"`   // messages you sent that have no reply yet (From is the recipient)
	Budget        *BudgetView    `json:"budget,omitempty"`
	Queues        []*QueueView   `json:"queues"` // the queues you serve
	OnLeave       bool           `json:"on_leave,omitempty"`
	Projects      []ProjectView  `json:"projects"`
	Rejected      []RejectedView `json:"rejected,omitempty"` // your actions refused since your last turn began
	Shift         *ShiftView     `json:"shift,omitempty"`    // your shift and who takes over (version 2 worlds with shifts or handover)
	// RequestsMore counts your requests left out of Requests: past the
	// listed limit, the oldest decided ones go first.
	RequestsMore int `json:"requests_more,omitempty"`
	// Cases are the cases of the steps listed above (format 2), then
	// the open cases you did a step of, at most the listed limit of those;
	// CasesMore counts the ones left out.
	Cases     []CaseView `json:"cases,omitempty"`
	CasesMore int        `json:"cases_more,omitempty"`
	// Ask are steps an NPC performs when asked that wait for you to ask
	// (you did the step before them): message the NPC with "task" set.
	Ask []TaskView `json:"ask,omitempty"`
	// Open are the case templates you may open with open_case.
	Open []OpenView `json:"open,omitempty"`
	// Systems are the world's business systems and what you may do in
	// them; Policy the world's policy text; Results what your reads (get,
	// search) of your last turn found (format 2, records.go).
	Systems []SystemView `json:"systems,omitempty"`
	Policy  string       `json:"policy,omitempty"`
	Results []ReadResult `json:"results,omitempty"`
	// News is what happened in the company that its world tells: the
	// notes of the interruptions that have happened, the latest first, at
	// most MaxNews of them.
	News []NewsView `json:"news,omitempty"`
}

// NewsView is an interruption that has happened, as its note tells it.
type NewsView struct {
	At   clock.Time `json:"at"`   // when it happened
	Kind string     `json:"kind"` // reprioritize, leave, outage, change or urgent
	Note string     `json:"note"`
}

// MaxNews is how many news an observation lists.
const MaxNews = 5

// CaseView is a case as a member sees it: its attributes, never its facts.
type CaseView struct {
	ID         string        `json:"id"`
	Template   string        `json:"template"`
	Title      string        `json:"title"`
	Priority   int           `json:"priority,omitempty"`
	Value      float64       `json:"value"`
	Opened     clock.Time    `json:"opened"`
	Deadline   clock.Time    `json:"deadline,omitempty"`
	Due        clock.Time    `json:"due,omitempty"` // its SLA
	Attributes payload.Attrs `json:"attributes"`
	Steps      []string      `json:"steps"`
	Done       []string      `json:"done,omitempty"` // its steps done so far
	// Requests are the pending approval requests of its steps.
	Requests []string `json:"requests,omitempty"`
	// Ask names the NPC holding each fact of the case (ask it in a message
	// naming the case's id and the fact); Told are the facts it told you;
	// Requester is who asked for the case (replies go to it); Document is
	// the case's document, shown while you hold one of its steps (kinds.go).
	// Ask is the same map in every view of the template's cases: read only.
	Ask       map[string]string `json:"ask,omitempty"`
	Told      payload.Attrs     `json:"told,omitempty"`
	Requester string            `json:"requester,omitempty"`
	Document  string            `json:"document,omitempty"`
}

// OpenView is a case template a member may open.
type OpenView struct {
	Template string                  `json:"template"`
	Left     int                     `json:"left,omitempty"` // cases it may still open; 0 for no quota
	Bounds   map[string]worlds.Bound `json:"bounds,omitempty"`
}

// TaskView is a task as a member sees it.
type TaskView struct {
	ID        string         `json:"id"`
	Kind      string         `json:"kind"` // task or ticket
	Title     string         `json:"title"`
	Project   string         `json:"project,omitempty"`
	Queue     string         `json:"queue"`
	Role      string         `json:"role"`
	Skill     string         `json:"skill,omitempty"`
	Priority  int            `json:"priority,omitempty"`
	Created   clock.Time     `json:"created"`
	NeedsInfo *InfoView      `json:"needs_info,omitempty"`
	Status    string         `json:"status"`
	Assignee  string         `json:"assignee,omitempty"`
	Effort    clock.Duration `json:"effort"`
	Spent     clock.Duration `json:"spent"`
	Value     float64        `json:"value"`
	Deps      []string       `json:"deps,omitempty"`
	Waiting   []string       `json:"waiting_on,omitempty"` // dependencies not yet done
	Deadline  clock.Time     `json:"deadline"`
	Purchase  int64          `json:"purchase,omitempty"`
	// Charges is the budget the purchase is paid from when it is not
	// yours (the observation's budget): a step of another team's case, a
	// project of another team. The within-budget rule and an NPC
	// approver read that budget.
	Charges    *BudgetView `json:"charges,omitempty"`
	Approval   string      `json:"approval,omitempty"` // "needed", "pending", "approved" or "rejected"; empty when none is needed
	Request    string      `json:"request,omitempty"`
	WorkUntil  clock.Time  `json:"work_until,omitempty"`
	Dependents int         `json:"dependents"` // tasks that list this one as a dependency
	// A case step's (format 2): its case, the template's step, the amount
	// its approval reads, and the NPC who performs it when asked.
	Case   string `json:"case,omitempty"`
	Step   string `json:"step,omitempty"`
	Amount int64  `json:"amount,omitempty"`
	NPC    string `json:"npc,omitempty"`
	// Outcome is what the step must leave behind on a record (format 2
	// systems; records.go).
	Outcome *OutcomeView `json:"outcome,omitempty"`
	// Meeting is the meeting the step must book (format 2; meetings.go).
	Meeting *MeetingView `json:"meeting,omitempty"`
}

// InfoView is information a task needs from a colleague before completion.
type InfoView struct {
	From  string `json:"from"`
	Topic string `json:"topic"`
	Known bool   `json:"known"` // the assignee has it (of an open task: you have it)
}

// QueueView is a queue as one of its servers sees it.
type QueueView struct {
	ID         string     `json:"id"`
	Order      string     `json:"order"`
	Open       int        `json:"open"`
	InProgress int        `json:"in_progress"`
	WIP        int        `json:"wip,omitempty"`
	DownUntil  clock.Time `json:"down_until,omitempty"`
}

// RequestView is an approval request as a member sees it.
type RequestView struct {
	ID        string `json:"id"`
	Task      string `json:"task"`
	Requester string `json:"requester"`
	Amount    int64  `json:"amount"`
	Step      int    `json:"step"`
	Role      string `json:"role"` // role of the step waiting
	Approver  string `json:"approver"`
	Status    string `json:"status"`
	Reason    string `json:"reason,omitempty"`
	// TaskAssignee and TaskPurchase let an approver check the request against the task.
	TaskAssignee string `json:"task_assignee"`
	TaskPurchase int64  `json:"task_purchase"`
	// TaskCharges is the budget the task's purchase is paid from when it
	// is not the viewer's (the observation's budget).
	TaskCharges *BudgetView `json:"task_charges,omitempty"`
	// TaskAmount is, for a case step, the amount the approval reads (a
	// case attribute, which need not be spending; format 2).
	TaskAmount int64 `json:"task_amount,omitempty"`
}

// MessageView is a delivered message.
type MessageView struct {
	ID     string     `json:"id"`
	From   string     `json:"from"`
	Text   string     `json:"text"`
	Topic  string     `json:"topic,omitempty"`
	SentAt clock.Time `json:"sent_at"`
}

// BudgetView is a team's budget: the member's (Observation.Budget), or the
// one a purchase is paid from (TaskView.Charges, RequestView.TaskCharges).
type BudgetView struct {
	Team      string `json:"team"`
	Initial   int64  `json:"initial"`
	Spent     int64  `json:"spent"`
	Remaining int64  `json:"remaining"`
}

// ProjectView is a project's progress.
type ProjectView struct {
	ID       string     `json:"id"`
	Title    string     `json:"title"`
	Deadline clock.Time `json:"deadline"`
	Done     int        `json:"done"`
	Tasks    int        `json:"tasks"`
}

// RejectedView tells a member why an action of its last turn was refused.
type RejectedView struct {
	Action Action `json:"action"`
	Kind   string `json:"kind"`
	Rule   string `json:"rule,omitempty"`
	Reason string `json:"reason"`
}

// limits returns the session's limits (defaults for a state that has not
// seen session.started).
func (s *State) limits() Limits { return s.Limits.WithDefaults() }

// waitingOn is PendingDeps for a view, which already shares the spec's
// list of dependencies (Deps): that same list, clipped, when none is done,
// and nothing when all are, with no list made. A view is built at every
// turn for every task it lists, and most upcoming tasks wait on all their
// dependencies.
func (s *State) waitingOn(t *Task) []string {
	switch n := s.pendingCount(t); {
	case n == 0:
		return nil
	case n == len(t.deps) && len(t.deps) == len(t.Spec.Deps):
		return slices.Clip(t.Spec.Deps) // t.deps[i] is Spec.Deps[i]'s task (link)
	}
	return s.PendingDeps(t)
}

func (s *State) pendingCount(t *Task) int {
	n := 0
	for _, d := range t.deps {
		if d.Status != StatusDone {
			n++
		}
	}
	return n
}

// ApprovalStatus says where a task's purchase approval stands for whoever
// holds it: "" when none is needed, else "needed", "pending", "approved" or
// "rejected". A request counts only for the member who made it (the rubric
// verifies a purchase against its completer's request), so a task handed
// over, or back to its queue, needs its next holder's own request.
func (s *State) ApprovalStatus(t *Task) string {
	if len(s.StepsFor(t)) == 0 {
		return ""
	}
	r := s.requests[t.Request]
	if r == nil || r.Requester != t.Assignee {
		return "needed"
	}
	return r.Status
}

// StepsFor returns the approval steps task t's purchase needs (nil for none).
func (s *State) StepsFor(t *Task) []worlds.Step {
	amount := t.Spec.ApprovalAmount()
	if amount <= 0 || t.Spec.Chain == "" {
		return nil
	}
	c, ok := s.World.Chain(t.Spec.Chain)
	if !ok {
		return nil
	}
	return c.StepsFor(amount)
}

// Serves reports whether role serves queue.
func (s *State) Serves(role, queue string) bool {
	i, ok := s.queueIx[queue]
	rs := s.roleServes[role]
	return ok && i < len(rs) && rs[i]
}

// openView is taskView of open task t as member m sees it: whether the
// information it needs is known is m's to say, since m would hold it.
func (s *State) openView(t *Task, m *Member) TaskView {
	v := s.taskView(t, m)
	if v.NeedsInfo != nil && t.Assignee == "" {
		v.NeedsInfo.Known = m.KnowsTopic(v.NeedsInfo.Topic)
	}
	return v
}

// taskView is task t as member m sees it.
func (s *State) taskView(t *Task, m *Member) TaskView {
	v := TaskView{
		ID: t.ID, Kind: t.Kind, Title: t.Spec.Title, Project: t.Project, Queue: t.Queue, Role: t.Spec.Role, Skill: t.Spec.Skill,
		Status: t.Status, Assignee: t.Assignee, Effort: t.Effort, Spent: t.Spent, Value: t.Value, Priority: t.Priority,
		Deps: t.Spec.Deps, Waiting: s.waitingOn(t), Created: t.Created, Deadline: t.Deadline,
		Purchase: t.Spec.Purchase, Approval: s.ApprovalStatus(t), Request: t.Request, WorkUntil: t.WorkUntil,
	}
	if t.Spec.Purchase > 0 {
		v.Charges = s.charges(t, m)
	}
	if in := t.Spec.Info; in != nil {
		v.NeedsInfo = &InfoView{From: in.From, Topic: in.Topic}
		if m := s.members[t.Assignee]; m != nil {
			v.NeedsInfo.Known = m.KnowsTopic(in.Topic)
		}
	}
	v.Dependents = int(t.dependents)
	if t.Case != "" {
		v.Case, v.Step, v.NPC = t.Case, t.Spec.Step, t.Spec.NPC
		v.Outcome = s.outcomeView(t)
		v.Meeting = s.meetingView(t)
		if t.Spec.Chain != "" {
			v.Amount = t.Spec.ApprovalAmount()
		}
	}
	return v
}

// CanTake reports whether member may take task t by role and skill.
func (s *State) CanTake(member string, t *Task) bool {
	m := s.members[member]
	return m != nil && s.canTake(m, t)
}

// canTake is CanTake of member m, its definition looked up once (defOf).
func (s *State) canTake(m *Member, t *Task) bool {
	if t.Spec.Role != m.Role || t.Spec.NPC != "" && t.Spec.NPC != m.ID {
		return false
	}
	if t.Spec.Skill == "" {
		return true
	}
	w, _ := s.defOf(m)
	return w != nil && w.HasSkill(t.Spec.Skill)
}

// QueueAhead returns the open ticket of t's queue that member must take
// before t by the queue's order (fifo: oldest first; priority: highest
// priority, then oldest), among the tickets member may take, or nil if t
// may be taken now. Project tasks are planned work and are not ordered.
func (s *State) QueueAhead(t *Task, member string) *Task {
	if t.Kind != KindTicket {
		return nil
	}
	x, m := s.queueOf(t), s.Member(member)
	if x.q == nil || m == nil {
		return nil // a queue the world does not define, or no such member
	}
	return s.queueAhead(x, t, m)
}

// QueueHead returns the open ticket of queue that member must take next by
// the queue's order, or nil.
func (s *State) QueueHead(queue, member string) *Task {
	qi, ok := s.queueIx[queue]
	m := s.members[member]
	if !ok || m == nil {
		return nil
	}
	return s.queueHead(qi, m)
}

// QueueNum is queue id's number, its place in the world's queues: the
// same in every state of the world, for QueueAt and QueueHeadOf; false for
// no such queue.
func (s *State) QueueNum(id string) (int, bool) {
	qi, ok := s.queueIx[id]
	return qi, ok
}

// QueueAt is the queue of number qi (QueueNum).
func (s *State) QueueAt(qi int) *Queue { return s.qs[qi].q }

// QueueHeadOf is QueueHead of the queue of number qi (QueueNum) for member
// m, with no lookup by name.
func (s *State) QueueHeadOf(qi int, m *Member) *Task { return s.queueHead(qi, m) }

// InProgress counts a queue's items that are claimed and not done.
func (s *State) InProgress(queue string) int {
	if i, ok := s.queueIx[queue]; ok {
		return s.qs[i].claimed
	}
	return 0
}

// charges is the budget t's purchase is paid from as member m sees it
// (BudgetView), or nil when that is m's own team's, or when t's team has
// no budget (no world loads such a task: every task has a team, and every
// team a budget, if only of 0).
func (s *State) charges(t *Task, m *Member) *BudgetView {
	b := s.budgets[t.Team]
	if b == nil || m != nil && b == s.budgetOf(m) {
		return nil
	}
	return b.view()
}

// view is b as an observation shows it.
func (b *Budget) view() *BudgetView {
	return &BudgetView{Team: b.Team, Initial: b.Initial, Spent: b.Spent, Remaining: b.Remaining()}
}

// requestView is request r as member m sees it.
func (s *State) requestView(r *Request, m *Member) RequestView {
	v := RequestView{ID: r.ID, Task: r.Task, Requester: r.Requester, Amount: r.Amount, Step: r.Current,
		Status: r.Status, Reason: r.Reason}
	if r.Current < len(r.Steps) {
		v.Role, v.Approver = r.Steps[r.Current].Role, r.Steps[r.Current].Approver
	}
	if t := s.tasks[r.Task]; t != nil {
		v.TaskAssignee, v.TaskPurchase = t.Assignee, t.Spec.Purchase
		if t.Spec.Purchase > 0 {
			v.TaskCharges = s.charges(t, m)
		}
		if t.Case != "" {
			v.TaskAmount = t.Spec.ApprovalAmount()
		}
	}
	return v
}

// Omit names parts of an Observation that its reader does without, for
// ViewOmitting. An agent that never reads them (the greedy baseline, played
// in process) spares the engine building them; an observation sent over the
// bus is always whole.
type Omit uint8

// The parts ViewOmitting may leave out. An omitted list is nil, and its
// count (UpcomingMore) 0; what the rest of the observation shows is the
// same as View's (the cases of upcoming tasks are listed in Cases all the
// same).
const (
	OmitUpcoming Omit = 1 << iota // Upcoming, UpcomingMore
	OmitProjects                  // Projects
	OmitQueues                    // Queues
	OmitRequests                  // Requests (the member's own; not Approvals)
	OmitQueuesUp                  // of Queues, those that are up: it lists the ones down (nil: none)
)

// View is what member id sees now. Every slice is in a stable order.
func (s *State) View(id string) Observation { return s.ViewOmitting(id, 0) }

// ViewOmitting is View without the parts omit names.
func (s *State) ViewOmitting(id string, omit Omit) Observation { return s.ViewAt(id, omit, s.Now) }

// ViewAt is ViewOmitting at instant now: the state as its last event left
// it, seen at now (no earlier than Now, the time of that event). A member
// woken by a timer that records nothing (the end of its wait, of its last
// turn's cost, the start of its shift) is asked later than the last event
// and sees the time of its turn, its shift as it is then and the queues
// that are up then.
func (s *State) ViewAt(id string, omit Omit, now clock.Time) Observation {
	now = max(now, s.Now)
	m := s.members[id]
	o := Observation{Member: id, Time: now, Wall: s.World.Calendar.Wall(now).Format("2006-01-02T15:04:05Z07:00"),
		Horizon: s.World.Horizon, Assigned: []TaskView{}, Available: []TaskView{}, Upcoming: []TaskView{},
		Approvals: []RequestView{}, Requests: []RequestView{}, Inbox: []MessageView{}, Projects: []ProjectView{}}
	if omit&OmitUpcoming != 0 {
		o.Upcoming = nil
	}
	if omit&OmitRequests != 0 {
		o.Requests = nil
	}
	if omit&OmitProjects != 0 {
		o.Projects = nil
	}
	if m == nil {
		return o
	}
	o.Role, o.Team, o.Turn, o.OnLeave = m.Role, m.Team, m.Turn+1, m.OnLeave
	o.Rejected = m.Rejected
	o.Shift = s.shiftView(m, now)
	o.News = s.news()
	// The queues it serves: by its role, or as an NPC's.
	served := s.roleServes[m.Role] // by index in World.Queues; nil: none
	var npcQueues, skills []string
	if w, _ := s.defOf(m); w != nil {
		skills = w.Skills
		if w.NPC != nil {
			npcQueues = w.NPC.Serves
		}
	}
	var shows []bool // nil: just those its role serves
	if len(npcQueues) > 0 {
		shows = make([]bool, len(s.World.Queues))
		for i, q := range s.World.Queues {
			shows[i] = served != nil && served[i] || slices.Contains(npcQueues, q.ID)
		}
	}
	if omit&OmitQueues == 0 {
		// Those it serves; with OmitQueuesUp, those of them that are down.
		listed := func(i int) bool {
			return (shows != nil && shows[i] || shows == nil && served != nil && served[i]) &&
				(omit&OmitQueuesUp == 0 || s.Queues[i].Down(now))
		}
		n := 0
		for i := range s.World.Queues {
			if listed(i) {
				n++
			}
		}
		if n > 0 || omit&OmitQueuesUp == 0 {
			qvs := make([]QueueView, 0, n) // one allocation for all of them
			o.Queues = make([]*QueueView, 0, n)
			for i, q := range s.World.Queues {
				if listed(i) {
					qvs = append(qvs, QueueView{ID: q.ID, Order: q.Order, WIP: q.WIP, DownUntil: s.Queues[i].DownUntil,
						Open: s.qs[i].shown - s.qs[i].claimed, InProgress: s.qs[i].claimed})
					o.Queues = append(o.Queues, &qvs[len(qvs)-1])
				}
			}
		}
	}
	// What it holds, oldest first (Member.hold keeps them in creation
	// order), cut at the listed limit like the lists below: a member that
	// holds thousands is shown what it can use, and its view costs that.
	listed := s.limits().Listed
	if len(m.held) > 0 {
		o.Assigned = make([]TaskView, 0, min(len(m.held), listed))
	}
	for _, t := range m.held {
		switch {
		case t.Hidden:
		case len(o.Assigned) < listed:
			o.Assigned = append(o.Assigned, s.taskView(t, m))
		default:
			o.AssignedMore++
		}
	}
	// What the member may take comes from the offer index (see
	// view_index.go): per queue it serves, the open project tasks of its
	// role, by skill, already in the order they are listed, and the queue's
	// head ticket. Only what is listed is looked at; the rest is counted.
	ro := s.roleOffers[m.Role]
	// The upcoming lists are merged only to show them, or the cases of
	// those it would show.
	upcoming := omit&OmitUpcoming == 0 || len(s.World.Cases) > 0
	dearLists, waitingLists := s.dearLists[:0], s.waitingBuf[:0]
	offered := s.offeredBuf[:0] // the sets whose ready tasks it may take now
	defer func() {
		// Kept for the next view, without the lists they pointed to.
		clear(dearLists[:cap(dearLists)])
		clear(waitingLists[:cap(waitingLists)])
		clear(offered[:cap(offered)])
		s.dearLists, s.waitingBuf, s.offeredBuf = dearLists[:0], waitingLists[:0], offered[:0]
	}()
	var tickets []*Task
	ready, waiting := 0, 0
	// An outage or the WIP limit blocks a queue (queueBlocked): its ready
	// work is counted in Queues, not offered.
	if ro != nil && served != nil {
		// The sets that hold a task, in no order: the lists are merged
		// by a total order below, and only counted otherwise.
		for _, of := range ro.live {
			if !served[of.qi] || of.skill != "" && !slices.Contains(skills, of.skill) {
				continue
			}
			if len(of.waiting) > 0 && upcoming {
				waitingLists = append(waitingLists, of.waiting)
				waiting += len(of.waiting)
			}
			if of.readyN() > 0 && !s.queueBlocked(of.qi, now) {
				offered = append(offered, of)
				ready += of.readyN()
			}
		}
	}
	if s.openTicketN > 0 {
		for i := range served {
			if served[i] && !s.queueBlocked(i, now) {
				// Only the ticket the queue's order lets this member take now.
				if t := s.queueHead(i, m); t != nil {
					tickets = append(tickets, t)
				}
			}
		}
	}
	// Long lists are cut to the listed limit, most valuable (and, upcoming, nearest)
	// first; *More say how many were left out. The tickets at the heads of
	// the queues (one per queue) are never cut: a queue must not starve
	// because its tickets are worth less than the project work. Ties go to
	// the task earlier in Tasks. Tasks whose purchase the budget they
	// charge can no longer pay (dear) come after the others: a backlog of
	// them must not hide the work that can be done.
	slices.SortFunc(tickets, valueCmp)
	var avail []*Task
	if total := ready + len(tickets); total > listed {
		o.AvailableMore = total - listed
		avail = append(avail, tickets[:min(len(tickets), listed)]...)
		avail = append(avail, s.firstPayable(offered, listed-len(avail))...)
	} else {
		avail = firstTasks([][]*Task{s.firstPayable(offered, listed), tickets}, valueCmp, listed)
	}
	// Then those no budget can pay, which firstPayable moved aside.
	for _, of := range offered {
		if len(of.dear) > 0 {
			dearLists = append(dearLists, of.dear)
		}
	}
	if len(dearLists) > 0 && len(avail) < listed {
		avail = append(slices.Clip(avail), firstTasks(dearLists, valueCmp, listed-len(avail))...)
	}
	o.Available = make([]TaskView, 0, len(avail))
	for _, t := range avail {
		if t.Case != "" {
			if r, _ := s.Separated(t, id, false); r != nil {
				continue // a separation rule bars the member from it
			}
		}
		o.Available = append(o.Available, s.openView(t, m))
	}
	var upCases []string // omitted upcoming tasks' cases, which Cases lists all the same
	if omit&OmitUpcoming == 0 {
		if waiting > listed {
			o.UpcomingMore = waiting - listed
		}
		up := firstTasks(waitingLists, waitingCmp, listed)
		o.Upcoming = make([]TaskView, 0, len(up))
		for _, t := range up {
			o.Upcoming = append(o.Upcoming, s.openView(t, m))
		}
	} else if len(s.World.Cases) > 0 {
		for _, t := range firstTasks(waitingLists, waitingCmp, listed) {
			if t.Case != "" {
				upCases = append(upCases, t.Case)
			}
		}
	}
	s.catchUp()
	s.listApprovals(&o, m)
	if omit&OmitRequests == 0 {
		s.listRequests(&o, m)
	}
	s.listAwaiting(&o, id)
	inbox := m.Inbox
	if lim := s.limits().Inbox; len(inbox) > lim {
		inbox, o.InboxMore = inbox[:lim], len(inbox)-lim
	}
	for _, mid := range inbox {
		msg := s.messages[mid]
		o.Inbox = append(o.Inbox, MessageView{ID: msg.ID, From: msg.From, Text: msg.Text, Topic: msg.Topic, SentAt: msg.SentAt})
	}
	if b := s.budgetOf(m); b != nil {
		o.Budget = b.view()
	}
	if omit&OmitProjects == 0 {
		o.Projects = make([]ProjectView, 0, len(s.World.Projects))
		for i := range s.World.Projects {
			p := &s.World.Projects[i]
			o.Projects = append(o.Projects, ProjectView{ID: p.ID, Title: p.Title, Deadline: p.Deadline, Tasks: len(p.Tasks), Done: s.doneIn[p.ID]})
		}
	}
	s.caseViews(&o, m, upCases)
	s.recordsView(&o, m)
	return o
}

// queueBlocked reports whether the queue numbered i in World.Queues offers
// no work at now: it is down, or at its WIP limit.
func (s *State) queueBlocked(i int, now clock.Time) bool {
	q := &s.World.Queues[i]
	return s.Queues[i].Down(now) || q.WIP > 0 && s.InProgress(q.ID) >= q.WIP
}

// byOrd orders tasks by their place in State.Tasks.
func byOrd(a, b *Task) int { return a.ord - b.ord }

// caseViews fills in the cases of the steps an observation lists, the NPC
// steps that wait for the member to ask, and the templates it may open.
//
// upCases are the cases of the upcoming tasks the observation omits, in
// their order.
func (s *State) caseViews(o *Observation, m *Member, upCases []string) {
	if len(s.World.Cases) == 0 {
		return
	}
	s.caseMark++ // a case listed in this view has it
	doer := s.doerCases(m.ID)
	listed := s.limits().Listed
	o.Cases = slices.Grow(o.Cases, min(len(doer), listed)+len(upCases)+8)
	add := func(id string) {
		c := s.cases[id]
		if c == nil || c.listed == s.caseMark {
			return
		}
		c.listed = s.caseMark
		v := CaseView{ID: c.ID, Template: c.Template, Title: c.Title, Priority: c.Priority, Value: c.Value, Opened: c.Opened,
			Deadline: c.Deadline, Due: c.Due, Attributes: c.Attributes, Steps: c.Steps}
		for _, t := range s.stepsOf(c) {
			if t.Status == StatusDone {
				v.Done = append(v.Done, t.ID)
			}
			if r := s.requests[t.Request]; r != nil && r.Status == RequestPending {
				v.Requests = append(v.Requests, r.ID)
			}
		}
		s.factsView(&v, c, m)
		o.Cases = append(o.Cases, v)
	}
	for _, list := range [][]TaskView{o.Assigned, o.Available, o.Upcoming} {
		for _, t := range list {
			add(t.Case)
		}
	}
	for _, id := range upCases {
		add(id)
	}
	// And the open cases it has done a step of: their approvals and
	// progress concern it.
	// At most the listed limit of them, oldest first, as tasks are: a
	// member with a backlog of thousands is shown what it can use (and
	// its view costs that), the rest counted.
	shown := 0
	for _, c := range doer {
		if c.listed != s.caseMark && shown < listed {
			add(c.ID)
			shown++
		}
	}
	// NPC steps whose dependencies are done, not asked for yet, that the
	// member is the one to ask for: it did a step they depend on, or asked
	// the NPC who did one; when no member did or asked (no dependency), it
	// serves the queue.
	for _, c := range s.readyCases() {
		for _, t := range c.npcSteps {
			if t.Status == StatusDone || !s.DepsDone(t) || s.asked(t) {
				continue
			}
			mine, byMember := false, false
			for _, d := range t.deps {
				who := d.DoneBy
				if dm := s.members[who]; dm != nil && dm.NPC {
					who = s.askedBy(d)
				}
				byMember = byMember || who != ""
				mine = mine || who == m.ID
			}
			if !byMember {
				mine = s.servesTask(m.Role, t)
			}
			if mine {
				o.Ask = append(o.Ask, s.taskView(t, m))
				add(c.ID)
			}
		}
	}
	for _, c := range doer { // those left out (one a step below listed is not)
		if c.listed != s.caseMark {
			o.CasesMore++
		}
	}
	for i := range s.World.Cases {
		tpl := &s.World.Cases[i]
		if tpl.Open == nil || !slices.Contains(tpl.Open.Roles, m.Role) {
			continue
		}
		v := OpenView{Template: tpl.ID, Bounds: tpl.Open.Bounds}
		if tpl.Open.Quota > 0 {
			if v.Left = tpl.Open.Quota - s.OpenedBy(m.ID, tpl.ID); v.Left <= 0 {
				continue
			}
		}
		o.Open = append(o.Open, v)
	}
}

// news lists the notes of the world's interruptions that have happened,
// the latest first (of two at one instant, the later in the world's
// list), at most MaxNews of them.
func (s *State) news() []NewsView {
	var out []NewsView
	for i := len(s.Fired) - 1; i >= 0; i-- {
		if in := &s.World.Interruptions[i]; s.Fired[i] && in.Note != "" {
			out = append(out, NewsView{At: in.At, Kind: in.Kind, Note: in.Note})
		}
	}
	slices.SortStableFunc(out, func(a, b NewsView) int { return cmp.Compare(b.At, a.At) })
	return out[:min(len(out), MaxNews):min(len(out), MaxNews)]
}
