package payload

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload/fastjson"
)

// As returns ev's payload as a T: typed itself when it is a T (the value
// the engine just encoded the event from), otherwise decoded from the
// event's JSON. Live code passes the value and skips the decoding; replay
// passes nil.
func As[T any](ev *events.Event, typed any) (T, error) {
	if v, ok := typed.(T); ok {
		return v, nil
	}
	if p, ok := typed.(*T); ok && p != nil {
		return *p, nil // the engine passes its hot payloads by pointer, unboxed
	}
	var v T
	err := json.Unmarshal(ev.Payload, &v)
	return v, err
}

// decoders decode each event type's payload into its value type.
var decoders = map[string]func([]byte) (any, error){
	EvSessionStarted:    decodeTo[SessionStarted],
	EvSessionEnded:      decodeTo[SessionEnded],
	EvTurn:              decodeTo[Turn],
	EvTurnTimeout:       decodeTo[TurnTimeout],
	EvTurnFailed:        decodeTo[TurnFailed],
	EvActionRejected:    decodeTo[ActionRejected],
	EvMemberWaiting:     decodeTo[MemberWaiting],
	EvTaskHandedOff:     decodeTo[TaskHandedOff],
	EvTaskClaimed:       decodeTo[TaskClaimed],
	EvWorkStarted:       decodeTo[WorkStarted],
	EvTicketServed:      decodeTo[TicketServed],
	EvTicketResolved:    decodeTo[TicketResolved],
	EvWorkFinished:      decodeTo[WorkFinished],
	EvTaskCompleted:     decodeTo[TaskCompleted],
	EvApprovalRequested: decodeTo[ApprovalRequested],
	EvApprovalGranted:   decodeTo[ApprovalDecided],
	EvApprovalRejected:  decodeTo[ApprovalDecided],
	EvMessageSent:       decodeTo[MessageSent],
	EvMessageDelivered:  decodeTo[MessageDelivered],
	EvSLABreached:       decodeTo[SLABreached],
	EvReward:            decodeTo[Reward],
	EvProjectStarted:    decodeTo[ProjectStarted],
	EvTaskReprioritized: decodeTo[TaskReprioritized],
	EvTaskChanged:       decodeTo[TaskChanged],
	EvMemberLeft:        decodeTo[MemberLeft],
	EvQueueDown:         decodeTo[QueueDown],
	EvQueueUp:           decodeTo[QueueUp],
	EvApprovalEscalated: decodeTo[ApprovalEscalated],
	EvTaskCreated:       decodeTo[TaskCreated],
	EvCaseOpened:        decodeTo[CaseOpened],
	EvRecordRead:        decodeTo[RecordRead],
	EvRecordWritten:     decodeTo[RecordWritten],
	EvCaseDecided:       decodeTo[CaseDecided],
	EvCaseReopened:      decodeTo[CaseReopened],
	EvMeetingScheduled:  decodeTo[MeetingScheduled],
}

func decodeTo[T any](b []byte) (any, error) {
	var v T
	err := json.Unmarshal(b, &v)
	return v, err
}

// Decode decodes ev's payload into the value type of its event type,
// once, for replay to hand to org's ApplyWith and to everything else that
// reads the event (timers, rewards) instead of each decoding it again. It
// returns nil for a type without a payload type (member.returned), or a
// payload that does not decode (Apply then reports the event with its own
// error).
func Decode(ev *events.Event) any { return decode(ev, nil) }

// DecodeReuse is Decode for a caller that is done with the payload before
// it decodes the next one (replay applies each event and moves on): the
// payloads of a ticket's life are decoded into r, and returned as pointers
// to r's copy (*T, which As reads as a T), valid until the next
// DecodeReuse with r. Nothing is allocated for them but their strings and
// lists, which are the payload's own. Other payloads are values, as Decode
// returns them.
func DecodeReuse(ev *events.Event, r *Reuse) any { return decode(ev, r) }

