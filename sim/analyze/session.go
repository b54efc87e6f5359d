package analyze

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

// Errors of the package.
var (
	ErrNotASession = errors.New("analyze: the log does not begin with session.started")
	ErrUnknown     = errors.New("no such task, member, project or case")
	ErrMismatch    = errors.New("analyze: replayed state hash differs from the recorded one")
)

// Session is a session's log, loaded for analysis: its events, the world
// they were recorded in, and the state after the last one. It is immutable
// once loaded and safe for concurrent reads.
type Session struct {
	// ID is the session that stored the last event (for a fork with events
	// of its own, the fork); callers may set it to the session they read.
	ID     string
	World  *worlds.World
	State  *org.State     // after the last event
	Events []events.Event // Events[i].Seq == i+1
	// Seed is the seed session.started recorded (the root session's, for a
	// fork); callers may set the fork's own from its metadata.
	Seed uint64
	// Agents (member -> agent kind) and the fork's parent and fork point
	// come from the session's metadata, not its log: callers set them.
	Agents  map[string]string
	Parent  string
	ForkSeq uint64

	payloads []any // decoded payload of each event (nil for types without one)
	// after maps a turn whose recorded cause its member had already seen
	// (the turn came due because its previous action ended) to the
	// member's latest event before it.
	after  map[uint64]uint64
	seen   map[string]uint64 // member -> Seen of its latest turn (while loading)
	lastOf map[string]uint64 // member -> seq of its latest event other than a turn (while loading)

	tasks     map[string]*taskIx // task (or project, for created) -> what the events say of it
	lastIx    *taskIx            // the entry of tasks last looked up by ix, and its key
	lastID    string
	approvals map[string][]*Approval // task -> its approval requests, in order
	requests  map[string]*Approval   // request id -> approval
	leaves    map[string][]Leave     // member -> leaves, in order
	outages   map[string][]Outage    // queue -> outages, in order
	caseSeq   map[string]uint64      // case -> seq of its case.opened
	breachSeq map[string]uint64      // case -> seq of its sla.breached
	asks      map[string][]uint64    // NPC step -> seqs of the messages asking its NPC to perform it
	askOf     map[string]string      // message asking an NPC to perform a step -> the step
	answers   map[string][]uint64    // NPC step -> seqs of the NPC's replies to those asks
	endHash   string                 // hex state hash before session.ended, checked against the recorded one
	content   contentIndex           // what reads returned and completions saw (format 2 systems, outcomes.go)
	// byMember maps a member to its holds, made by the first trace that
	// asks (heldBy).
	byMember     map[string]*memberHolds
	byMemberOnce sync.Once
}

// Load reads a whole session's events (in seq order, from seq 1; a fork's
// prefix included), loads the world recorded in session.started and applies
// every event to a fresh state. An event that does not apply is an error,
// as is a read error of the sequence.
func Load(evs iter.Seq2[events.Event, error]) (*Session, error) {
	return LoadWith(evs, LoadOptions{})
}

// LoadOptions are what LoadWith may be told besides the events.
type LoadOptions struct {
	// Events is how many events the log holds (its last seq), when the
	// caller knows: the session's lists of events and payloads are made
	// that long at once instead of grown and copied as they fill. 0: not
	// known.
	Events uint64
	// Observe, when set, is called with each event just after it was
	// applied to the session's State, with its payload as the analysis
	// decoded it (nil for the types it does not decode), before the next
	// event is read: another pass over the events (a report) rides on this
	// one instead of applying every event to a state of its own. s is the
	// session being loaded: its World and State are set, its indexes are
	// not complete. An error stops the load and is returned.
	Observe func(s *Session, ev *events.Event, typed any) error
}

// maxEventsHint bounds what LoadOptions.Events may make at once, so that a
// wrong count cannot ask for more memory than the events themselves: past
// it the lists grow as they fill.
const maxEventsHint = 1 << 24

