package org

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/worlds"
)

// ErrBadEvent is wrapped by Apply when an event cannot be applied to the state.
var ErrBadEvent = errors.New("org: event does not apply")

// Task statuses.
const (
	StatusOpen       = "open"        // nobody holds it
	StatusClaimed    = "claimed"     // assigned, not being worked right now
	StatusInProgress = "in_progress" // work is under way until WorkUntil
	StatusDone       = "done"
)

// Request statuses.
const (
	RequestPending  = "pending"
	RequestApproved = "approved"
	RequestRejected = "rejected"
)

// State is the company at one instant. Build it with New; change it only with Apply.
type State struct {
	World   *worlds.World
	Now     clock.Time
	LastSeq uint64
	Ended   bool
	// EndReason is why the session ended: "complete", "horizon" or "quiescent".
	EndReason string

	Members  []*Member // sorted by ID
	Tasks    []*Task   // in world order
	Requests []*Request
	Messages []*Message
	Budgets  []*Budget // in world order

	Turns      int // turns taken by all members
	Timeouts   int
	Rejections int
	Violations int // rejections of kind "policy"

	members  map[string]*Member
	tasks    map[string]*Task
	requests map[string]*Request
	messages map[string]*Message
	budgets  map[string]*Budget
	// dependents lists, for each task, the tasks that depend on it (static).
	dependents map[string][]*Task
	serves     map[string]bool // role + "/" + queue
	woken      []string        // members whose Pending or BusyUntil changed since TakeWoken
}

// Member is a seat's state.
type Member struct {
	ID        string     `json:"id"`
	Role      string     `json:"role"`
	Team      string     `json:"team"`
	NPC       bool       `json:"npc,omitempty"`
	BusyUntil clock.Time `json:"busy_until"`
	Pending   bool       `json:"pending"`    // wants a turn once BusyUntil has passed
	WakeCause uint64     `json:"wake_cause"` // seq of the event that last woke it
	Seen      uint64     `json:"seen"`       // last seq of the state it observed at its latest turn
	Turn      uint64     `json:"turn"`       // turns taken
	Inbox     []string   `json:"inbox,omitempty"`
	// Rejected are the member's actions refused since its latest turn began;
	// its next observation shows them.
	Rejected []RejectedView `json:"rejected,omitempty"`
}

// Task is a task's state; Spec is its definition in the world.
type Task struct {
	Spec      *worlds.Task    `json:"-"`
	Project   *worlds.Project `json:"-"`
	ID        string          `json:"id"`
	Status    string          `json:"status"`
	Assignee  string          `json:"assignee,omitempty"`
	Spent     clock.Duration  `json:"spent"`
	WorkUntil clock.Time      `json:"work_until,omitempty"`
	Stint     clock.Duration  `json:"stint,omitempty"`   // work of the stint under way
	Request   string          `json:"request,omitempty"` // the latest approval request for its purchase
	DoneAt    clock.Time      `json:"done_at,omitempty"`
	DoneBy    string          `json:"done_by,omitempty"`
	DoneSeq   uint64          `json:"done_seq,omitempty"`

	deps []*Task // Spec.Deps resolved
}

// Request is an approval request.
type Request struct {
	ID        string        `json:"id"`
	Task      string        `json:"task"`
	Requester string        `json:"requester"`
	Chain     string        `json:"chain"`
	Amount    int64         `json:"amount"`
	Steps     []RequestStep `json:"steps"`
	Current   int           `json:"current"` // index of the step waiting for a decision
	Status    string        `json:"status"`
	Reason    string        `json:"reason,omitempty"`
	CreatedAt clock.Time    `json:"created_at"`
	DecidedAt clock.Time    `json:"decided_at,omitempty"`
}

// RequestStep is one approval a request needs.
type RequestStep struct {
	Role      string     `json:"role"`
	Approver  string     `json:"approver"`
	Status    string     `json:"status"`
	DecidedAt clock.Time `json:"decided_at,omitempty"`
}

// Message is a message between members.
type Message struct {
	ID        string     `json:"id"`
	From      string     `json:"from"`
	To        string     `json:"to"`
	Text      string     `json:"text"`
	SentAt    clock.Time `json:"sent_at"`
	Delivered bool       `json:"delivered"`
}

