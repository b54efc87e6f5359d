package org

import (
	"errors"
	"fmt"
	segjson "github.com/segmentio/encoding/json"
	"slices"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
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
	// EndReason is why the session ended: "complete", "horizon",
	// "quiescent", "agents_failed" (State.AgentsFailed) or "event_limit"
	// (the session's budget of events was spent).
	EndReason string

	Members []*Member // sorted by ID
	// list is the tasks, the world's in file order, then tickets as they
	// arrive (Tasks); a retired ticket stays in it until it is compacted
	// (retire.go).
	list []*Task
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
	// Cases are the cases opened so far, in order (format 2).
	Cases []*Case
	// Records are the records of the world's systems (format 2,
	// records.go), in creation order; Collateral counts the writes no case
	// asked for.
	Records    []*Record
	Collateral int

	// Format is the session's log format, from session.started (0 before
	// it). A snapshot records it from format 4 on, so org.Restore of an
	// older one leaves 0 (sim.Restore sets it from the engine's
	// checkpoint). From format 4 the state retires done tickets (retire.go).
	Format int

	Reward     float64 // the sum of the reward events so far
	Turns      int     // turns taken by all members
	Timeouts   int
	TurnErrors int // turns whose agent could not decide (turn.failed)
	Rejections int
	Violations int // rejections of kind "policy"

	slab     []madeTask // made tasks allocated, not yet used (allocMade)
	cases    map[string]*Case
	records  map[string]*Record // type/id
	members  map[string]*Member
	tasks    map[string]*Task
	requests map[string]*Request
	messages map[string]*Message
	budgets  map[string]*Budget
	queues   map[string]*Queue
	// dependents lists, for each task, the tasks that depend on it (static).
	dependents map[string][]*Task
	roleServes map[string][]bool // role -> whether it serves each of World.Queues, by index
	// Derived indexes, rebuilt by index() after Restore; not hashed.
	open int // tasks not done
	// qs are the queues' indexes, by queue number (queueIx), and last those
	// of the tasks of no queue; a task keeps a pointer to its queue's (qx).
	qs          []queueIndex
	openTicketN int                  // open tickets in all queues (the sum of their openN)
	offers      map[offerKey]*offers // open visible project tasks by queue, role and skill (view_index.go)
	doneIn      map[string]int       // project -> its tasks done
	woken       []*Member            // members whose Pending or BusyUntil changed since TakeWoken
	typed       any                  // the payload of the event being applied, when the engine has it (ApplyWith)
	// The last task and member looked up: checking one action asks for
	// the same ones a dozen times (every rule looks them up by ID). This
	// makes even Task and Member writes, like the rest of State: it is not
	// safe for concurrent use, readers included.
	lastTask   *Task
	lastMember *Member
	namedIx    namedIndex                   // the messages naming each case (named_index.go)
	asks       map[string]map[string]string // template -> who holds each of its facts (askOf)
	// folded are the cases whose IDs are not lower-case, by their
	// lower-cased IDs; namedRecords counts the case outcomes naming each
	// record, by recordKey; openedBy the cases each member opened of each
	// template (named_index.go).
	folded       map[string][]*Case
	namedRecords map[string]int
	openedBy     map[string]int // member "\x00" template -> the cases it opened (fileCase)
	bulkOffers   bool           // index() is filing every task: sort the offer lists once at the end
	// verdictEpoch is the epoch of the rubric's remembered verifications
	// of done tasks (verify_memo.go): a verdict of an earlier one is
	// forgotten.
	verdictEpoch uint64
	// created counts the tasks ever created: the next one's ord.
	created int
	// retired is what the state keeps of its retired tickets, dueToRetire
	// the done tickets that retire at the next event, judge the rubric's
	// verdict on them, and kept the retired tickets when keep is set
	// (retire.go).
	retired     RetiredTickets
	chain       retireChain // the retired tickets' records chained into retired's digest (retire.go)
	seq         Sequencer   // runs the chain's batches, when the driver gave one
	holes       int         // retired tickets still in list
	dueToRetire []*Task
	judge       Judge
	keep        bool
	kept        []*Task
	// offerSets is offersFor's result; waitingBuf and dearLists View's
	// lists of offer lists, offeredBuf the offer sets it lists from;
	// readyBuf and dearBuf firstPayable's. All are reused from call to call.
	offerSets            []*offers
	readyBuf, waitingBuf [][]*Task
	dearLists            [][]*Task
	offeredBuf           []*offers
	dearBuf              []*Task
	// roleOffers are the offer sets by role and queue number (view_index.go);
	// queueIx numbers the world's queues (static).
	roleOffers map[string]*roleOffers
	queueIx    map[string]int
	// lists index the requests and messages views show (view_lists.go).
	lists viewLists
	// wakeIx indexes the members wakeServers may wake (wake_index.go).
	wakeIx wakeIndex
	busyIx busyIndex // availability records by member (meetings.go)
	// reopenable are the done cases a requester may reopen, by place in
	// Cases (Reopenable; derived).
	reopenable []*Case
	// byDoer files the cases each member did a step of, by place in Cases
	// (doerCases; derived).
	byDoer map[string][]*Case
	// ready are the open cases with a colleague's step ready, by place in
	// Cases (readyCases; derived).
	ready      []*Case
	caseMark   uint64 // counts the views that listed cases (Case.listed)
	wakeChecks int    // calls checkServers checked (tests)
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
	Failed     uint64     `json:"failed,omitempty"` // turns whose agent could not decide (turn.failed)
	// Rejected are the member's actions refused since its latest turn began;
	// its next observation shows them.
	Rejected []RejectedView `json:"rejected,omitempty"`
	// Results are the member's reads since its latest turn began (format
	// 2); its next observation shows them. Collateral counts its writes no
	// case asked for.
	Results    []ReadResult `json:"results,omitempty"`
	Collateral int          `json:"collateral,omitempty"`

	// def and team are the member's and its team's definitions in the
	// world, looked up once (State.defOf); looked is whether they were.
	def    *worlds.Member
	team   *worlds.Team
	budget *Budget
	looked bool
	// held are the tasks assigned to it and not done, in creation order
	// (a derived index, rebuilt by index(); see hold).
	held []*Task
	num  int // its place in State.Members (see Num)
}

