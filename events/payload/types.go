package payload

import (
	"slices"

	"github.com/corpsim/corpsim/clock"
)

// Event types. Every change to a State is one of these.
const (
	EvSessionStarted    = "session.started"
	EvSessionEnded      = "session.ended"
	EvTurn              = "turn"
	EvTurnTimeout       = "turn.timeout"
	EvTurnFailed        = "turn.failed"
	EvActionRejected    = "action.rejected"
	EvMemberWaiting     = "member.waiting"
	EvTaskClaimed       = "task.claimed"
	EvWorkStarted       = "work.started"
	EvWorkFinished      = "work.finished"
	EvTaskCompleted     = "task.completed"
	EvApprovalRequested = "approval.requested"
	EvApprovalGranted   = "approval.granted"
	EvApprovalRejected  = "approval.rejected"
	EvMessageSent       = "message.sent"
	EvMessageDelivered  = "message.delivered"
	EvTaskCreated       = "task.created"
	EvTaskHandedOff     = "task.handed_off"
	EvProjectStarted    = "project.started"
	EvTaskReprioritized = "task.reprioritized"
	EvTaskChanged       = "task.changed"
	EvMemberLeft        = "member.left"
	EvMemberReturned    = "member.returned"
	EvQueueDown         = "queue.down"
	EvQueueUp           = "queue.up"
	EvApprovalEscalated = "approval.escalated"
	EvSLABreached       = "sla.breached"
	EvReward            = "reward"
	// EvCaseOpened opens a case (format 2): an instance of a case
	// template, with its attributes, its hidden facts and the steps that
	// apply to it.
	EvCaseOpened = "case.opened"
	// EvRecordRead is a get or search of records (format 2): the results
	// reach the member in its next observation, computed from the state.
	EvRecordRead = "record.read"
	// EvRecordWritten is an update, create or delete of a record, with the
	// values before and after (format 2).
	EvRecordWritten = "record.written"
	// EvCaseDecided is a member's decision on a case step it holds (kinds.go).
	EvCaseDecided = "case.decided"
	// EvCaseReopened is a requester NPC reopening a case closed with an
	// outcome unmet: the unmet steps become new tasks (kinds.go).
	EvCaseReopened = "case.reopened"
	// EvMeetingScheduled is a meeting booked for a case step (format 2,
	// meetings.go).
	EvMeetingScheduled = "meeting.scheduled"
	// EvTicketServed is a simulated colleague taking the next ticket of its
	// queues and starting on it (format 3): what a format-2 log records as
	// its turn, task.claimed and work.started.
	EvTicketServed = "ticket.served"
	// EvTicketResolved is a simulated colleague's last stint on a ticket
	// ending with the ticket done (format 3): what a format-2 log records as
	// work.finished, its turn and task.completed; from format 5, with the
	// colleague's next step (TicketResolved.Then).
	EvTicketResolved = "ticket.resolved"
)

// SLABreached records that a ticket was still open when its deadline passed.
type SLABreached struct {
	Task string `json:"task"`
	// Case is the case whose SLA passed (format 2; Task is then "").
	Case string `json:"case,omitempty"`
}

// Reward is a dense reward: the change of the team's score (and of each
// member's credit) caused by the events since the previous reward. Over a
// session the Team deltas add up to the terminal team score.
type Reward struct {
	Team    float64            `json:"team"`
	Members map[string]float64 `json:"members,omitempty"`
	Rubric  string             `json:"rubric"`
}

// SessionStarted opens every log. Format is the log's format (LogFormat
// when this package wrote it; 0 in a log of format 1, which did not
// record it).
type SessionStarted struct {
	Format    int           `json:"format,omitempty"`
	World     string        `json:"world"`
	WorldFile string        `json:"world_file"`
	WorldHash string        `json:"world_hash"`
	Seed      uint64        `json:"seed"`
	Load      float64       `json:"load"`
	Source    string        `json:"source"`             // the world file itself, so a log replays without it
	Arrivals  []ArrivalNext `json:"arrivals,omitempty"` // when each arrival process brings its first ticket
	Limits    Limits        `json:"limits,omitzero"`    // the session's limits; zero fields are the defaults
	// WorldLimits are the world budgets the session was started with
	// where raised above the defaults.
	WorldLimits WorldLimits `json:"world_limits,omitzero"`
	// DrawKey, when set (format 8 and later), is what the session's draws
	// are made with besides the seed (worlds.NewDraws): NewDrawKey of the
	// operator's secret and the seed. The log keeps it so that replay,
	// forks and resumes draw what the session drew without the secret;
	// it must not reach the agents (the operator's events endpoints only).
	DrawKey []byte `json:"draw_key,omitempty"`
}