// Budget is a team's money.
type Budget struct {
	Team    string `json:"team"`
	Initial int64  `json:"initial"`
	Spent   int64  `json:"spent"`
}

// Remaining is the money left.
func (b *Budget) Remaining() int64 { return b.Initial - b.Spent }

// New builds the state of a world at time 0: every agent seat wants a turn.
func New(w *worlds.World) *State {
	s := &State{
		World:      w,
		members:    map[string]*Member{},
		tasks:      map[string]*Task{},
		requests:   map[string]*Request{},
		messages:   map[string]*Message{},
		budgets:    map[string]*Budget{},
		dependents: map[string][]*Task{},
	}
	for i := range w.Members {
		m := &w.Members[i]
		sm := &Member{ID: m.ID, Role: m.Role, Team: m.Team, NPC: m.NPC != nil}
		s.Members = append(s.Members, sm)
		s.members[m.ID] = sm
	}
	for pi := range w.Projects {
		p := &w.Projects[pi]
		for ti := range p.Tasks {
			t := &Task{Spec: &p.Tasks[ti], Project: p, ID: p.Tasks[ti].ID, Status: StatusOpen}
			s.Tasks = append(s.Tasks, t)
			s.tasks[t.ID] = t
		}
	}
	s.link()
	s.serves = map[string]bool{}
	for _, q := range w.Queues {
		for _, r := range q.ServedBy {
			s.serves[r+"/"+q.ID] = true
		}
	}
	for _, t := range w.Teams {
		b := &Budget{Team: t.ID, Initial: t.Budget}
		s.Budgets = append(s.Budgets, b)
		s.budgets[t.ID] = b
	}
	return s
}

// link resolves the tasks' dependencies to pointers, both ways.
func (s *State) link() {
	clear(s.dependents)
	for _, t := range s.Tasks {
		t.deps = t.deps[:0]
		for _, d := range t.Spec.Deps {
			dt := s.tasks[d]
			t.deps = append(t.deps, dt)
			s.dependents[d] = append(s.dependents[d], t)
		}
	}
}

// Member returns a member by ID.
func (s *State) Member(id string) *Member { return s.members[id] }

// Task returns a task by ID.
func (s *State) Task(id string) *Task { return s.tasks[id] }

// Request returns an approval request by ID.
func (s *State) Request(id string) *Request { return s.requests[id] }

// Message returns a message by ID.
func (s *State) Message(id string) *Message { return s.messages[id] }

// Budget returns a team's budget.
func (s *State) Budget(team string) *Budget { return s.budgets[team] }

// DepsDone reports whether every dependency of t is done.
func (s *State) DepsDone(t *Task) bool {
	for _, d := range t.deps {
		if d.Status != StatusDone {
			return false
		}
	}
	return true
}

// PendingDeps lists t's dependencies that are not done, in declaration order.
func (s *State) PendingDeps(t *Task) []string {
	var out []string
	for _, d := range t.deps {
		if d.Status != StatusDone {
			out = append(out, d.ID)
		}
	}
	return out
}

// AllDone reports whether every task is done.
func (s *State) AllDone() bool {
	for _, t := range s.Tasks {
		if t.Status != StatusDone {
			return false
		}
	}
	return true
}

// TakeWoken returns, and forgets, the members that were woken or made busy
// since the last call (Pending set, BusyUntil moved), in the order it
// happened, with repeats. Clearing Pending is not reported: a member that
// stops wanting a turn needs no timer. The engine uses it to find who is
// due; it is not part of the hash.
func (s *State) TakeWoken() []string {
	w := s.woken
	s.woken = s.woken[:0:0]
	return w
}

func (s *State) wake(id string, cause uint64) {
	m := s.members[id]
	if m == nil {
		return
	}
	m.Pending = true
	m.WakeCause = cause
	s.woken = append(s.woken, id)
}

func (s *State) busy(m *Member, until clock.Time) {
	if until > m.BusyUntil {
		m.BusyUntil = until
	}
	m.Pending = true
	s.woken = append(s.woken, m.ID)
}

