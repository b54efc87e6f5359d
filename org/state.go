package org

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

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

// State is the company at one instant. Build it with New; change it only with
// Apply. It is not safe for concurrent use, not even by readers only.
type State struct {
	World   *worlds.World
	Now     clock.Time
	LastSeq uint64
	Ended   bool
	// EndReason is why the session ended: "complete", "horizon" or "quiescent".
	EndReason string

	Members []*Member // sorted by ID
	Tasks   []*Task   // the world's in file order, then tickets as they arrive
	// Dispatch is nil unless the world offers work to one seat at a time.
	Dispatch *Dispatch
	Requests []*Request
	Messages []*Message
	Budgets  []*Budget // in world order
	Queues   []*Queue  // in world order
	Arrivals []*ArrivalState
	// Fired records which of the world's interruptions have happened.
	Fired []bool
	// Limits are the session's, from session.started, with defaults filled in.
	Limits Limits

	Reward     float64 // the sum of the reward events so far
	Turns      int     // turns taken by all members
	Timeouts   int
	Rejections int
	Violations int // rejections of kind "policy"

	members  map[string]*Member
	tasks    map[string]*Task
	requests map[string]*Request
	messages map[string]*Message
	budgets  map[string]*Budget
	queues   map[string]*Queue
	// dependents lists, for each task, the tasks that depend on it (static).
	dependents map[string][]*Task
	serves     map[string]bool   // role + "/" + queue
	roleServes map[string][]bool // role -> whether it serves each of World.Queues, by index
	// Derived indexes, rebuilt by index() after Restore; not hashed.
	open      int                    // tasks not done
	held      map[string][]*Task     // member -> tasks assigned and not done
	queueOpen map[string][]*Task     // queue -> its tickets in arrival order (done ones are dropped lazily)
	openPrio  map[string]map[int]int // queue -> priority -> its open tickets of that priority
	claimed   map[string]int         // queue -> items claimed and not done
	shown     map[string]int         // queue -> its tasks not done and not hidden
	offers    map[offerKey]*offers   // open visible project tasks by queue, role and skill (view_index.go)
	doneIn    map[string]int         // project -> its tasks done
	woken     []string               // members whose Pending or BusyUntil changed since TakeWoken
	typed     any                    // the payload of the event being applied, when the engine has it (ApplyWith)
	npcQueues map[string][]string    // NPC member -> the queues it serves (see npcServes)
	// The last task and member looked up: checking one action asks for
	// the same ones a dozen times (every rule looks them up by ID). This
	// makes even Task and Member writes, like the rest of State: it is not
	// safe for concurrent use, readers included.
	lastTask   *Task
	lastMember *Member
	bulkOffers bool // index() is filing every task: sort the offer lists once at the end
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
	// OnLeave until LeaveUntil: no turns; approvals go to Delegate.
	OnLeave    bool       `json:"on_leave,omitempty"`
	LeaveUntil clock.Time `json:"leave_until,omitempty"`
	Delegate   string     `json:"delegate,omitempty"`
	Knows      []string   `json:"knows,omitempty"`   // topics learnt from colleagues
	Holding    int        `json:"holding,omitempty"` // tasks assigned and not done
	Violations int        `json:"violations,omitempty"`
	// Rejected are the member's actions refused since its latest turn began;
	// its next observation shows them.
	Rejected []RejectedView `json:"rejected,omitempty"`
}

// Task kinds.
const (
	KindTask   = "task"   // part of a project in the world file
	KindTicket = "ticket" // brought by an arrival or an urgent interruption
)