// ArrivalNext says when an arrival process brings its first ticket. "at": 0
// alone means never (as logs have always written it); a first ticket at
// time 0 itself is "at": 0 with "at_zero": true, so that the logs of
// worlds without one are what they were. Use NextArrival and Next rather
// than the fields.
type ArrivalNext struct {
	Arrival string     `json:"arrival"`
	At      clock.Time `json:"at"`
	AtZero  bool       `json:"at_zero,omitempty"` // the first ticket comes at time 0 (At is 0)
}

// NextArrival is the ArrivalNext of arrival id whose first ticket comes at
// at, or never when ok is false.
func NextArrival(id string, at clock.Time, ok bool) ArrivalNext {
	if !ok {
		return ArrivalNext{Arrival: id}
	}
	return ArrivalNext{Arrival: id, At: at, AtZero: at == 0}
}

// Next returns when the first ticket comes; ok is false when it never does.
func (a *ArrivalNext) Next() (at clock.Time, ok bool) { return a.At, a.At != 0 || a.AtZero }

// TaskCreated brings a ticket. Interruption is the index of the urgent
// interruption that brought it, or -1.
type TaskCreated struct {
	Task     TaskSpec   `json:"task"`
	Queue    string     `json:"queue"`
	Team     string     `json:"team"`
	Deadline clock.Time `json:"deadline,omitempty"`
	Arrival  string     `json:"arrival,omitempty"`
	NextAt   clock.Time `json:"next_at,omitempty"` // the arrival's next ticket; 0 alone when it is done
	// NextAtZero says that the arrival's next ticket comes at time 0 (NextAt
	// is 0): written only then, so that logs without one are what they
	// were. Use SetNext and Next rather than the fields.
	NextAtZero   bool `json:"next_at_zero,omitempty"`
	Interruption int  `json:"interruption"`
}

// SetNext records when the arrival's next ticket comes (at), or that it
// brings no more (ok false).
func (p *TaskCreated) SetNext(at clock.Time, ok bool) {
	if !ok {
		p.NextAt, p.NextAtZero = 0, false
		return
	}
	p.NextAt, p.NextAtZero = at, at == 0
}

// Next returns when the arrival's next ticket comes; ok is false when it
// brings no more (or the ticket came from no arrival).
func (p *TaskCreated) Next() (at clock.Time, ok bool) { return p.NextAt, p.NextAt != 0 || p.NextAtZero }

// TaskSpec is a ticket's definition as task.created records it: the stored
// form of a world's task, converted from and to it by package org
// (org.TaskSpecOf). Log format 1 stored the world's struct itself,
// keyed by its Go field names ("ID", "Title", …).
type TaskSpec struct {
	ID       string         `json:"id"`
	Title    string         `json:"title"`
	Role     string         `json:"role"`               // the role allowed to do it
	Effort   clock.Duration `json:"effort"`             // working time
	Deps     []string       `json:"deps,omitempty"`     // tasks it waits on (tickets have none)
	Value    float64        `json:"value"`              // what completing it earns
	Purchase int64          `json:"purchase,omitempty"` // money it spends when completed
	Chain    string         `json:"chain,omitempty"`    // the approval chain that governs the purchase
	Skill    string         `json:"skill,omitempty"`    // a skill the worker needs besides the role
	Priority int            `json:"priority,omitempty"` // higher is more urgent
	Info     *InfoSpec      `json:"info,omitempty"`     // information that must be asked for before completion
	// Case and Step name the case and the template's step a step task is
	// (format 2; empty for tasks and tickets).
	Case string `json:"case,omitempty"`
	Step string `json:"step,omitempty"`
	// Amount is what a case step's approval thresholds read (its chain's
	// attribute, or its charge); Purchase is what completing it charges.
	Amount int64 `json:"amount,omitempty"`
	// NPC is the NPC who performs a case step when asked.
	NPC string `json:"npc,omitempty"`
}