func badEvent(ev *events.Event, format string, args ...any) error {
	return fmt.Errorf("%w: seq %d (%s): %s", ErrBadEvent, ev.Seq, ev.Type, fmt.Sprintf(format, args...))
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
	if ev.Seq == 1 && ev.Type != EvSessionStarted {
		return badEvent(&ev, "the first event must be session.started")
	}
	if err := s.apply(&ev); err != nil {
		return err
	}
	s.Now = clock.Time(ev.Time)
	s.LastSeq = ev.Seq
	return nil
}

func decode[T any](ev *events.Event) (T, error) {
	var v T
	if err := json.Unmarshal(ev.Payload, &v); err != nil {
		return v, badEvent(ev, "payload: %v", err)
	}
	return v, nil
}

func (s *State) actor(ev *events.Event) (*Member, error) {
	m := s.members[ev.Actor]
	if m == nil {
		return nil, badEvent(ev, "unknown actor %q", ev.Actor)
	}
	return m, nil
}

// apply validates first and mutates last, so a failed event changes nothing.
func (s *State) apply(ev *events.Event) error {
	switch ev.Type {
	case EvSessionStarted:
		if ev.Seq != 1 {
			return badEvent(ev, "session.started must be the first event")
		}
		for _, m := range s.Members {
			if !m.NPC {
				s.wake(m.ID, ev.Seq)
			}
		}
	case EvSessionEnded:
		p, err := decode[SessionEnded](ev)
		if err != nil {
			return err
		}
		s.Ended, s.EndReason = true, p.Reason
	case EvTurn:
		p, err := decode[Turn](ev)
		if err != nil {
			return err
		}
		m, err := s.actor(ev)
		if err != nil {
			return err
		}
		m.Turn++
		m.Seen = p.Seen
		m.Inbox = nil // a turn reads the inbox
		m.Rejected = nil
		s.Turns++
		s.busy(m, p.BusyUntil)
	case EvTurnTimeout:
		p, err := decode[TurnTimeout](ev)
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
		s.Timeouts++
	case EvActionRejected:
		p, err := decode[ActionRejected](ev)
		if err != nil {
			return err
		}
		m, err := s.actor(ev)
		if err != nil {
			return err
		}
		m.Rejected = append(m.Rejected, RejectedView{Action: p.Action, Kind: p.Kind, Rule: p.Rule, Reason: p.Reason})
		s.Rejections++
		if p.Kind == "policy" {
			s.Violations++
		}
	case EvMemberWaiting:
		p, err := decode[MemberWaiting](ev)
		if err != nil {
			return err
		}
		m, err := s.actor(ev)
		if err != nil {
			return err
		}
		if p.Until > 0 {
			s.busy(m, p.Until)
		} else {
			// Sleep, unless something it could not have seen woke it meanwhile.
			m.Pending = m.WakeCause > m.Seen
		}
	case EvTaskClaimed:
		p, err := decode[TaskClaimed](ev)
		if err != nil {
			return err
		}
		m, err := s.actor(ev)
		if err != nil {
			return err
		}
		t := s.tasks[p.Task]
		if t == nil || t.Status != StatusOpen {
			return badEvent(ev, "task %q is not open", p.Task)
		}
		t.Status, t.Assignee = StatusClaimed, m.ID
		s.busy(m, p.BusyUntil)
	case EvWorkStarted:
		p, err := decode[WorkStarted](ev)
		if err != nil {
			return err
		}
		m, err := s.actor(ev)
		if err != nil {
			return err
		}
		t := s.tasks[p.Task]
		if t == nil || t.Assignee != m.ID || t.Status != StatusClaimed {
			return badEvent(ev, "task %q is not claimed by %s", p.Task, m.ID)
		}
		t.Status, t.WorkUntil, t.Stint = StatusInProgress, p.Until, p.Work
		s.busy(m, p.Until)
	case EvWorkFinished:
		p, err := decode[WorkFinished](ev)
		if err != nil {
			return err
		}
		t := s.tasks[p.Task]
		if t == nil || t.Status != StatusInProgress {
			return badEvent(ev, "task %q is not in progress", p.Task)
		}
		if p.Work != t.Stint {
			return badEvent(ev, "work %s does not match the stint %s", p.Work, t.Stint)
		}
		t.Status, t.WorkUntil, t.Stint = StatusClaimed, 0, 0
		t.Spent += p.Work
	case EvTaskCompleted:
		p, err := decode[TaskCompleted](ev)
		if err != nil {
			return err
		}
		m, err := s.actor(ev)
		if err != nil {
			return err
		}
		t := s.tasks[p.Task]
		if t == nil || t.Assignee != m.ID || t.Status != StatusClaimed {
			return badEvent(ev, "task %q is not claimed by %s", p.Task, m.ID)
		}
		t.Status, t.DoneAt, t.DoneBy, t.DoneSeq = StatusDone, clock.Time(ev.Time), m.ID, ev.Seq
		if t.Spec.Purchase > 0 {
			if b := s.budgets[t.Project.Team]; b != nil {
				b.Spent += t.Spec.Purchase
			}
		}
		s.busy(m, p.BusyUntil)
		// Whoever could take a task this one unblocked wants to hear of it.
		s.wakeForReady(t, ev.Seq)
	case EvApprovalRequested:
		p, err := decode[ApprovalRequested](ev)
		if err != nil {
			return err
		}
		m, err := s.actor(ev)
		if err != nil {
			return err
		}
		if s.requests[p.Request] != nil || len(p.Steps) == 0 {
			return badEvent(ev, "request %q exists or has no steps", p.Request)
		}
		t := s.tasks[p.Task]
		if t == nil {
			return badEvent(ev, "unknown task %q", p.Task)
		}
		r := &Request{ID: p.Request, Task: p.Task, Requester: m.ID, Chain: p.Chain, Amount: p.Amount,
			Steps: append([]RequestStep(nil), p.Steps...), Status: RequestPending, CreatedAt: clock.Time(ev.Time)}
		for i := range r.Steps {
			r.Steps[i].Status = RequestPending
		}
		s.Requests = append(s.Requests, r)
		s.requests[r.ID] = r
		t.Request = r.ID
		s.busy(m, p.BusyUntil)
		s.wake(r.Steps[0].Approver, ev.Seq)
	case EvApprovalGranted, EvApprovalRejected:
		p, err := decode[ApprovalDecided](ev)
		if err != nil {
			return err
		}
		m, err := s.actor(ev)
		if err != nil {
			return err
		}
		r := s.requests[p.Request]
		if r == nil || r.Status != RequestPending || p.Step != r.Current || r.Steps[p.Step].Approver != m.ID {
			return badEvent(ev, "request %q step %d is not waiting for %s", p.Request, p.Step, m.ID)
		}
		now := clock.Time(ev.Time)
		st := &r.Steps[p.Step]
		st.DecidedAt = now
		if ev.Type == EvApprovalRejected {
			st.Status, r.Status, r.Reason, r.DecidedAt = RequestRejected, RequestRejected, p.Reason, now
			s.wake(r.Requester, ev.Seq)
		} else {
			st.Status = RequestApproved
			r.Current++
			if r.Current == len(r.Steps) {
				r.Status, r.DecidedAt = RequestApproved, now
				s.wake(r.Requester, ev.Seq)
			} else {
				s.wake(r.Steps[r.Current].Approver, ev.Seq)
			}
		}
		s.busy(m, p.BusyUntil)
	case EvMessageSent:
		p, err := decode[MessageSent](ev)
		if err != nil {
			return err
		}
		m, err := s.actor(ev)
		if err != nil {
			return err
		}
		if s.members[p.To] == nil || s.messages[p.Message] != nil {
			return badEvent(ev, "bad message %q to %q", p.Message, p.To)
		}
		msg := &Message{ID: p.Message, From: m.ID, To: p.To, Text: p.Text, SentAt: clock.Time(ev.Time)}
		s.Messages = append(s.Messages, msg)
		s.messages[msg.ID] = msg
		s.busy(m, p.BusyUntil)
	case EvMessageDelivered:
		p, err := decode[MessageDelivered](ev)
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
		s.wake(msg.To, ev.Seq)
	default:
		return badEvent(ev, "unknown event type")
	}
	return nil
}