// Task is a task's or a ticket's state. Spec is its definition: in the world
// for a project task, in Def for a ticket. Effort, Value and Priority start
// as the definition's and change with interruptions.
type Task struct {
	ord      int            // its index in State.Tasks (creation order), for ordering views
	Spec     *worlds.Task   `json:"-"`
	Def      *worlds.Task   `json:"def,omitempty"` // a ticket's definition (kept in snapshots)
	ID       string         `json:"id"`
	Kind     string         `json:"kind"`
	Project  string         `json:"project,omitempty"`
	Queue    string         `json:"queue"`
	Team     string         `json:"team"`
	Created  clock.Time     `json:"created"`
	Deadline clock.Time     `json:"deadline"`           // project deadline or SLA due; 0 for none
	Hidden   bool           `json:"hidden,omitempty"`   // its project has not started
	Breached bool           `json:"breached,omitempty"` // still open when its deadline passed (tickets)
	Effort   clock.Duration `json:"effort"`
	Value    float64        `json:"value"`
	Priority int            `json:"priority,omitempty"`
	Arrival  string         `json:"arrival,omitempty"`

	Status    string         `json:"status"`
	Assignee  string         `json:"assignee,omitempty"`
	Spent     clock.Duration `json:"spent"`
	WorkUntil clock.Time     `json:"work_until,omitempty"`
	Stint     clock.Duration `json:"stint,omitempty"`   // work of the stint under way
	Request   string         `json:"request,omitempty"` // the latest approval request for its purchase
	DoneAt    clock.Time     `json:"done_at,omitempty"`
	DoneBy    string         `json:"done_by,omitempty"`
	DoneSeq   uint64         `json:"done_seq,omitempty"`

	deps []*Task  // Spec.Deps resolved
	ix   offerPos // where it is in the offer index (view_index.go)
}

// Queue is a work queue's state.
type Queue struct {
	ID        string     `json:"id"`
	DownUntil clock.Time `json:"down_until,omitempty"` // an outage blocks it until then
}

// Down reports whether an outage blocks the queue at time now.
func (q *Queue) Down(now clock.Time) bool { return q.DownUntil > now }

// ArrivalState counts the tickets an arrival process has brought.
type ArrivalState struct {
	ID     string     `json:"id"`
	N      int        `json:"n"`
	NextAt clock.Time `json:"next_at"` // 0 when it brings no more
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
	Since     clock.Time `json:"since,omitempty"`     // when the current approver got it
	Escalated int        `json:"escalated,omitempty"` // times it moved to another approver
	Delegated bool       `json:"delegated,omitempty"` // routed to a stand-in for role holders on leave
}

// Message is a message between members.
type Message struct {
	ID        string     `json:"id"`
	From      string     `json:"from"`
	To        string     `json:"to"`
	Text      string     `json:"text"`
	Topic     string     `json:"topic,omitempty"`
	ReplyTo   string     `json:"reply_to,omitempty"`
	Answered  bool       `json:"answered,omitempty"`
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
		queues:     map[string]*Queue{},
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
			spec := &p.Tasks[ti]
			t := &Task{Spec: spec, ID: spec.ID, Kind: KindTask, Project: p.ID, Queue: p.Queue, Team: p.Team,
				Created: p.Start, Deadline: p.Deadline, Hidden: p.Start > 0, Effort: spec.Effort, Value: spec.Value,
				Priority: spec.Priority, Status: StatusOpen}
			s.Tasks = append(s.Tasks, t)
			s.tasks[t.ID] = t
		}
	}
	for _, q := range w.Queues {
		sq := &Queue{ID: q.ID}
		s.Queues = append(s.Queues, sq)
		s.queues[q.ID] = sq
	}
	for _, a := range w.Arrivals {
		s.Arrivals = append(s.Arrivals, &ArrivalState{ID: a.ID})
	}
	s.Fired = make([]bool, len(w.Interruptions))
	s.Dispatch = newDispatch(w)
	s.link()
	s.index()
	s.serves = map[string]bool{}
	s.roleServes = map[string][]bool{}
	for i, q := range w.Queues {
		for _, r := range q.ServedBy {
			s.serves[r+"/"+q.ID] = true
			if s.roleServes[r] == nil {
				s.roleServes[r] = make([]bool, len(w.Queues))
			}
			s.roleServes[r][i] = true
		}
	}
	for _, t := range w.Teams {
		b := &Budget{Team: t.ID, Initial: t.Budget}
		s.Budgets = append(s.Budgets, b)
		s.budgets[t.ID] = b
	}
	return s
}