// LoadWith is Load, told what o says.
func LoadWith(evs iter.Seq2[events.Event, error], o LoadOptions) (*Session, error) {
	s := &Session{tasks: map[string]*taskIx{}, approvals: map[string][]*Approval{},
		requests: map[string]*Approval{}, leaves: map[string][]Leave{}, outages: map[string][]Outage{},
		after: map[uint64]uint64{}, seen: map[string]uint64{}, lastOf: map[string]uint64{},
		caseSeq: map[string]uint64{}, breachSeq: map[string]uint64{}, asks: map[string][]uint64{}, askOf: map[string]string{}, answers: map[string][]uint64{}}
	if n := min(o.Events, maxEventsHint); n > 0 {
		s.Events, s.payloads = make([]events.Event, 0, n), make([]any, 0, n)
	}
	for ev, err := range evs {
		if err != nil {
			return nil, err
		}
		if s.State == nil {
			if ev.Seq != 1 || ev.Type != payload.EvSessionStarted {
				return nil, fmt.Errorf("%w (first event is seq %d, %s)", ErrNotASession, ev.Seq, ev.Type)
			}
			var p payload.SessionStarted
			if err := json.Unmarshal(ev.Payload, &p); err != nil {
				return nil, fmt.Errorf("analyze: session.started: %w", err)
			}
			w, _, err := sim.RecordedWorld(&p)
			if err != nil {
				return nil, fmt.Errorf("analyze: %w", err)
			}
			s.World, s.State, s.Seed = w, org.New(w), p.Seed
			s.State.SetJudge(policies.Judge)
			s.State.KeepRetired() // an analysis reads every ticket
		}
		p, err := decodePayload(ev)
		if err != nil {
			return nil, err
		}
		if end, ok := p.(*payload.SessionEnded); ok {
			h := s.State.Hash()
			if s.endHash = hex.EncodeToString(h[:]); s.endHash != end.StateHash {
				return nil, fmt.Errorf("%w: at seq %d the log records %s, its events rebuild %s", ErrMismatch, ev.Seq, end.StateHash, s.endHash)
			}
		}
		if err := s.State.ApplyWith(ev, p); err != nil { // decoded once
			return nil, fmt.Errorf("analyze: %w", err)
		}
		s.ID = ev.Session
		s.Events = append(s.Events, ev)
		s.payloads = append(s.payloads, p)
		s.index(ev, p)
		s.indexContent(ev)
		if o.Observe != nil {
			if err := o.Observe(s, &s.Events[len(s.Events)-1], p); err != nil {
				return nil, err
			}
		}
		if decodedAgain(ev.Type) {
			s.payloads[len(s.payloads)-1] = nil
		}
	}
	if s.State == nil {
		return nil, fmt.Errorf("%w (the log is empty)", ErrNotASession)
	}
	s.seen, s.lastOf, s.lastIx = nil, nil, nil // loaded: read-only from here on
	s.close()
	return s, nil
}

// decodePayload decodes the payload of the event types analysis looks into.
func decodePayload(ev events.Event) (any, error) {
	switch ev.Type {
	case payload.EvTurnFailed:
		return decodeAs[payload.TurnFailed](&ev)
	case payload.EvTaskClaimed:
		return decodeAs[payload.TaskClaimed](&ev)
	case payload.EvWorkStarted:
		return decodeAs[payload.WorkStarted](&ev)
	case payload.EvWorkFinished:
		return decodeAs[payload.WorkFinished](&ev)
	case payload.EvTaskCompleted:
		return decodeAs[payload.TaskCompleted](&ev)
	case payload.EvTicketServed:
		return decodeAs[payload.TicketServed](&ev)
	case payload.EvTicketResolved:
		return decodeAs[payload.TicketResolved](&ev)
	case payload.EvTaskHandedOff:
		return decodeAs[payload.TaskHandedOff](&ev)
	case payload.EvApprovalRequested:
		return decodeAs[payload.ApprovalRequested](&ev)
	case payload.EvApprovalGranted, payload.EvApprovalRejected:
		return decodeAs[payload.ApprovalDecided](&ev)
	case payload.EvApprovalEscalated:
		return decodeAs[payload.ApprovalEscalated](&ev)
	case payload.EvMemberLeft:
		return decodeAs[payload.MemberLeft](&ev)
	case payload.EvQueueDown:
		return decodeAs[payload.QueueDown](&ev)
	case payload.EvQueueUp:
		return decodeAs[payload.QueueUp](&ev)
	case payload.EvTaskReprioritized:
		return decodeAs[payload.TaskReprioritized](&ev)
	case payload.EvTaskChanged:
		return decodeAs[payload.TaskChanged](&ev)
	case payload.EvTaskCreated:
		return decodeAs[payload.TaskCreated](&ev)
	case payload.EvProjectStarted:
		return decodeAs[payload.ProjectStarted](&ev)
	case payload.EvSLABreached:
		return decodeAs[payload.SLABreached](&ev)
	case payload.EvCaseOpened:
		return decodeAs[payload.CaseOpened](&ev)
	case payload.EvActionRejected:
		return decodeAs[payload.ActionRejected](&ev)
	case payload.EvTurn:
		return decodeAs[payload.Turn](&ev)
	case payload.EvMessageSent:
		return decodeAs[payload.MessageSent](&ev)
	case payload.EvMessageDelivered:
		return decodeAs[payload.MessageDelivered](&ev)
	case payload.EvSessionEnded:
		return decodeAs[payload.SessionEnded](&ev)
	case payload.EvReward:
		return decodeAs[payload.Reward](&ev)
	case payload.EvMemberWaiting:
		return decodeAs[payload.MemberWaiting](&ev)
	}
	return nil, nil
}