// wakeForReady wakes the members who could now take a task that done unblocked.
func (s *State) wakeForReady(done *Task, cause uint64) {
	roles := map[string]bool{}
	for _, t := range s.dependents[done.ID] {
		if t.Status == StatusOpen && s.DepsDone(t) {
			roles[t.Spec.Role] = true
		}
	}
	if len(roles) == 0 {
		return
	}
	for _, m := range s.Members {
		if roles[m.Role] && !m.NPC {
			s.wake(m.ID, cause)
		}
	}
}

// snapshot is everything in a State that events change, in a stable order.
type snapshot struct {
	Now        clock.Time `json:"now"`
	LastSeq    uint64     `json:"last_seq"`
	Ended      bool       `json:"ended"`
	EndReason  string     `json:"end_reason,omitempty"`
	Members    []*Member  `json:"members"`
	Tasks      []*Task    `json:"tasks"`
	Requests   []*Request `json:"requests"`
	Messages   []*Message `json:"messages"`
	Budgets    []*Budget  `json:"budgets"`
	Turns      int        `json:"turns"`
	Timeouts   int        `json:"timeouts"`
	Rejections int        `json:"rejections"`
	Violations int        `json:"violations"`
}

func (s *State) snap() snapshot {
	return snapshot{s.Now, s.LastSeq, s.Ended, s.EndReason, s.Members, s.Tasks, s.Requests, s.Messages, s.Budgets,
		s.Turns, s.Timeouts, s.Rejections, s.Violations}
}

