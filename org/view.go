package org

import (
	"sort"

	"github.com/corpsim/corpsim/clock"
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

	Assigned  []TaskView `json:"assigned"`  // tasks you hold that are not done
	Available []TaskView `json:"available"` // open tasks you may take whose dependencies are done, most valuable first
	Upcoming  []TaskView `json:"upcoming"`  // open tasks you may take, still waiting on dependencies, nearest first
	// AvailableMore and UpcomingMore count the tasks left out of lists cut at MaxListed.
	AvailableMore int            `json:"available_more,omitempty"`
	UpcomingMore  int            `json:"upcoming_more,omitempty"`
	Approvals     []RequestView  `json:"approvals"` // requests waiting for your decision
	Requests      []RequestView  `json:"requests"`  // your own requests
	Inbox         []MessageView  `json:"inbox"`     // messages delivered since your last turn
	Budget        *BudgetView    `json:"budget,omitempty"`
	Projects      []ProjectView  `json:"projects"`
	Rejected      []RejectedView `json:"rejected,omitempty"` // your actions refused since your last turn began
}

// TaskView is a task as a member sees it.
type TaskView struct {
	ID         string         `json:"id"`
	Title      string         `json:"title"`
	Project    string         `json:"project"`
	Role       string         `json:"role"`
	Status     string         `json:"status"`
	Assignee   string         `json:"assignee,omitempty"`
	Effort     clock.Duration `json:"effort"`
	Spent      clock.Duration `json:"spent"`
	Value      float64        `json:"value"`
	Deps       []string       `json:"deps,omitempty"`
	Waiting    []string       `json:"waiting_on,omitempty"` // dependencies not yet done
	Deadline   clock.Time     `json:"deadline"`
	Purchase   int64          `json:"purchase,omitempty"`
	Approval   string         `json:"approval,omitempty"` // "needed", "pending", "approved" or "rejected"; empty when none is needed
	Request    string         `json:"request,omitempty"`
	WorkUntil  clock.Time     `json:"work_until,omitempty"`
	Dependents int            `json:"dependents"` // tasks that list this one as a dependency
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
}

// MessageView is a delivered message.
type MessageView struct {
	ID     string     `json:"id"`
	From   string     `json:"from"`
	Text   string     `json:"text"`
	SentAt clock.Time `json:"sent_at"`
}

// BudgetView is the member's team budget.
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

// MaxListed bounds the Available and Upcoming lists of an observation.
const MaxListed = 50

func (s *State) pendingCount(t *Task) int {
	n := 0
	for _, d := range t.deps {
		if d.Status != StatusDone {
			n++
		}
	}
	return n
}

// ApprovalStatus says where a task's purchase approval stands: "" when none
// is needed, else "needed", "pending", "approved" or "rejected".
func (s *State) ApprovalStatus(t *Task) string {
	if len(s.StepsFor(t)) == 0 {
		return ""
	}
	r := s.requests[t.Request]
	if r == nil {
		return "needed"
	}
	return r.Status
}

// StepsFor returns the approval steps task t's purchase needs (nil for none).
func (s *State) StepsFor(t *Task) []worlds.Step {
	if t.Spec.Purchase <= 0 || t.Spec.Chain == "" {
		return nil
	}
	c, ok := s.World.Chain(t.Spec.Chain)
	if !ok {
		return nil
	}
	return c.StepsFor(t.Spec.Purchase)
}

// Serves reports whether role serves queue.
func (s *State) Serves(role, queue string) bool {
	return s.serves[role+"/"+queue]
}

func (s *State) taskView(t *Task) TaskView {
	v := TaskView{
		ID: t.ID, Title: t.Spec.Title, Project: t.Project.ID, Role: t.Spec.Role, Status: t.Status,
		Assignee: t.Assignee, Effort: t.Spec.Effort, Spent: t.Spent, Value: t.Spec.Value,
		Deps: t.Spec.Deps, Waiting: s.PendingDeps(t), Deadline: t.Project.Deadline,
		Purchase: t.Spec.Purchase, Approval: s.ApprovalStatus(t), Request: t.Request, WorkUntil: t.WorkUntil,
	}
	v.Dependents = len(s.dependents[t.ID])
	return v
}