func decode(ev *events.Event, r *Reuse) any {
	if len(ev.Payload) == 0 {
		return nil
	}
	if v, ok := fastDecode(ev.Type, ev.Payload, r); ok {
		return v
	}
	dec := decoders[ev.Type]
	if dec == nil {
		return nil
	}
	v, err := dec(ev.Payload)
	if err != nil {
		return nil
	}
	return v
}

// fastDecoders read the payloads of a ticket's life (the bulk of a long
// log) without reflection. Each reads exactly what Append writes (any key
// order, no unknown or repeated keys); anything else fails and Decode falls
// back to encoding/json, so the result is always what json.Unmarshal gives
// (decode_test.go checks both on random payloads).
var fastDecoders = map[string]fastDecoder{
	EvTurn: fast(func(r *Reuse) *Turn { return &r.turn }, func(d *fastjson.Decoder, p *Turn) bool {
		return d.Object(func(key []byte) (uint32, bool) {
			switch string(key) {
			case "turn":
				return 1 << 0, d.Uint64(&p.Turn)
			case "seen":
				return 1 << 1, d.Uint64(&p.Seen)
			case "actions":
				return 1 << 2, d.Array(func() { p.Actions = []Action{} }, func() bool {
					p.Actions = append(p.Actions, Action{})
					return DecodeAction(d, &p.Actions[len(p.Actions)-1])
				})
			case "busy_until":
				return 1 << 3, d.Int64((*int64)(&p.BusyUntil))
			case "inbox_read":
				return 1 << 4, d.Int(&p.InboxRead)
			}
			return 0, false
		})
	}),
	EvTaskCreated: fast(func(r *Reuse) *TaskCreated { return &r.created }, func(d *fastjson.Decoder, p *TaskCreated) bool {
		return d.Object(func(key []byte) (uint32, bool) {
			switch string(key) {
			case "task":
				return 1 << 0, decodeTaskSpec(d, &p.Task)
			case "queue":
				return 1 << 1, d.Str(&p.Queue)
			case "team":
				return 1 << 2, d.Str(&p.Team)
			case "deadline":
				return 1 << 3, d.Int64((*int64)(&p.Deadline))
			case "arrival":
				return 1 << 4, d.Str(&p.Arrival)
			case "next_at":
				return 1 << 5, d.Int64((*int64)(&p.NextAt))
			case "interruption":
				return 1 << 6, d.Int(&p.Interruption)
			case "next_at_zero":
				return 1 << 7, d.Bool(&p.NextAtZero)
			}
			return 0, false
		})
	}),
	EvTaskClaimed: fast(func(r *Reuse) *TaskClaimed { return &r.claimed }, func(d *fastjson.Decoder, p *TaskClaimed) bool {
		return taskAnd(d, &p.Task, "busy_until", (*int64)(&p.BusyUntil))
	}),
	EvTaskCompleted: fast(func(r *Reuse) *TaskCompleted { return &r.completed }, func(d *fastjson.Decoder, p *TaskCompleted) bool {
		return taskAnd(d, &p.Task, "busy_until", (*int64)(&p.BusyUntil))
	}),
	EvWorkFinished: fast(func(r *Reuse) *WorkFinished { return &r.finished }, func(d *fastjson.Decoder, p *WorkFinished) bool {
		return taskAnd(d, &p.Task, "work", (*int64)(&p.Work))
	}),
	EvWorkStarted: fast(func(r *Reuse) *WorkStarted { return &r.started }, func(d *fastjson.Decoder, p *WorkStarted) bool {
		return d.Object(func(key []byte) (uint32, bool) {
			return stintKey(d, key, &p.Task, (*int64)(&p.Work), (*int64)(&p.Until))
		})
	}),
	EvMemberWaiting: fast(func(r *Reuse) *MemberWaiting { return &r.waiting }, func(d *fastjson.Decoder, p *MemberWaiting) bool {
		return d.Object(func(key []byte) (uint32, bool) {
			switch string(key) {
			case "until":
				return 1 << 0, d.Int64((*int64)(&p.Until))
			case "seen":
				return 1 << 1, d.Uint64(&p.Seen)
			}
			return 0, false
		})
	}),
	EvTicketServed: fast(func(r *Reuse) *TicketServed { return &r.served }, func(d *fastjson.Decoder, p *TicketServed) bool {
		return d.Object(func(key []byte) (uint32, bool) {
			if string(key) == "seen" {
				return 1 << 3, d.Uint64(&p.Seen)
			}
			return stintKey(d, key, &p.Task, (*int64)(&p.Work), (*int64)(&p.Until))
		})
	}),
	EvTicketResolved: fast(func(r *Reuse) *TicketResolved { return &r.resolved }, func(d *fastjson.Decoder, p *TicketResolved) bool {
		return d.Object(func(key []byte) (uint32, bool) {
			switch string(key) {
			case "task":
				return 1 << 0, d.Str(&p.Task)
			case "work":
				return 1 << 1, d.Int64((*int64)(&p.Work))
			case "next":
				return 1 << 2, d.Str(&p.Next)
			case "next_work":
				return 1 << 3, d.Int64((*int64)(&p.NextWork))
			case "waits":
				return 1 << 4, d.Bool(&p.Waits)
			case "next_until":
				return 1 << 5, d.Int64((*int64)(&p.NextUntil))
			}
			return 0, false
		})
	}),
}