// InfoSpec is information a task needs that one member holds and gives when asked.
type InfoSpec struct {
	From  string `json:"from"`
	Topic string `json:"topic"`
}

// TaskHandedOff gives a held task back to its queue (To empty) or to a colleague.
type TaskHandedOff struct {
	Task      string     `json:"task"`
	To        string     `json:"to,omitempty"`
	BusyUntil clock.Time `json:"busy_until"`
}

// ProjectStarted makes a project's tasks visible.
type ProjectStarted struct {
	Project string `json:"project"`
}

// InterruptionFired is embedded in events that an interruption of the world caused.
type InterruptionFired struct {
	Interruption int    `json:"interruption"` // index in the world's interruptions
	Note         string `json:"note,omitempty"`
}

// TaskReprioritized changes a task's value or priority.
type TaskReprioritized struct {
	InterruptionFired
	Task     string   `json:"task"`
	Value    *float64 `json:"value,omitempty"`
	Priority *int     `json:"priority,omitempty"`
}

// TaskChanged adds effort to a task whose requirements changed.
type TaskChanged struct {
	InterruptionFired
	Task   string         `json:"task"`
	Effort clock.Duration `json:"effort"`
}

// MemberLeft starts a member's leave.
type MemberLeft struct {
	InterruptionFired
	Until    clock.Time `json:"until"`
	Delegate string     `json:"delegate,omitempty"`
}

// QueueDown starts an outage of a queue.
type QueueDown struct {
	InterruptionFired
	Queue string     `json:"queue"`
	Until clock.Time `json:"until"`
}

// QueueUp ends an outage.
type QueueUp struct {
	Queue string `json:"queue"`
}

// ApprovalEscalated moves a request's current step to another approver.
type ApprovalEscalated struct {
	Request string `json:"request"`
	Step    int    `json:"step"`
	From    string `json:"from"`
	To      string `json:"to"`
	Reason  string `json:"reason"` // "timeout", "leave", "delegate_limit" (on leave, past the delegate's limit: to the fallback) or "requested" (by the requester)
	// BusyUntil is the requester's, when it asked for the escalation.
	BusyUntil clock.Time `json:"busy_until,omitempty"`
}

// SessionEnded closes a log. StateHash is the hash of the state after every
// event before this one.
type SessionEnded struct {
	Reason    string `json:"reason"`
	StateHash string `json:"state_hash"`
}

// Turn records what a member answered when asked to decide, and that its
// turn has begun: it is busy until BusyUntil. Its effects follow, caused by it.
type Turn struct {
	Turn      uint64     `json:"turn"`
	Seen      uint64     `json:"seen"` // the last seq of the state the member observed
	Actions   []Action   `json:"actions"`
	BusyUntil clock.Time `json:"busy_until"`
	// InboxRead is how many inbox messages the observation delivered when
	// it was paged (the inbox held more than the session's limit); 0: all.
	InboxRead int `json:"inbox_read,omitempty"`
}

// TurnTimeout records that a member did not answer within its budget.
type TurnTimeout struct {
	Turn uint64 `json:"turn"`
	Seen uint64 `json:"seen"`
}

// TurnFailed records that a member's agent could not decide: its backend
// failed (a model endpoint that cannot be reached or answers an error) and
// said why. Like a timeout, the turn passes with no actions.
type TurnFailed struct {
	Turn   uint64 `json:"turn"`
	Seen   uint64 `json:"seen"`
	Reason string `json:"reason"`
}

// ActionRejected records an action that was refused; state is unchanged.
type ActionRejected struct {
	Index  int    `json:"index"` // position in the turn's actions; -1 for the whole reply
	Action Action `json:"action"`
	Kind   string `json:"kind"` // malformed, unknown, state or policy
	Rule   string `json:"rule,omitempty"`
	Reason string `json:"reason"`
}