// index rebuilds the derived indexes from the tasks.
func (s *State) index() {
	s.open = 0
	s.held = map[string][]*Task{}
	s.queueOpen = map[string][]*Task{}
	s.openPrio = map[string]map[int]int{}
	s.claimed = map[string]int{}
	s.shown = map[string]int{}
	s.offers = map[offerKey]*offers{}
	s.doneIn = map[string]int{}
	s.bulkOffers = true
	for i, t := range s.Tasks {
		t.ord = i
		t.ix = offerPos{}
		s.track(t)
	}
	s.bulkOffers = false
	for _, o := range s.offers {
		slices.SortFunc(o.ready, readyCmp)
		slices.SortFunc(o.waiting, waitingCmp)
	}
}

// track adds a task to the derived indexes.
func (s *State) track(t *Task) {
	if t.Status == StatusDone {
		if !t.Hidden {
			s.doneIn[t.Project]++
		}
		return
	}
	if !t.Hidden {
		s.shown[t.Queue]++
	}
	s.offer(t)
	s.open++
	if t.Assignee != "" {
		s.held[t.Assignee] = append(s.held[t.Assignee], t)
		s.claimed[t.Queue]++
	}
	if t.Kind == KindTicket && t.Status == StatusOpen {
		s.queueOpen[t.Queue] = append(s.queueOpen[t.Queue], t)
		s.countOpen(t, 1)
	}
}

// countOpen adds n to the open tickets of t's queue at t's priority.
func (s *State) countOpen(t *Task, n int) {
	m := s.openPrio[t.Queue]
	if m == nil {
		m = map[int]int{}
		s.openPrio[t.Queue] = m
	}
	if m[t.Priority] += n; m[t.Priority] == 0 {
		delete(m, t.Priority)
	}
}

// topOpenPriority is the highest priority of queue's open tickets; ok is
// false when it has none.
func (s *State) topOpenPriority(queue string) (top int, ok bool) {
	for p := range s.openPrio[queue] {
		if !ok || p > top {
			top, ok = p, true
		}
	}
	return top, ok
}

// reopen puts a ticket back among its queue's open tickets, in arrival order.
func (s *State) reopen(t *Task) {
	list := s.queueOpen[t.Queue]
	i := len(list)
	for i > 0 && !s.arrivedEarlier(list[i-1], t) {
		i--
	}
	list = append(list, nil)
	copy(list[i+1:], list[i:])
	list[i] = t
	s.queueOpen[t.Queue] = list
	s.countOpen(t, 1)
}

// arrivedEarlier reports whether ticket a arrived before ticket b: by
// creation time, then by their order among all tasks.
func (s *State) arrivedEarlier(a, b *Task) bool {
	if a.Created != b.Created {
		return a.Created < b.Created
	}
	for _, t := range s.Tasks {
		if t == a {
			return true
		}
		if t == b {
			return false
		}
	}
	return false
}

// Held returns the tasks member holds (assigned, not done), in the order it took them.
func (s *State) Held(member string) []*Task { return s.held[member] }

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
func (s *State) Member(id string) *Member {
	if m := s.lastMember; m != nil && m.ID == id {
		return m
	}
	m := s.members[id]
	if m != nil {
		s.lastMember = m
	}
	return m
}

// Task returns a task by ID.
func (s *State) Task(id string) *Task {
	if t := s.lastTask; t != nil && t.ID == id {
		return t
	}
	t := s.tasks[id]
	if t != nil {
		s.lastTask = t
	}
	return t
}

// Request returns an approval request by ID.
func (s *State) Request(id string) *Request { return s.requests[id] }

// Message returns a message by ID.
func (s *State) Message(id string) *Message { return s.messages[id] }

// Budget returns a team's budget.
func (s *State) Budget(team string) *Budget { return s.budgets[team] }

// Queue returns a queue's state.
func (s *State) Queue(id string) *Queue { return s.queues[id] }

// Arrival returns an arrival process's state.
func (s *State) Arrival(id string) *ArrivalState {
	for _, a := range s.Arrivals {
		if a.ID == id {
			return a
		}
	}
	return nil
}

// Knows reports whether member m has learnt topic.
func (m *Member) KnowsTopic(topic string) bool {
	for _, k := range m.Knows {
		if k == topic {
			return true
		}
	}
	return false
}

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