func (s *State) requestView(r *Request) RequestView {
	v := RequestView{ID: r.ID, Task: r.Task, Requester: r.Requester, Amount: r.Amount, Step: r.Current,
		Status: r.Status, Reason: r.Reason}
	if r.Current < len(r.Steps) {
		v.Role, v.Approver = r.Steps[r.Current].Role, r.Steps[r.Current].Approver
	}
	if t := s.tasks[r.Task]; t != nil {
		v.TaskAssignee, v.TaskPurchase = t.Assignee, t.Spec.Purchase
	}
	return v
}

// View is what member id sees now. Every slice is in a stable order.
func (s *State) View(id string) Observation {
	m := s.members[id]
	o := Observation{Member: id, Time: s.Now, Wall: s.World.Calendar.Wall(s.Now).Format("2006-01-02T15:04:05Z07:00"),
		Horizon: s.World.Horizon, Assigned: []TaskView{}, Available: []TaskView{}, Upcoming: []TaskView{},
		Approvals: []RequestView{}, Requests: []RequestView{}, Inbox: []MessageView{}, Projects: []ProjectView{}}
	if m == nil {
		return o
	}
	o.Role, o.Team, o.Turn = m.Role, m.Team, m.Turn+1
	o.Rejected = m.Rejected
	done := make(map[string]int, len(s.World.Projects))
	type ranked struct {
		t       *Task
		pending int
	}
	var avail []*Task
	var upcoming []ranked
	for _, t := range s.Tasks {
		switch {
		case t.Status == StatusDone:
			done[t.Project.ID]++
		case t.Assignee == id:
			o.Assigned = append(o.Assigned, s.taskView(t))
		case t.Status == StatusOpen && t.Spec.Role == m.Role && s.Serves(m.Role, t.Project.Queue):
			if s.DepsDone(t) {
				avail = append(avail, t)
			} else {
				upcoming = append(upcoming, ranked{t, s.pendingCount(t)})
			}
		}
	}
	// Long lists are cut to MaxListed, most valuable (and, upcoming, nearest) first; *More say how many were left out.
	sort.SliceStable(avail, func(i, j int) bool { return avail[i].Spec.Value > avail[j].Spec.Value })
	sort.SliceStable(upcoming, func(i, j int) bool {
		a, b := upcoming[i], upcoming[j]
		if a.pending != b.pending {
			return a.pending < b.pending
		}
		return a.t.Spec.Value > b.t.Spec.Value
	})
	for i, t := range avail {
		if i == MaxListed {
			o.AvailableMore = len(avail) - i
			break
		}
		o.Available = append(o.Available, s.taskView(t))
	}
	for i, r := range upcoming {
		if i == MaxListed {
			o.UpcomingMore = len(upcoming) - i
			break
		}
		o.Upcoming = append(o.Upcoming, s.taskView(r.t))
	}
	for _, r := range s.Requests {
		if r.Status == RequestPending && r.Steps[r.Current].Approver == id {
			o.Approvals = append(o.Approvals, s.requestView(r))
		}
		if r.Requester == id {
			o.Requests = append(o.Requests, s.requestView(r))
		}
	}
	for _, mid := range m.Inbox {
		msg := s.messages[mid]
		o.Inbox = append(o.Inbox, MessageView{ID: msg.ID, From: msg.From, Text: msg.Text, SentAt: msg.SentAt})
	}
	if b := s.budgets[m.Team]; b != nil {
		o.Budget = &BudgetView{Team: b.Team, Initial: b.Initial, Spent: b.Spent, Remaining: b.Remaining()}
	}
	for i := range s.World.Projects {
		p := &s.World.Projects[i]
		o.Projects = append(o.Projects, ProjectView{ID: p.ID, Title: p.Title, Deadline: p.Deadline, Tasks: len(p.Tasks), Done: done[p.ID]})
	}
	return o
}