// decodeAs decodes ev's payload as a T, by the payload package's decoder
// (fastjson for the hot types, as replay does), and returns it as a *T.
func decodeAs[T any](ev *events.Event) (any, error) {
	if v, ok := payload.Decode(ev).(T); ok {
		return &v, nil
	}
	var v T // not decoded: encoding/json says why
	if err := json.Unmarshal(ev.Payload, &v); err != nil {
		return nil, fmt.Errorf("analyze: seq %d (%s): %w", ev.Seq, ev.Type, err)
	}
	return &v, nil
}

// Event returns the event with seq, or false.
func (s *Session) Event(seq uint64) (events.Event, bool) {
	if seq == 0 || seq > uint64(len(s.Events)) {
		return events.Event{}, false
	}
	return s.Events[seq-1], true
}

// decodedAgain reports whether a session keeps the events of type typ
// without their decoded payloads, which payload decodes again when asked:
// a ticket's life (created, served, resolved), most of a long session's
// events, whose decoded payloads were a third of the memory an event took
// here. What they say, the state's tasks and the index keep; the readers
// that walk every payload (diagnose, member traces, diff) look for other
// types.
func decodedAgain(typ string) bool {
	return typ == payload.EvTaskCreated || typ == payload.EvTicketServed || typ == payload.EvTicketResolved
}

// payload returns the decoded payload of the event with seq (nil for the
// types analysis does not decode), decoding again one the session does
// not keep (decodedAgain).
func (s *Session) payload(seq uint64) any {
	if p := s.payloads[seq-1]; p != nil {
		return p
	}
	if ev := s.Events[seq-1]; decodedAgain(ev.Type) {
		if p, err := decodePayload(ev); err == nil { // LoadWith decoded it once: it cannot fail now
			return p
		}
	}
	return nil
}

// Stamp is an instant of the session: simulated milliseconds and the wall
// clock on the world's calendar.
type Stamp struct {
	Seq  uint64     `json:"seq,omitempty"` // the event that marks it, 0 if none
	Time clock.Time `json:"time"`
	Wall string     `json:"wall"` // RFC 3339
}

// HumanLayout is how Human writes an instant.
const HumanLayout = "Mon 2006-01-02 15:04"

// Human writes the stamp's wall-clock instant for people: "Mon 2026-01-05 09:00".
func (st Stamp) Human() string {
	t, err := time.Parse(time.RFC3339, st.Wall)
	if err != nil {
		return st.Wall
	}
	return t.Format(HumanLayout)
}

func (s *Session) stamp(seq uint64, t clock.Time) Stamp {
	return Stamp{Seq: seq, Time: t, Wall: s.World.Calendar.Wall(t).Format(time.RFC3339)}
}

func (s *Session) stampOf(seq uint64) Stamp {
	ev, _ := s.Event(seq)
	return s.stamp(seq, clock.Time(ev.Time))
}