// AllDone reports whether every task is done and no arrival process will
// bring more work.
func (s *State) AllDone() bool {
	for _, a := range s.Arrivals {
		if a.NextAt != 0 {
			return false
		}
	}
	for _, f := range s.Fired {
		if !f {
			return false
		}
	}
	return s.open == 0
}

func removeTask(ts []*Task, t *Task) []*Task {
	for i, x := range ts {
		if x == t {
			return append(ts[:i], ts[i+1:]...)
		}
	}
	return ts
}

// TakeWoken returns, and forgets, the members that were woken or made busy
// since the last call (Pending set, BusyUntil moved), in the order it
// happened, with repeats. Clearing Pending is not reported: a member that
// stops wanting a turn needs no timer. The engine uses it to find who is
// due; it is not part of the hash. The slice is valid until the next
// event is applied: the state reuses its array.
func (s *State) TakeWoken() []string {
	w := s.woken
	s.woken = s.woken[:0]
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

// claimedBy returns task id if m holds it and is not working on it.
func (s *State) claimedBy(ev *events.Event, id string, m *Member) (*Task, error) {
	t := s.tasks[id]
	if t == nil || t.Assignee != m.ID || t.Status != StatusClaimed {
		return nil, badEvent(ev, "task %q is not claimed by %s", id, m.ID)
	}
	return t, nil
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
		p, err := decode[SessionStarted](s, ev)
		if err != nil {
			return err
		}
		if err := p.Limits.Validate(); err != nil {
			return badEvent(ev, "%v", err)
		}
		s.Limits = p.Limits.WithDefaults()
		for _, an := range p.Arrivals {
			a := s.Arrival(an.Arrival)
			if a == nil {
				return badEvent(ev, "unknown arrival %q", an.Arrival)
			}
			a.NextAt = an.At
		}
		for _, m := range s.Members {
			if !m.NPC {
				s.wake(m.ID, ev.Seq)
			}
		}
	case EvSessionEnded:
		p, err := decode[SessionEnded](s, ev)
		if err != nil {
			return err
		}
		s.Ended, s.EndReason = true, p.Reason
	case EvTurn:
		p, err := decode[Turn](s, ev)
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
		s.Turns++
		s.busy(m, p.BusyUntil)
	case EvTurnTimeout:
		p, err := decode[TurnTimeout](s, ev)
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
		s.passed(m, ev.Seq)
	case EvActionRejected:
		p, err := decode[ActionRejected](s, ev)
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
			m.Violations++
		}
	case EvMemberWaiting:
		p, err := decode[MemberWaiting](s, ev)
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
			s.passed(m, ev.Seq)
		}
	case EvTaskHandedOff:
		p, err := decode[TaskHandedOff](s, ev)
		if err != nil {
			return err
		}
		m, err := s.actor(ev)
		if err != nil {
			return err
		}
		t, err := s.claimedBy(ev, p.Task, m)
		if err != nil {
			return err
		}
		to := s.members[p.To]
		if p.To != "" && (to == nil || to.ID == m.ID) {
			return badEvent(ev, "cannot hand %q to %q", p.Task, p.To)
		}
		m.Holding--
		s.held[m.ID] = removeTask(s.held[m.ID], t)
		if to != nil {
			t.Assignee = to.ID
			to.Holding++
			s.held[to.ID] = append(s.held[to.ID], t)
			s.wake(to.ID, ev.Seq)
		} else {
			t.Status, t.Assignee = StatusOpen, ""
			s.claimed[t.Queue]--
			s.offer(t)
			if t.Kind == KindTicket {
				s.reopen(t)
			}
			if s.DepsDone(t) {
				s.wakeServers(t, ev.Seq, true)
			}
		}
		s.busy(m, p.BusyUntil)
	case EvTaskClaimed:
		p, err := decode[TaskClaimed](s, ev)
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
		if t.Hidden {
			return badEvent(ev, "task %q has not appeared yet", p.Task)
		}
		s.unoffer(t)
		if t.Kind == KindTicket {
			s.countOpen(t, -1)
		}
		t.Status, t.Assignee = StatusClaimed, m.ID
		m.Holding++
		s.held[m.ID] = append(s.held[m.ID], t)
		s.claimed[t.Queue]++
		s.busy(m, p.BusyUntil)
		if s.Dispatch != nil {
			s.Dispatch.newRound(m.Role, ev.Seq) // work was taken: a new round
		}
	case EvWorkStarted:
		p, err := decode[WorkStarted](s, ev)
		if err != nil {
			return err
		}
		m, err := s.actor(ev)
		if err != nil {
			return err
		}
		t, err := s.claimedBy(ev, p.Task, m)
		if err != nil {
			return err
		}
		t.Status, t.WorkUntil, t.Stint = StatusInProgress, p.Until, p.Work
		s.busy(m, p.Until)
	case EvWorkFinished:
		p, err := decode[WorkFinished](s, ev)
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
		if w := s.members[t.Assignee]; w != nil {
			if r, ok := s.World.Role(w.Role); ok && r.Rate > 0 {
				if b := s.budgets[w.Team]; b != nil {
					b.Spent += r.Rate * int64(p.Work) / int64(clock.Hour)
				}
			}
		}
	case EvTaskCompleted:
		p, err := decode[TaskCompleted](s, ev)
		if err != nil {
			return err
		}
		m, err := s.actor(ev)
		if err != nil {
			return err
		}
		t, err := s.claimedBy(ev, p.Task, m)
		if err != nil {
			return err
		}
		t.Status, t.DoneAt, t.DoneBy, t.DoneSeq = StatusDone, clock.Time(ev.Time), m.ID, ev.Seq
		m.Holding--
		s.open--
		if !t.Hidden {
			s.doneIn[t.Project]++
			s.shown[t.Queue]--
		}
		for _, d := range s.dependents[t.ID] {
			s.reoffer(d) // one dependency fewer to wait for
		}
		s.claimed[t.Queue]--
		s.held[m.ID] = removeTask(s.held[m.ID], t)
		if t.Spec.Purchase > 0 {
			if b := s.budgets[t.Team]; b != nil {
				b.Spent += t.Spec.Purchase
			}
		}
		s.busy(m, p.BusyUntil)
		// Whoever could take a task this one unblocked wants to hear of it.
		s.wakeForReady(t, ev.Seq)
	case EvApprovalRequested:
		p, err := decode[ApprovalRequested](s, ev)
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
			r.Steps[i].Since, r.Steps[i].Escalated = 0, 0 // Delegated comes from the payload
		}
		r.Steps[0].Since = clock.Time(ev.Time)
		s.Requests = append(s.Requests, r)
		s.requests[r.ID] = r
		t.Request = r.ID
		s.busy(m, p.BusyUntil)
		s.wake(r.Steps[0].Approver, ev.Seq)
	case EvApprovalGranted, EvApprovalRejected:
		p, err := decode[ApprovalDecided](s, ev)
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
				r.Steps[r.Current].Since = now
				s.wake(r.Steps[r.Current].Approver, ev.Seq)
			}
		}
		s.busy(m, p.BusyUntil)
	case EvMessageSent:
		p, err := decode[MessageSent](s, ev)
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
		msg := &Message{ID: p.Message, From: m.ID, To: p.To, Text: p.Text, Topic: p.Topic, ReplyTo: p.ReplyTo, SentAt: clock.Time(ev.Time)}
		if p.ReplyTo != "" {
			if orig := s.messages[p.ReplyTo]; orig != nil && orig.To == m.ID {
				orig.Answered = true
			}
		}
		s.Messages = append(s.Messages, msg)
		s.messages[msg.ID] = msg
		s.busy(m, p.BusyUntil)
	case EvMessageDelivered:
		p, err := decode[MessageDelivered](s, ev)
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
	case EvTaskCreated:
		return s.applyTaskCreated(ev)
	case EvSLABreached:
		p, err := decode[SLABreached](s, ev)
		if err != nil {
			return err
		}
		t := s.tasks[p.Task]
		if t == nil || t.Breached || t.Deadline == 0 || clock.Time(ev.Time) <= t.Deadline || t.Status == StatusDone {
			return badEvent(ev, "task %q cannot breach its deadline now", p.Task)
		}
		t.Breached = true
	case EvReward:
		p, err := decode[Reward](s, ev)
		if err != nil {
			return err
		}
		s.Reward += p.Team
	case EvProjectStarted:
		p, err := decode[ProjectStarted](s, ev)
		if err != nil {
			return err
		}
		found := false
		for _, t := range s.Tasks {
			if t.Project == p.Project && t.Hidden {
				t.Hidden, found = false, true
				if t.Status != StatusDone {
					s.shown[t.Queue]++
				}
				s.offer(t)
			}
		}
		if !found {
			return badEvent(ev, "project %q has no hidden tasks", p.Project)
		}
		for _, t := range s.Tasks {
			if t.Project == p.Project && s.DepsDone(t) {
				s.wakeServers(t, ev.Seq, false)
			}
		}
	case EvTaskReprioritized:
		p, err := decode[TaskReprioritized](s, ev)
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
			}
		}
		s.wakeAbout(t, ev.Seq)
	case EvTaskChanged:
		p, err := decode[TaskChanged](s, ev)
		if err != nil {
			return err
		}
		t := s.tasks[p.Task]
		if t == nil || p.Effort < 0 || !s.fire(p.Interruption) {
			return badEvent(ev, "task %q or interruption %d does not apply", p.Task, p.Interruption)
		}
		t.Effort += p.Effort
		s.wakeAbout(t, ev.Seq)
	case EvMemberLeft:
		p, err := decode[MemberLeft](s, ev)
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
	case EvMemberReturned:
		m, err := s.actor(ev)
		if err != nil {
			return err
		}
		if !m.OnLeave {
			return badEvent(ev, "%s is not on leave", m.ID)
		}
		m.OnLeave, m.LeaveUntil, m.Delegate = false, 0, ""
		s.wake(m.ID, ev.Seq)
	case EvQueueDown:
		p, err := decode[QueueDown](s, ev)
		if err != nil {
			return err
		}
		q := s.queues[p.Queue]
		if q == nil || !s.fire(p.Interruption) {
			return badEvent(ev, "queue %q or interruption %d does not apply", p.Queue, p.Interruption)
		}
		q.DownUntil = p.Until
	case EvQueueUp:
		p, err := decode[QueueUp](s, ev)
		if err != nil {
			return err
		}
		q := s.queues[p.Queue]
		if q == nil || q.DownUntil == 0 {
			return badEvent(ev, "queue %q is not down", p.Queue)
		}
		q.DownUntil = 0
		for _, m := range s.Members {
			if !m.OnLeave && (s.Serves(m.Role, q.ID) || s.npcServes(m.ID, q.ID)) {
				s.wake(m.ID, ev.Seq)
			}
		}
	case EvApprovalEscalated:
		p, err := decode[ApprovalEscalated](s, ev)
		if err != nil {
			return err
		}
		r := s.requests[p.Request]
		if r == nil || r.Status != RequestPending || p.Step != r.Current || r.Steps[p.Step].Approver != p.From || s.members[p.To] == nil {
			return badEvent(ev, "request %q step %d is not waiting for %s", p.Request, p.Step, p.From)
		}
		r.Steps[p.Step].Approver = p.To
		r.Steps[p.Step].Escalated++
		r.Steps[p.Step].Since = clock.Time(ev.Time)
		s.wake(p.To, ev.Seq)
		if m := s.members[ev.Actor]; m != nil && p.BusyUntil > 0 {
			s.busy(m, p.BusyUntil)
		}
	default:
		return badEvent(ev, "unknown event type")
	}
	return nil
}