// Num is m's place in its state's Members (the world's members in their
// order, which is by ID in a loaded world): a dense number from 0 that
// callers may index their own per-member records by. It is the same in
// every state of the world (restored, replayed or forked).
func (m *Member) Num() int { return m.num }

// Held returns the tasks assigned to m and not done, in creation order:
// State.Held of its ID. The slice is the state's; the caller must
// not change it.
func (m *Member) Held() []*Task { return m.held }

// defOf returns m's definition in the world (nil for none) and its team's
// (nil for none), found once per member and then kept: views ask for them
// at every turn, and the world does not change.
func (s *State) defOf(m *Member) (*worlds.Member, *worlds.Team) {
	s.look(m)
	return m.def, m.team
}

// budgetOf returns m's team's budget (nil for none), found once per member:
// the state's budgets are made with its members (New, Restore) and kept.
func (s *State) budgetOf(m *Member) *Budget {
	s.look(m)
	return m.budget
}

func (s *State) look(m *Member) {
	if m.looked {
		return
	}
	if w, ok := s.World.Member(m.ID); ok {
		m.def = w
	}
	m.team = s.World.Team(m.Team)
	m.budget = s.budgets[m.Team]
	m.looked = true
}

// Task kinds.
const (
	KindTask   = "task"   // part of a project in the world file
	KindTicket = "ticket" // brought by an arrival or an urgent interruption
)

// Task is a task's or a ticket's state. Spec is its definition: the world's
// for a project task, its event's for a ticket or a case step (made). Effort,
// Value and Priority start as the definition's and change with
// interruptions.
type Task struct {
	ord  int          // its place among all tasks ever created (creation order), for ordering views
	Spec *worlds.Task `json:"-"`
	// Def is the definition of a made task decoded from a snapshot, which
	// Restore turns into Spec; nil in a live state, where Spec alone holds
	// it (no second copy per ticket). See MarshalJSON.
	Def      *TicketDef     `json:"def,omitempty"`
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
	Case     string         `json:"case,omitempty"` // the case a step belongs to

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
	// qx is its queue's index (queueOf), looked up once.
	qx *queueIndex
	// verdict is the rubric's remembered verification (verify_memo.go).
	verdict verdict
	// dependents counts the tasks that list it as a dependency: the
	// length of State.dependents[ID], which views show at every turn.
	dependents int32
	retired    bool // it has retired (retire.go)
	// made is set for a task an event made (a ticket, a case step), whose
	// definition a snapshot lists ("def", TicketDef's keys), written from
	// Spec; a project task's is the world's and is not listed. (Beside
	// dependents and retired, it takes no room: a Task stays in the
	// 384-byte size class.)
	made bool
}