// Work is a span of working time on the world's calendar.
type Work struct {
	MS   clock.Duration `json:"ms"`
	Text string         `json:"text"` // e.g. "2d1h30m" (a day is the calendar's working day)
}

func (s *Session) work(a, b clock.Time) Work {
	if b <= a {
		return s.dur(0)
	}
	return s.dur(s.World.Calendar.WorkBetween(a, b))
}

func (s *Session) dur(d clock.Duration) Work {
	return Work{MS: d, Text: FormatWork(d, s.World.Calendar.DayLength())}
}

// FormatWork writes a working-time duration with working days: "2d1h30m",
// "45m", "0m"; a day is dayLen (durations finer than a minute are dropped).
func FormatWork(d, dayLen clock.Duration) string {
	if d <= 0 {
		return "0m"
	}
	var b strings.Builder
	if dayLen > 0 && d >= dayLen {
		fmt.Fprintf(&b, "%dd", d/dayLen)
		d %= dayLen
	}
	if h := d / clock.Hour; h > 0 {
		fmt.Fprintf(&b, "%dh", h)
		d %= clock.Hour
	}
	if m := d / clock.Minute; m > 0 || b.Len() == 0 {
		fmt.Fprintf(&b, "%dm", m)
	}
	return b.String()
}

// EndHandedBack is how a hold ends when its member hands the task back to
// its queue (Hold.End).
const EndHandedBack = "handed back to the queue"

// Hold is a span during which a member held a task.
type Hold struct {
	Member string `json:"member"`
	From   Stamp  `json:"from"`
	To     *Stamp `json:"to,omitempty"` // nil: still held at the end of the log
	End    string `json:"end"`          // "completed", "handed back to the queue", "handed to X", "held at the end"
	Held   Work   `json:"held"`
}

type stint struct {
	start, finish uint64 // seqs; finish 0 if unfinished
	member        string
	work          clock.Duration
}

// Leave is a member's leave.
type Leave struct {
	Member   string `json:"member"`
	Delegate string `json:"delegate,omitempty"`
	From     Stamp  `json:"from"`
	Until    Stamp  `json:"until"`              // as planned when it began
	Returned *Stamp `json:"returned,omitempty"` // nil: still away at the end of the log
}

// Outage is a queue's outage.
type Outage struct {
	Queue string `json:"queue"`
	From  Stamp  `json:"from"`
	Until Stamp  `json:"until"`
	Up    *Stamp `json:"up,omitempty"`
}

// Approval is an approval request and how each step travelled.
type Approval struct {
	Request   string         `json:"request"`
	Task      string         `json:"task"`
	Requester string         `json:"requester"`
	Amount    int64          `json:"amount"`
	Requested Stamp          `json:"requested"`
	Status    string         `json:"status"` // pending, approved or rejected at the end of the log
	Steps     []ApprovalStep `json:"steps"`
}

// ApprovalStep is one step of a request: the approvers it sat with, in turn.
type ApprovalStep struct {
	Step  int            `json:"step"` // 0-based, as in the events
	Role  string         `json:"role"`
	Holds []ApprovalHold `json:"holds"`
}

// ApprovalHold is a span during which a step sat with one approver.
type ApprovalHold struct {
	Request   string `json:"request"`
	Task      string `json:"task"`
	Requester string `json:"requester"`
	Step      int    `json:"step"`
	Role      string `json:"role"`
	Approver  string `json:"approver"`
	Via       string `json:"via"` // "routed", "routed to a stand-in", or "escalated (timeout|leave|requested)"
	From      Stamp  `json:"from"`
	To        *Stamp `json:"to,omitempty"` // nil: still waiting at the end of the log
	End       string `json:"end"`          // "granted", "rejected", "escalated to X", "waiting at the end"
	Waited    Work   `json:"waited"`
	// OnLeave is the approver's (first) leave overlapping the span, if any.
	OnLeave *Leave `json:"on_leave,omitempty"`
	// LeaveWait is the working time of the span the approver was away (all its leaves).
	LeaveWait Work `json:"leave_wait"`
}