// fire marks interruption i as happened; it reports false if it already had.
func (s *State) fire(i int) bool {
	if i < 0 || i >= len(s.Fired) || s.Fired[i] {
		return false
	}
	s.Fired[i] = true
	return true
}

func (s *State) npcServes(member, queue string) bool {
	if s.npcQueues == nil {
		// The world's member list is searched one by one; this is asked
		// for every NPC at every ticket, so the answer is looked up once.
		s.npcQueues = map[string][]string{}
		for i := range s.World.Members {
			if w := &s.World.Members[i]; w.NPC != nil {
				s.npcQueues[w.ID] = w.NPC.Serves
			}
		}
	}
	return contains(s.npcQueues[member], queue)
}

func contains(list []string, x string) bool {
	for _, y := range list {
		if y == x {
			return true
		}
	}
	return false
}

// wakeAbout wakes whoever a change to t concerns: its assignee, or those who could take it.
func (s *State) wakeAbout(t *Task, cause uint64) {
	if t.Assignee != "" {
		s.wake(t.Assignee, cause)
		return
	}
	if t.Status == StatusOpen && !t.Hidden && s.DepsDone(t) {
		s.wakeServers(t, cause, false)
	}
}

// wakeServers wakes who could take the open task t: every agent seat that
// may do it and holds nothing, and — so that simulated servers do not race —
// only the first idle NPC serving its queue.
func (s *State) wakeServers(t *Task, cause uint64, oneNPC bool) {
	npcWoken := false
	for _, m := range s.Members {
		if m.OnLeave || m.Holding > 0 {
			continue
		}
		if m.NPC {
			if s.npcServes(m.ID, t.Queue) && !npcWoken && !m.Pending {
				s.wake(m.ID, cause)
				npcWoken = oneNPC
			}
			continue
		}
		if s.Dispatch == nil && m.Role == t.Spec.Role && s.Serves(m.Role, t.Queue) {
			s.wake(m.ID, cause)
		}
	}
	if s.Dispatch != nil {
		s.offerWork(t, cause)
	}
}