// MemberWaiting records that a member sleeps until something it can see
// changes (Until zero) or until Until. Seen is set when a simulated
// colleague waits without a turn event (format 3): the last seq it had
// seen when it decided to, which a turn records otherwise.
type MemberWaiting struct {
	Until clock.Time `json:"until,omitempty"`
	Seen  uint64     `json:"seen,omitempty"`
}

// TicketServed is a simulated colleague claiming a ticket and starting
// Work on it, which ends at Until (format 3). Seen is the last seq it had
// seen when it decided to: it takes no turn event.
type TicketServed struct {
	Task  string         `json:"task"`
	Work  clock.Duration `json:"work"`
	Until clock.Time     `json:"until"`
	Seen  uint64         `json:"seen"`
}

// TicketResolved is the end of the stint of Work a simulated colleague
// held a ticket's last effort in, with the ticket done (format 3). The
// actor is the colleague.
//
// From format 5 it also carries the colleague's next step when the
// colleague took it at once, on the state this event leaves and with no
// event between: the ticket.served or member.waiting that followed it in
// format 4, seen this event's seq. Next is the ticket it then takes from
// its queue and works NextWork on until NextUntil; or Waits: it waits
// until NextUntil, or, NextUntil 0, until something it can see changes.
// The step's cause is this event. A resolve without them is followed by
// whatever the colleague did, as in format 4.
type TicketResolved struct {
	Task      string         `json:"task"`
	Work      clock.Duration `json:"work"`
	Next      string         `json:"next,omitempty"`
	NextWork  clock.Duration `json:"next_work,omitempty"`
	Waits     bool           `json:"waits,omitempty"`
	NextUntil clock.Time     `json:"next_until,omitempty"`
}

// Then reports whether p carries its colleague's next step (format 5).
func (p *TicketResolved) Then() bool { return p.Next != "" || p.Waits }

// Served is the ticket.served payload of p's next step when it serves a
// ticket, seen at seq (the resolve's own).
func (p *TicketResolved) Served(seq uint64) (TicketServed, bool) {
	return TicketServed{Task: p.Next, Work: p.NextWork, Until: p.NextUntil, Seen: seq}, p.Next != ""
}

// Waiting is the member.waiting payload of p's next step when it waits,
// seen at seq (the resolve's own).
func (p *TicketResolved) Waiting(seq uint64) (MemberWaiting, bool) {
	return MemberWaiting{Until: p.NextUntil, Seen: seq}, p.Waits
}

// TaskClaimed assigns a task to the actor.
type TaskClaimed struct {
	Task      string     `json:"task"`
	BusyUntil clock.Time `json:"busy_until"`
}

// WorkStarted begins work on a task; it finishes at Until.
type WorkStarted struct {
	Task  string         `json:"task"`
	Work  clock.Duration `json:"work"`
	Until clock.Time     `json:"until"`
}

// WorkFinished adds the work to the task's spent effort.
type WorkFinished struct {
	Task string         `json:"task"`
	Work clock.Duration `json:"work"`
}

// TaskCompleted marks a task done and spends its purchase.
type TaskCompleted struct {
	Task      string     `json:"task"`
	BusyUntil clock.Time `json:"busy_until"`
}

// ApprovalRequested opens an approval request; Steps are routed to approvers.
type ApprovalRequested struct {
	Request   string        `json:"request"`
	Task      string        `json:"task"`
	Chain     string        `json:"chain"`
	Amount    int64         `json:"amount"`
	Steps     []RequestStep `json:"steps"`
	BusyUntil clock.Time    `json:"busy_until"`
}

// ApprovalDecided grants or rejects the current step of a request.
type ApprovalDecided struct {
	Request   string     `json:"request"`
	Step      int        `json:"step"`
	Reason    string     `json:"reason,omitempty"`
	BusyUntil clock.Time `json:"busy_until"`
}