// Snapshot encodes the state (without its world) for a checkpoint.
func (s *State) Snapshot() []byte {
	b, err := json.Marshal(s.snap())
	if err != nil {
		panic("org: state does not encode: " + err.Error())
	}
	return b
}

// Hash is a digest of everything in the state that events change: the
// SHA-256 of its Snapshot. Two states reached by the same events have the
// same hash.
func (s *State) Hash() [32]byte {
	return sha256.Sum256(s.Snapshot())
}

// Restore rebuilds a state of world w from a Snapshot. It checks that the
// snapshot fits the world (same members and tasks).
func Restore(w *worlds.World, data []byte) (*State, error) {
	var sn snapshot
	if err := json.Unmarshal(data, &sn); err != nil {
		return nil, fmt.Errorf("org: snapshot: %w", err)
	}
	s := New(w)
	if len(sn.Members) != len(s.Members) || len(sn.Tasks) != len(s.Tasks) || len(sn.Budgets) != len(s.Budgets) {
		return nil, errors.New("org: snapshot does not fit the world")
	}
	for i, m := range sn.Members {
		if m == nil || m.ID != s.Members[i].ID {
			return nil, fmt.Errorf("org: snapshot member %d does not fit the world", i)
		}
		s.Members[i] = m
		s.members[m.ID] = m
	}
	for i, t := range sn.Tasks {
		if t == nil || t.ID != s.Tasks[i].ID {
			return nil, fmt.Errorf("org: snapshot task %d does not fit the world", i)
		}
		t.Spec, t.Project = s.Tasks[i].Spec, s.Tasks[i].Project
		s.Tasks[i] = t
		s.tasks[t.ID] = t
	}
	for i, b := range sn.Budgets {
		if b == nil || b.Team != s.Budgets[i].Team {
			return nil, fmt.Errorf("org: snapshot budget %d does not fit the world", i)
		}
		s.Budgets[i] = b
		s.budgets[b.Team] = b
	}
	for _, r := range sn.Requests {
		if r == nil || s.tasks[r.Task] == nil || len(r.Steps) == 0 {
			return nil, errors.New("org: snapshot has a bad request")
		}
		s.requests[r.ID] = r
	}
	for _, m := range sn.Messages {
		if m == nil || s.members[m.To] == nil {
			return nil, errors.New("org: snapshot has a bad message")
		}
		s.messages[m.ID] = m
	}
	s.link()
	s.Requests, s.Messages = sn.Requests, sn.Messages
	s.Now, s.LastSeq, s.Ended, s.EndReason = sn.Now, sn.LastSeq, sn.Ended, sn.EndReason
	s.Turns, s.Timeouts, s.Rejections, s.Violations = sn.Turns, sn.Timeouts, sn.Rejections, sn.Violations
	return s, nil
}