// standIn says why a step went to approver as a stand-in: the leave of
// the member it stands in for, at now.
func (s *Session) standIn(approver string, now clock.Time) string {
	for _, m := range s.State.Members {
		for _, l := range s.leaves[m.ID] {
			if l.Delegate == approver && l.From.Time <= now && (l.Returned == nil || l.Returned.Time > now) {
				return fmt.Sprintf("routed to a stand-in, for %s on leave from %s until %s (member.left #%d)",
					m.ID, l.From.Human(), l.Until.Human(), l.From.Seq)
			}
		}
	}
	return "routed to a stand-in"
}

// taskIx is what a session's events say of one task: who held it, its
// work stints, the event that created it (for a project, the one that
// started it) and the events about it or its approval requests. One entry
// per task, so that indexing an event looks its task up once.
type taskIx struct {
	holds   []hold
	stints  []stint
	created uint64
	about   []uint64
}

// ix returns id's entry, made if there is none; while loading, index
// reaches every entry through it, so that the events about one task look
// it up once (an entry made empty changes no answer).
func (s *Session) ix(id string) *taskIx {
	if s.lastIx != nil && s.lastID == id {
		return s.lastIx
	}
	x := s.tasks[id]
	if x == nil {
		x = &taskIx{}
		s.tasks[id] = x
	}
	s.lastIx, s.lastID = x, id
	return x
}

// hold is who held a task from one event to another, as the index keeps
// it: a Hold without the wall-clock text, which holds writes out when a
// trace shows it.
type hold struct {
	member     string
	from, to   uint64     // seqs; to is 0 for a hold that lasted to the end of the log
	fromT, toT clock.Time // their times
	end        string     // how it ended; "" with to 0
}

// spans returns who held task id, in order, as the index keeps it.
func (s *Session) spans(id string) []hold {
	if x := s.tasks[id]; x != nil {
		return x.holds
	}
	return nil
}

// holds returns who held task id, in order, written out.
func (s *Session) holds(id string) []Hold {
	hs := s.spans(id)
	if len(hs) == 0 {
		return nil
	}
	out := make([]Hold, len(hs))
	for i, h := range hs {
		out[i] = s.writeOut(h)
	}
	return out
}

// writeOut returns h as a Hold.
func (s *Session) writeOut(h hold) Hold {
	out := Hold{Member: h.member, From: s.stamp(h.from, h.fromT), End: h.end}
	if h.to == 0 {
		out.End, out.Held = "held at the end", s.work(h.fromT, s.State.Now)
		return out
	}
	to := s.stamp(h.to, h.toT)
	out.To, out.Held = &to, s.work(h.fromT, h.toT)
	return out
}

// stintsOf returns task id's work stints, in order.
func (s *Session) stintsOf(id string) []stint {
	if x := s.tasks[id]; x != nil {
		return x.stints
	}
	return nil
}

// createdSeq returns the seq of the event that created task id (started
// project id), or 0.
func (s *Session) createdSeq(id string) uint64 {
	if x := s.tasks[id]; x != nil {
		return x.created
	}
	return 0
}

// aboutOf returns the seqs of the events about task id or its approval
// requests.
func (s *Session) aboutOf(id string) []uint64 {
	if x := s.tasks[id]; x != nil {
		return x.about
	}
	return nil
}