// A fastDecoder reads a payload into a new value (r nil) or into its slot
// of r, returning a pointer to it.
type fastDecoder func(d *fastjson.Decoder, r *Reuse) (any, bool)

// fast makes the fastDecoder of a T read by dec, whose slot in a Reuse is
// pick's. Without a Reuse the value is returned as a T, as Decode promises.
func fast[T any](pick func(*Reuse) *T, dec func(d *fastjson.Decoder, p *T) bool) fastDecoder {
	return func(d *fastjson.Decoder, r *Reuse) (any, bool) {
		if r == nil {
			p := new(T)
			ok := dec(d, p)
			return *p, ok
		}
		p := pick(r)
		var zero T
		*p = zero
		return p, dec(d, p)
	}
}

// Reuse holds one payload of each type of a ticket's life, for
// DecodeReuse. It is not safe for concurrent use.
type Reuse struct {
	turn      Turn
	created   TaskCreated
	claimed   TaskClaimed
	completed TaskCompleted
	finished  WorkFinished
	started   WorkStarted
	waiting   MemberWaiting
	served    TicketServed
	resolved  TicketResolved
	// dec reads every payload decoded with this Reuse: one goroutine's,
	// its interned strings warm from event to event.
	dec fastjson.Decoder
}

// stintKey reads the value of key, one of a stint's "task", "work" and
// "until" (bits 0–2), or returns 0 for another key.
func stintKey(d *fastjson.Decoder, key []byte, task *string, work, until *int64) (uint32, bool) {
	switch string(key) {
	case "task":
		return 1 << 0, d.Str(task)
	case "work":
		return 1 << 1, d.Int64(work)
	case "until":
		return 1 << 2, d.Int64(until)
	}
	return 0, false
}

// taskAnd reads {"task": …, key: n}.
func taskAnd(d *fastjson.Decoder, task *string, key string, n *int64) bool {
	return d.Object(func(k []byte) (uint32, bool) {
		switch string(k) {
		case "task":
			return 1 << 0, d.Str(task)
		case key:
			return 1 << 1, d.Int64(n)
		}
		return 0, false
	})
}