func (s *State) applyTaskCreated(ev *events.Event) error {
	p, err := decode[TaskCreated](s, ev)
	if err != nil {
		return err
	}
	def := p.Task
	if def.ID == "" || s.tasks[def.ID] != nil || s.queues[p.Queue] == nil || len(def.Deps) > 0 {
		return badEvent(ev, "ticket %q exists, has dependencies or names no queue", def.ID)
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
		a.NextAt = p.NextAt
	}
	t := &Task{Def: &def, Spec: &def, ID: def.ID, Kind: KindTicket, Queue: p.Queue, Team: p.Team,
		Created: clock.Time(ev.Time), Deadline: p.Deadline, Effort: def.Effort, Value: def.Value,
		Priority: def.Priority, Arrival: p.Arrival, Status: StatusOpen}
	t.ord = len(s.Tasks)
	s.Tasks = append(s.Tasks, t)
	s.tasks[t.ID] = t
	s.track(t)
	s.wakeServers(t, ev.Seq, true)
	return nil
}

// wakeForReady wakes the members who could now take a task that done unblocked.
func (s *State) wakeForReady(done *Task, cause uint64) {
	if s.Dispatch != nil {
		for _, t := range s.dependents[done.ID] {
			if t.Status == StatusOpen && !t.Hidden && s.DepsDone(t) {
				s.offerWork(t, cause)
			}
		}
		return
	}
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
		if roles[m.Role] && !m.NPC && !m.OnLeave {
			s.wake(m.ID, cause)
		}
	}
}