// MessageSent puts a message on its way; it is delivered at DeliverAt.
type MessageSent struct {
	Message   string     `json:"message"`
	To        string     `json:"to"`
	Text      string     `json:"text"`
	Topic     string     `json:"topic,omitempty"`    // information the message gives (NPCs' answers)
	ReplyTo   string     `json:"reply_to,omitempty"` // the message it answers
	Task      string     `json:"task,omitempty"`     // the step it asks its NPC recipient to perform (format 2)
	DeliverAt clock.Time `json:"deliver_at"`
	BusyUntil clock.Time `json:"busy_until"`
}

// MessageDelivered puts a sent message in its recipient's inbox.
type MessageDelivered struct {
	Message string `json:"message"`
}

// Action is one thing a member does, as an agent sends it and as turn and
// action.rejected record it. Which fields matter depends on Type; the
// types are package org's (org.ActClaim, …), which aliases this type as
// org.Action.
type Action struct {
	Type    string `json:"type"`
	Task    string `json:"task,omitempty"`
	Request string `json:"request,omitempty"`
	To      string `json:"to,omitempty"`
	Text    string `json:"text,omitempty"`
	Reason  string `json:"reason,omitempty"`
	For     string `json:"for,omitempty"`      // a duration such as "2h" for work and wait
	Until   int64  `json:"until,omitempty"`    // for wait: sleep until this simulated time
	ReplyTo string `json:"reply_to,omitempty"` // for message: the message it answers
	Topic   string `json:"topic,omitempty"`    // for message: information given (only colleagues who hold it)
	// Template and Attributes are open_case's: the case template and the
	// attributes the member gives (the rest are drawn).
	Template   string      `json:"template,omitempty"`
	Attributes ActionAttrs `json:"attributes,omitzero"`
	// Record, ID, Fields and Page are the record tools' (get, search,
	// update, create, delete): the record type, the record's id, the
	// field values to write (or, for search, to match), and the page of
	// results. Fields are kept as canonical JSON like Attributes.
	Record string      `json:"record,omitempty"`
	ID     string      `json:"id,omitempty"`
	Fields ActionAttrs `json:"fields,omitzero"`
	Page   int         `json:"page,omitempty"`
	// Option is decide's: the option chosen on the step (Task). Case is
	// reopen_case's, which only a case's requester NPC does.
	Option string `json:"option,omitempty"`
	Case   string `json:"case,omitempty"`
	// Attendees and Start are schedule_meeting's (meetings.go): who is
	// invited and when it starts (RFC 3339); For is its length.
	Attendees Names  `json:"attendees,omitzero"`
	Start     string `json:"start,omitempty"`
}

// RequestStep is one approval a request needs: as approval.requested
// records it (Role, Approver, Delegated) and as the request's state keeps
// it (org.RequestStep aliases it).
type RequestStep struct {
	Role      string     `json:"role"`
	Approver  string     `json:"approver"`
	Status    string     `json:"status"`
	DecidedAt clock.Time `json:"decided_at,omitempty"`
	Since     clock.Time `json:"since,omitempty"`     // when the current approver got it
	Escalated int        `json:"escalated,omitempty"` // times it moved to another approver
	Delegated bool       `json:"delegated,omitempty"` // routed to a stand-in for role holders on leave
}

// Types are all the event types, sorted: what `corpsim log --type` and the
// other filters accept.
var Types = []string{
	EvActionRejected, EvApprovalEscalated, EvApprovalGranted, EvApprovalRejected, EvApprovalRequested,
	EvCaseDecided, EvCaseOpened, EvCaseReopened, EvMeetingScheduled, EvMemberLeft, EvMemberReturned, EvMemberWaiting, EvMessageDelivered, EvMessageSent,
	EvProjectStarted, EvQueueDown, EvQueueUp, EvRecordRead, EvRecordWritten, EvReward, EvSessionEnded, EvSessionStarted,
	EvSLABreached, EvTaskChanged, EvTaskClaimed, EvTaskCompleted, EvTaskCreated, EvTaskHandedOff,
	EvTaskReprioritized, EvTicketResolved, EvTicketServed, EvTurn, EvTurnFailed, EvTurnTimeout, EvWorkFinished, EvWorkStarted,
}

// KnownType reports whether t is one of Types.
func KnownType(t string) bool {
	_, ok := slices.BinarySearch(Types, t)
	return ok
}