// decodeTaskSpec reads a TaskSpec.
func decodeTaskSpec(d *fastjson.Decoder, t *TaskSpec) bool {
	return d.Object(func(key []byte) (uint32, bool) {
		switch string(key) {
		case "id":
			return 1 << 0, d.Str(&t.ID)
		case "title":
			return 1 << 1, d.Str(&t.Title)
		case "role":
			return 1 << 2, d.Str(&t.Role)
		case "effort":
			return 1 << 3, d.Int64((*int64)(&t.Effort))
		case "deps":
			return 1 << 4, d.Array(func() { t.Deps = []string{} }, func() bool {
				t.Deps = append(t.Deps, "")
				return d.Str(&t.Deps[len(t.Deps)-1])
			})
		case "value":
			return 1 << 5, d.Float64(&t.Value)
		case "purchase":
			return 1 << 6, d.Int64(&t.Purchase)
		case "chain":
			return 1 << 7, d.Str(&t.Chain)
		case "skill":
			return 1 << 8, d.Str(&t.Skill)
		case "priority":
			return 1 << 9, d.Int(&t.Priority)
		case "info":
			return 1 << 10, decodeInfoSpec(d, &t.Info)
		}
		return 0, false
	})
}

func decodeInfoSpec(d *fastjson.Decoder, p **InfoSpec) bool {
	if d.Literal("null") {
		*p = nil
		return true
	}
	v := &InfoSpec{}
	*p = v
	return d.Object(func(key []byte) (uint32, bool) {
		switch string(key) {
		case "from":
			return 1 << 0, d.Str(&v.From)
		case "topic":
			return 1 << 1, d.Str(&v.Topic)
		}
		return 0, false
	})
}

// DecodeAction reads an Action (or null) at d's position, as json.Unmarshal
// would into *a; it fails on what json.Marshal would not have written (see
// fastjson.Decoder). The agent protocol's observation decoder uses it for
// the actions an observation shows.
func DecodeAction(d *fastjson.Decoder, a *Action) bool {
	return d.Object(func(key []byte) (uint32, bool) {
		switch string(key) {
		case "type":
			return 1 << 0, d.Str(&a.Type)
		case "task":
			return 1 << 1, d.Str(&a.Task)
		case "request":
			return 1 << 2, d.Str(&a.Request)
		case "to":
			return 1 << 3, d.Str(&a.To)
		case "text":
			return 1 << 4, d.Str(&a.Text)
		case "reason":
			return 1 << 5, d.Str(&a.Reason)
		case "for":
			return 1 << 6, d.Str(&a.For)
		case "until":
			return 1 << 7, d.Int64(&a.Until)
		case "reply_to":
			return 1 << 8, d.Str(&a.ReplyTo)
		case "topic":
			return 1 << 9, d.Str(&a.Topic)
		}
		return 0, false
	})
}

// fastDecode decodes data with the fast decoder of typ; ok is false when
// there is none or it does not read data.
func fastDecode(typ string, data []byte, r *Reuse) (v any, ok bool) {
	dec := fastDecoders[typ]
	if dec == nil {
		return nil, false
	}
	if r != nil {
		d := &r.dec
		d.Reset(data)
		v, ok = dec(d, r)
		return v, d.End() && ok
	}
	d := lastDecoder.Swap(nil)
	if d == nil {
		d = decoderPool.Get().(*fastjson.Decoder)
	}
	d.Reset(data)
	v, ok = dec(d, r)
	ok = d.End() && ok
	if !lastDecoder.CompareAndSwap(nil, d) {
		decoderPool.Put(d)
	}
	return v, ok
}

var decoderPool = sync.Pool{New: func() any { return new(fastjson.Decoder) }}

// lastDecoder is a one-slot cache in front of decoderPool for fastDecode
// without a Reuse (which has a decoder of its own): a reader decoding
// payloads one after the other on one goroutine pays two atomic swaps
// instead of the pool's Get and Put, and finds its interned strings warm.
var lastDecoder atomic.Pointer[fastjson.Decoder]

// TeamReward is the team's reward in ev when it is a reward event (0 for
// any other event): its payload's "team", what a session's team score is
// the sum of. A reward that does not decode is an error.
func TeamReward(ev *events.Event) (float64, error) {
	if ev.Type != EvReward {
		return 0, nil
	}
	r, err := As[Reward](ev, nil)
	if err != nil {
		return 0, fmt.Errorf("payload: reward at seq %d: %w", ev.Seq, err)
	}
	return r.Team, nil
}