// snapshot is everything in a State that events change, in a stable order.
type snapshot struct {
	Now        clock.Time      `json:"now"`
	LastSeq    uint64          `json:"last_seq"`
	Ended      bool            `json:"ended"`
	EndReason  string          `json:"end_reason,omitempty"`
	Members    []*Member       `json:"members"`
	Tasks      []*Task         `json:"tasks"`
	Requests   []*Request      `json:"requests"`
	Messages   []*Message      `json:"messages"`
	Budgets    []*Budget       `json:"budgets"`
	Queues     []*Queue        `json:"queues"`
	Arrivals   []*ArrivalState `json:"arrivals"`
	Fired      []bool          `json:"fired"`
	Reward     float64         `json:"reward"`
	Turns      int             `json:"turns"`
	Timeouts   int             `json:"timeouts"`
	Rejections int             `json:"rejections"`
	Violations int             `json:"violations"`
	Limits     *Limits         `json:"limits,omitempty"` // nil: the defaults
	Dispatch   *Dispatch       `json:"dispatch,omitempty"`
}

func (s *State) snap() snapshot {
	return snapshot{s.Now, s.LastSeq, s.Ended, s.EndReason, s.Members, s.Tasks, s.Requests, s.Messages, s.Budgets,
		s.Queues, s.Arrivals, s.Fired, s.Reward, s.Turns, s.Timeouts, s.Rejections, s.Violations, s.customLimits(), s.Dispatch}
}