// Queue is a work queue's state.
type Queue struct {
	ID        string     `json:"id"`
	DownUntil clock.Time `json:"down_until,omitempty"` // an outage blocks it until then
}

// Down reports whether an outage blocks the queue at time now.
func (q *Queue) Down(now clock.Time) bool { return q.DownUntil > now }

// ArrivalState counts the tickets an arrival process has brought and says
// when it brings the next one (Next).
type ArrivalState struct {
	ID     string     `json:"id"`
	N      int        `json:"n"`
	NextAt clock.Time `json:"next_at"` // 0 alone when it brings no more
	// AtZero says the next ticket comes at time 0 (NextAt is 0); false
	// otherwise, so that the hashes of states without one are unchanged.
	AtZero bool `json:"at_zero,omitempty"`
}

// Next returns when the process brings its next ticket; ok is false when
// it brings no more.
func (a *ArrivalState) Next() (at clock.Time, ok bool) { return a.NextAt, a.NextAt != 0 || a.AtZero }

func (a *ArrivalState) setNext(at clock.Time, ok bool) {
	a.NextAt, a.AtZero = at, ok && at == 0
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

// RequestStep is one approval a request needs, as approval.requested
// records it and the request keeps it.
type RequestStep = payload.RequestStep

// Message is a message between members.
type Message struct {
	ID        string     `json:"id"`
	From      string     `json:"from"`
	To        string     `json:"to"`
	Text      string     `json:"text"`
	Topic     string     `json:"topic,omitempty"`
	ReplyTo   string     `json:"reply_to,omitempty"`
	Task      string     `json:"task,omitempty"` // the step it asks its NPC recipient to perform
	Answered  bool       `json:"answered,omitempty"`
	SentAt    clock.Time `json:"sent_at"`
	Delivered bool       `json:"delivered"`
}

// Budget is a team's money.
type Budget struct {
	Team    string `json:"team"`
	Initial int64  `json:"initial"`
	Spent   int64  `json:"spent"`

	before int64 // Spent before the latest spend (see Before); not part of the state
}

// Remaining is the money left.
func (b *Budget) Remaining() int64 { return b.Initial - b.Spent }

// Before is Spent as it was before the latest event that spent from b
// (work at an hourly rate, a purchase): what that event added is Spent -
// Before, which the amount spent does not give once Spent has saturated
// (AddSat). It is kept from the event applied; a state restored from a
// snapshot knows it from the first spend on.
func (b *Budget) Before() int64 { return b.before }

// spend adds amount to b's spending, saturating (AddSat), and remembers
// what it was (Before).
func (b *Budget) spend(amount int64) {
	b.before = b.Spent
	b.Spent = AddSat(b.Spent, amount)
}

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
		cases:      map[string]*Case{},
		records:    map[string]*Record{},
	}
	for i := range w.Members {
		m := &w.Members[i]
		sm := &Member{ID: m.ID, Role: m.Role, Team: m.Team, NPC: m.NPC != nil, num: len(s.Members)}
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
			s.list = append(s.list, t)
			s.tasks[t.ID] = t
		}
	}
	s.queueIx = make(map[string]int, len(w.Queues))
	for i, q := range w.Queues {
		s.queueIx[q.ID] = i
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
	s.indexMembers()
	s.roleServes = map[string][]bool{}
	for i, q := range w.Queues {
		for _, r := range q.ServedBy {
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
	s.forgetVerdicts()
	s.open = 0
	for _, m := range s.Members {
		m.held = nil
	}
	s.qs = make([]queueIndex, len(s.World.Queues)+1)
	for i := range s.qs {
		s.qs[i].num = i
		if i < len(s.Queues) {
			s.qs[i].q = s.Queues[i]
			s.qs[i].byPrio = s.World.Queues[i].Order == "priority"
		}
	}
	s.openTicketN = 0
	s.offers = map[offerKey]*offers{}
	s.roleOffers = map[string]*roleOffers{}
	s.lists = viewLists{}
	s.doneIn = map[string]int{}
	s.bulkOffers = true
	for i, t := range s.list {
		t.ord = i
		t.ix = offerPos{}
		t.qx = nil
		t.verdict = verdict{}
		s.track(t)
	}
	s.bulkOffers = false
	s.created = len(s.list)
	for _, o := range s.offers { // order: each list is sorted on its own
		slices.SortFunc(o.ready, readyCmp)
		slices.SortFunc(o.waiting, waitingCmp)
	}
}

// track adds a task to the derived indexes.
func (s *State) track(t *Task) {
	if t.Status == StatusDone {
		if !t.Hidden && t.Project != "" {
			s.doneIn[t.Project]++
		}
		return
	}
	q := s.queueOf(t)
	if !t.Hidden {
		q.shown++
	}
	s.offer(t)
	s.open++
	if t.Assignee != "" {
		if m := s.members[t.Assignee]; m != nil {
			m.hold(t)
		}
		q.claimed++
	}
	if t.Kind == KindTicket && t.Status == StatusOpen {
		s.enqueue(t)
		s.countOpen(t, 1)
	}
}

// countOpen adds n to the open tickets of t's queue at t's priority, and of its lane.
func (s *State) countOpen(t *Task, n int) {
	s.openTicketN += n
	q := s.queueOf(t)
	q.openN += n
	q.laneFor(t).n += n
}

// arrivedEarlier reports whether ticket a arrived before ticket b: by
// creation time, then by their order among all tasks.
func (s *State) arrivedEarlier(a, b *Task) bool {
	if a.Created != b.Created {
		return a.Created < b.Created
	}
	return a.ord < b.ord
}

// Held returns the tasks member holds (assigned, not done), in creation
// order (the order of State.Tasks, as views list them).
func (s *State) Held(member string) []*Task {
	if m := s.members[member]; m != nil {
		return m.held
	}
	return nil
}

// link resolves the tasks' dependencies to pointers, both ways.
func (s *State) link() {
	clear(s.dependents)
	for _, t := range s.list {
		t.dependents = 0
	}
	for _, t := range s.list {
		t.deps = t.deps[:0]
		for _, d := range t.Spec.Deps {
			dt := s.tasks[d]
			t.deps = append(t.deps, dt)
			s.dependents[d] = append(s.dependents[d], t)
			dt.dependents++
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
		if _, ok := a.Next(); ok {
			return false
		}
	}
	for _, f := range s.Fired {
		if !f {
			return false
		}
	}
	return s.open == 0 && !s.reopenPending() // kinds.go
}

// AgentsFailed reports whether the agents failed every turn they were
// asked: some agent seat was asked, and every turn of every agent seat
// asked so far ended in turn.failed (a timeout or an answer, even a
// malformed one, is not a failure of the backend). The engine ends such a
// session "agents_failed".
func (s *State) AgentsFailed() bool {
	if s.TurnErrors == 0 {
		return false
	}
	for _, m := range s.Members {
		if !m.NPC && m.Turn > 0 && m.Failed != m.Turn {
			return false
		}
	}
	return true
}

// hold adds t to what m holds, in creation order: what m holds, and so
// what a simulated colleague works on first, the tasks a handover
// violation names and the outcome a record created counts for, is the
// same in a state restored from a snapshot (which lists tasks, not the
// order they were taken in) as in the state that took them.
func (m *Member) hold(t *Task) {
	i := len(m.held)
	for i > 0 && m.held[i-1].ord > t.ord { // most often taken last-created: no move
		i--
	}
	m.held = slices.Insert(m.held, i, t)
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
func (s *State) TakeWoken() []*Member {
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
	s.woken = append(s.woken, m)
}

func (s *State) busy(m *Member, until clock.Time) {
	if until > m.BusyUntil {
		m.BusyUntil = until
	}
	m.Pending = true
	s.woken = append(s.woken, m)
}

// fire marks interruption i as happened; it reports false if it already had.
func (s *State) fire(i int) bool {
	if i < 0 || i >= len(s.Fired) || s.Fired[i] {
		return false
	}
	s.Fired[i] = true
	return true
}

// NPCServes reports whether member is a simulated colleague serving queue.
func (s *State) NPCServes(member, queue string) bool {
	m := s.members[member]
	return m != nil && s.npcServes(m, queue)
}

// npcServes reports whether m is a simulated colleague serving queue. Its
// definition is looked up once (defOf): this is asked for every idle
// colleague at every ticket.
func (s *State) npcServes(m *Member, queue string) bool {
	d, _ := s.defOf(m)
	return d != nil && d.NPC != nil && slices.Contains(d.NPC.Serves, queue)
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
	TurnErrors int             `json:"turn_errors,omitempty"` // omitted when 0: hashes of sessions without one are unchanged
	Cases      []*Case         `json:"cases,omitempty"`       // format 2; omitted when none, as above
	Records    []*Record       `json:"records,omitempty"`     // format 2 systems; omitted in worlds without
	Collateral int             `json:"collateral,omitempty"`
	// Format and Retired: from format 4 (retire.go); omitted before it, as above.
	Format  int             `json:"format,omitempty"`
	Retired *RetiredTickets `json:"retired,omitempty"`
}

func (s *State) snap() snapshot {
	return snapshot{s.Now, s.LastSeq, s.Ended, s.EndReason, s.Members, s.Tasks(), s.Requests, s.Messages, s.Budgets,
		s.Queues, s.Arrivals, s.Fired, s.Reward, s.Turns, s.Timeouts, s.Rejections, s.Violations, s.customLimits(), s.Dispatch, s.TurnErrors, s.Cases, s.Records, s.Collateral,
		s.retiringFormat(), s.Retired()}
}

// retiringFormat is the format a snapshot records: only one that retires.
func (s *State) retiringFormat() int {
	if s.Retiring() {
		return s.Format
	}
	return 0
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
	if err := segjson.Unmarshal(data, &sn); err != nil {
		return nil, fmt.Errorf("org: snapshot: %w", err)
	}
	s := New(w)
	if len(sn.Members) != len(s.Members) || len(sn.Tasks) < len(s.list) || len(sn.Budgets) != len(s.Budgets) ||
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
	static := len(s.list)
	for i, m := range sn.Members {
		if m == nil || m.ID != s.Members[i].ID {
			return nil, fmt.Errorf("org: snapshot member %d does not fit the world", i)
		}
		m.num = i
		s.Members[i] = m
		s.members[m.ID] = m
	}
	for i, t := range sn.Tasks {
		switch {
		case t == nil:
			return nil, fmt.Errorf("org: snapshot task %d is empty", i)
		case i < static:
			if t.ID != s.list[i].ID || t.Def != nil {
				return nil, fmt.Errorf("org: snapshot task %d does not fit the world", i)
			}
			t.Spec = s.list[i].Spec
			s.list[i] = t
		default:
			if t.Def == nil || t.Def.ID != t.ID || s.tasks[t.ID] != nil {
				return nil, fmt.Errorf("org: snapshot ticket %d is malformed", i)
			}
			t.Spec, t.Def, t.made = t.Def.task(), nil, true
			s.list = append(s.list, t)
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
	for _, c := range sn.Cases {
		if c == nil || s.cases[c.ID] != nil {
			return nil, errors.New("org: snapshot has a bad case")
		}
		for _, id := range c.Steps {
			if t := s.tasks[id]; t == nil || t.Case != c.ID {
				return nil, fmt.Errorf("org: snapshot case %s names step %q it does not hold", c.ID, id)
			}
		}
		s.fileCase(c)
	}
	s.Cases = sn.Cases
	for _, r := range sn.Records {
		if r == nil || s.records[recordKey(r.Type, r.ID)] != nil {
			return nil, errors.New("org: snapshot has a bad record")
		}
		if _, ok := w.RecordType(r.Type); !ok {
			return nil, fmt.Errorf("org: snapshot record %s of unknown type %q", r.ID, r.Type)
		}
		s.records[recordKey(r.Type, r.ID)] = r
	}
	s.Records, s.Collateral = sn.Records, sn.Collateral
	s.link()
	s.index()
	for i, c := range s.Cases {
		c.num = i
		s.fileReopenable(c)
		s.deriveCase(c)
	}
	s.Requests, s.Messages = sn.Requests, sn.Messages
	s.Now, s.LastSeq, s.Ended, s.EndReason = sn.Now, sn.LastSeq, sn.Ended, sn.EndReason
	s.Turns, s.Timeouts, s.Rejections, s.Violations, s.Reward = sn.Turns, sn.Timeouts, sn.Rejections, sn.Violations, sn.Reward
	s.TurnErrors = sn.TurnErrors
	if sn.Retired != nil && sn.Format < RetiringFormat {
		return nil, errors.New("org: snapshot has retired tickets but no format that retires them")
	}
	s.Format = sn.Format
	if err := s.restoreRetired(sn.Retired); err != nil {
		return nil, err
	}
	return s, nil
}