// index records what ev says about holds, stints, approvals, leaves and outages.
func (s *Session) index(ev events.Event, p any) {
	now := clock.Time(ev.Time)
	// The event's stamp, written out (its wall clock) only for the few
	// indexes that keep one: a task's holds keep seqs and times.
	stamp := func() *Stamp {
		st := s.stamp(ev.Seq, now)
		return &st
	}
	opened := func(member string) hold { return hold{member: member, from: ev.Seq, fromT: now} }
	closeHold := func(task, end string) {
		hs := s.ix(task).holds
		if n := len(hs); n > 0 && hs[n-1].to == 0 {
			hs[n-1].to, hs[n-1].toT, hs[n-1].end = ev.Seq, now, end
		}
	}
	closeStep := func(a *Approval, step int, end string) {
		if step < 0 || step >= len(a.Steps) {
			return
		}
		hs := a.Steps[step].Holds
		if n := len(hs); n > 0 && hs[n-1].To == nil {
			hs[n-1].To, hs[n-1].End = stamp(), end
		}
	}
	openStep := func(a *Approval, step int, approver, via string) {
		if step < 0 || step >= len(a.Steps) {
			return
		}
		a.Steps[step].Holds = append(a.Steps[step].Holds, ApprovalHold{Request: a.Request, Task: a.Task, Requester: a.Requester, Step: step, Role: a.Steps[step].Role,
			Approver: approver, Via: via, From: *stamp()})
	}
	switch p := p.(type) {
	case *payload.Turn:
		if ev.Cause != 0 && ev.Cause <= s.seen[ev.Actor] && s.lastOf[ev.Actor] != 0 {
			s.after[ev.Seq] = s.lastOf[ev.Actor]
		}
		s.seen[ev.Actor] = p.Seen
	case *payload.TaskClaimed:
		x := s.ix(p.Task)
		x.holds = append(x.holds, opened(ev.Actor))
	case *payload.MemberWaiting:
		if p.Seen > 0 { // a colleague's wait without a turn (format 3)
			s.seen[ev.Actor] = p.Seen
		}
	case *payload.TicketServed: // task.claimed and work.started
		s.seen[ev.Actor] = p.Seen
		x := s.ix(p.Task)
		x.holds = append(x.holds, opened(ev.Actor))
		x.stints = append(x.stints, stint{start: ev.Seq, member: ev.Actor, work: p.Work})
	case *payload.TicketResolved: // work.finished and task.completed
		if ss := s.ix(p.Task).stints; len(ss) > 0 {
			ss[len(ss)-1].finish = ev.Seq
		}
		closeHold(p.Task, "completed")
		if p.Then() { // and the colleague's next step (format 5), seen at this event
			s.seen[ev.Actor] = ev.Seq
		}
		if p.Next != "" {
			x := s.ix(p.Next)
			x.holds = append(x.holds, opened(ev.Actor))
			x.stints = append(x.stints, stint{start: ev.Seq, member: ev.Actor, work: p.NextWork})
		}
	case *payload.TaskHandedOff:
		if p.To == "" {
			closeHold(p.Task, EndHandedBack)
		} else {
			closeHold(p.Task, "handed to "+p.To)
			x := s.ix(p.Task)
			x.holds = append(x.holds, opened(p.To))
		}
	case *payload.TaskCompleted:
		closeHold(p.Task, "completed")
	case *payload.WorkStarted:
		x := s.ix(p.Task)
		x.stints = append(x.stints, stint{start: ev.Seq, member: ev.Actor, work: p.Work})
	case *payload.WorkFinished:
		if ss := s.ix(p.Task).stints; len(ss) > 0 {
			ss[len(ss)-1].finish = ev.Seq
		}
	case *payload.ApprovalRequested:
		a := &Approval{Request: p.Request, Task: p.Task, Requester: ev.Actor, Amount: p.Amount, Requested: *stamp(), Status: org.RequestPending}
		for i, step := range p.Steps {
			a.Steps = append(a.Steps, ApprovalStep{Step: i, Role: step.Role})
		}
		via := "routed"
		if len(p.Steps) > 0 && p.Steps[0].Delegated {
			via = s.standIn(p.Steps[0].Approver, now)
		}
		if len(p.Steps) > 0 {
			openStep(a, 0, p.Steps[0].Approver, via)
		}
		s.approvals[p.Task] = append(s.approvals[p.Task], a)
		s.requests[p.Request] = a
	case *payload.ApprovalDecided:
		a := s.requests[p.Request]
		if a == nil {
			break
		}
		if ev.Type == payload.EvApprovalRejected {
			closeStep(a, p.Step, "rejected")
			a.Status = org.RequestRejected
			break
		}
		closeStep(a, p.Step, "granted")
		if r := s.State.Request(p.Request); r != nil && p.Step+1 < len(r.Steps) {
			via := "routed"
			if r.Steps[p.Step+1].Delegated {
				via = s.standIn(r.Steps[p.Step+1].Approver, now)
			}
			openStep(a, p.Step+1, r.Steps[p.Step+1].Approver, via)
		} else {
			a.Status = org.RequestApproved
		}
	case *payload.ApprovalEscalated:
		if a := s.requests[p.Request]; a != nil {
			closeStep(a, p.Step, "escalated to "+p.To)
			openStep(a, p.Step, p.To, "escalated ("+p.Reason+")")
		}
	case *payload.MemberLeft:
		s.leaves[ev.Actor] = append(s.leaves[ev.Actor], Leave{Member: ev.Actor, Delegate: p.Delegate, From: *stamp(), Until: s.stamp(0, p.Until)})
	case *payload.QueueDown:
		s.outages[p.Queue] = append(s.outages[p.Queue], Outage{Queue: p.Queue, From: *stamp(), Until: s.stamp(0, p.Until)})
	case *payload.QueueUp:
		if outs := s.outages[p.Queue]; len(outs) > 0 {
			outs[len(outs)-1].Up = stamp()
		}
	case *payload.TaskCreated:
		s.ix(p.Task.ID).created = ev.Seq
	case *payload.ProjectStarted:
		s.ix(p.Project).created = ev.Seq
	case *payload.CaseOpened:
		s.caseSeq[p.Case] = ev.Seq
		for i := range p.Steps {
			s.ix(p.Steps[i].ID).created = ev.Seq
		}
	case *payload.SLABreached:
		if p.Case != "" {
			s.breachSeq[p.Case] = ev.Seq
		}
	case *payload.MessageSent:
		if p.Task != "" {
			s.asks[p.Task] = append(s.asks[p.Task], ev.Seq)
			s.askOf[p.Message] = p.Task
		} else if task := s.askOf[p.ReplyTo]; task != "" {
			s.answers[task] = append(s.answers[task], ev.Seq)
		}
	}
	if next := nextOf(p); next != "" {
		x := s.ix(next)
		x.about = append(x.about, ev.Seq)
	}
	if task := taskOf(p); task != "" {
		x := s.ix(task)
		x.about = append(x.about, ev.Seq)
	} else if r := s.requests[requestOf(p)]; r != nil {
		x := s.ix(r.Task)
		x.about = append(x.about, ev.Seq)
	}
	if ev.Actor != "" && ev.Type != payload.EvTurn && ev.Type != payload.EvTurnTimeout && ev.Type != payload.EvTurnFailed && ev.Type != payload.EvReward {
		s.lastOf[ev.Actor] = ev.Seq
	}
	if ev.Type == payload.EvMemberReturned {
		if ls := s.leaves[ev.Actor]; len(ls) > 0 {
			ls[len(ls)-1].Returned = stamp()
		}
	}
}