// customLimits is nil for the default limits, so that the snapshots (and
// state hashes) of sessions with default limits do not mention them.
func (s *State) customLimits() *Limits {
	if s.Limits == (Limits{}.WithDefaults()) || s.Limits == (Limits{}) {
		return nil
	}
	l := s.Limits
	return &l
}

// Snapshot encodes the state (without its world) for a checkpoint.
func (s *State) Snapshot() []byte {
	b, err := encodeSnapshot(s.snap())
	if err != nil {
		panic("org: state does not encode: " + err.Error())
	}
	return b
}

// Hash is a digest of everything in the state that events change: the
// SHA-256 of its Snapshot. Two states reached by the same events have the
// same hash.
func (s *State) Hash() [32]byte {
	h, err := hashSnapshot(s.snap())
	if err != nil {
		panic("org: state does not encode: " + err.Error())
	}
	return h
}

// Restore rebuilds a state of world w from a Snapshot. It checks that the
// snapshot fits the world (same members and tasks).
func Restore(w *worlds.World, data []byte) (*State, error) {
	var sn snapshot
	if err := json.Unmarshal(data, &sn); err != nil {
		return nil, fmt.Errorf("org: snapshot: %w", err)
	}
	s := New(w)
	if len(sn.Members) != len(s.Members) || len(sn.Tasks) < len(s.Tasks) || len(sn.Budgets) != len(s.Budgets) ||
		len(sn.Queues) != len(s.Queues) || len(sn.Arrivals) != len(s.Arrivals) || len(sn.Fired) != len(s.Fired) {
		return nil, errors.New("org: snapshot does not fit the world")
	}
	if sn.Limits != nil {
		s.Limits = sn.Limits.WithDefaults()
	}
	if (sn.Dispatch != nil) != (s.Dispatch != nil) {
		return nil, errors.New("org: snapshot's dispatch does not fit the world")
	}
	if sn.Dispatch != nil {
		sn.Dispatch.fill()
		s.Dispatch = sn.Dispatch
	}
	static := len(s.Tasks)
	for i, m := range sn.Members {
		if m == nil || m.ID != s.Members[i].ID {
			return nil, fmt.Errorf("org: snapshot member %d does not fit the world", i)
		}
		s.Members[i] = m
		s.members[m.ID] = m
	}
	for i, t := range sn.Tasks {
		switch {
		case t == nil:
			return nil, fmt.Errorf("org: snapshot task %d is empty", i)
		case i < static:
			if t.ID != s.Tasks[i].ID || t.Def != nil {
				return nil, fmt.Errorf("org: snapshot task %d does not fit the world", i)
			}
			t.Spec = s.Tasks[i].Spec
			s.Tasks[i] = t
		default:
			if t.Def == nil || t.Def.ID != t.ID || s.tasks[t.ID] != nil {
				return nil, fmt.Errorf("org: snapshot ticket %d is malformed", i)
			}
			t.Spec = t.Def
			s.Tasks = append(s.Tasks, t)
		}
		s.tasks[t.ID] = t
	}
	for i, q := range sn.Queues {
		if q == nil || q.ID != s.Queues[i].ID {
			return nil, fmt.Errorf("org: snapshot queue %d does not fit the world", i)
		}
		s.Queues[i] = q
		s.queues[q.ID] = q
	}
	for i, a := range sn.Arrivals {
		if a == nil || a.ID != s.Arrivals[i].ID {
			return nil, fmt.Errorf("org: snapshot arrival %d does not fit the world", i)
		}
		s.Arrivals[i] = a
	}
	s.lastTask, s.lastMember = nil, nil // the snapshot's objects replaced the world's
	s.Fired = sn.Fired
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
	s.index()
	s.Requests, s.Messages = sn.Requests, sn.Messages
	s.Now, s.LastSeq, s.Ended, s.EndReason = sn.Now, sn.LastSeq, sn.Ended, sn.EndReason
	s.Turns, s.Timeouts, s.Rejections, s.Violations, s.Reward = sn.Turns, sn.Timeouts, sn.Rejections, sn.Violations, sn.Reward
	return s, nil
}