// close finishes the indexes once every event is in: open spans end at the
// end of the log, and approval spans learn the approver's leave.
func (s *Session) close() {
	end := s.State.Now
	for _, a := range s.requests {
		for si := range a.Steps {
			for hi := range a.Steps[si].Holds {
				h := &a.Steps[si].Holds[hi]
				to := end
				if h.To != nil {
					to = h.To.Time
				} else {
					h.End = "waiting at the end"
				}
				h.Waited = s.work(h.From.Time, to)
				var away clock.Duration
				for _, l := range s.leaves[h.Approver] {
					back := end
					if l.Returned != nil {
						back = l.Returned.Time
					}
					from, until := max(l.From.Time, h.From.Time), min(back, to)
					if until > from {
						if h.OnLeave == nil {
							h.OnLeave = &l
						}
						away += s.World.Calendar.WorkBetween(from, until)
					}
				}
				h.LeaveWait = s.dur(away)
			}
		}
	}
}

// unknown is ErrUnknown for the kind of thing named id, with the names
// the session knows of that kind (the first dozen, sorted, and how many
// more) so that a typo can be mended.
func unknown(kind, id string, known []string) error {
	if len(known) == 0 {
		return fmt.Errorf("%w: %s %q (the session has none)", ErrUnknown, kind, id)
	}
	known = slices.Sorted(slices.Values(known))
	const most = 12
	list := strings.Join(known[:min(len(known), most)], ", ")
	if n := len(known) - most; n > 0 {
		list += fmt.Sprintf(", and %d more", n)
	}
	return fmt.Errorf("%w: %s %q (the session's: %s)", ErrUnknown, kind, id, list)
}
