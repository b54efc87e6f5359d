package org

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/worlds"
)

// AppendPayload appends the JSON encoding of an event payload to dst. The
// payloads the engine emits most (a ticket's life: task.created, turn,
// task.claimed, work.started, work.finished, task.completed,
// member.waiting, reward) have hand-written encoders; every other value goes
// through encoding/json. The bytes are exactly json.Marshal's, so a log does
// not depend on which path wrote it (codec_test.go checks this).
func AppendPayload(dst []byte, payload any) ([]byte, error) {
	switch p := payload.(type) {
	case TaskCreated:
		if p.Task.Info == nil {
			return p.appendJSON(dst), nil
		}
	case *TaskCreated:
		if p.Task.Info == nil {
			return p.appendJSON(dst), nil
		}
	case Turn:
		return p.appendJSON(dst), nil
	case *Turn:
		return p.appendJSON(dst), nil
	case TaskClaimed:
		return appendTaskTime(dst, p.Task, `,"busy_until":`, int64(p.BusyUntil)), nil
	case *TaskClaimed:
		return appendTaskTime(dst, p.Task, `,"busy_until":`, int64(p.BusyUntil)), nil
	case TaskCompleted:
		return appendTaskTime(dst, p.Task, `,"busy_until":`, int64(p.BusyUntil)), nil
	case *TaskCompleted:
		return appendTaskTime(dst, p.Task, `,"busy_until":`, int64(p.BusyUntil)), nil
	case WorkFinished:
		return appendTaskTime(dst, p.Task, `,"work":`, int64(p.Work)), nil
	case *WorkFinished:
		return appendTaskTime(dst, p.Task, `,"work":`, int64(p.Work)), nil
	case WorkStarted:
		return p.appendJSON(dst), nil
	case *WorkStarted:
		return p.appendJSON(dst), nil
	case MemberWaiting:
		return p.appendJSON(dst), nil
	case *MemberWaiting:
		return p.appendJSON(dst), nil
	case Reward:
		if out, ok := p.appendJSON(dst); ok {
			return out, nil
		}
	}
	b, err := json.Marshal(payload)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// PayloadAs returns ev's payload as a T: typed itself when it is a T (the
// value the engine just encoded the event from), otherwise decoded from the
// event's JSON. Live code passes the value and skips the decoding; replay
// passes nil.
func PayloadAs[T any](ev *events.Event, typed any) (T, error) {
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

func (p *WorkStarted) appendJSON(dst []byte) []byte {
	dst = appendTaskTime(dst, p.Task, `,"work":`, int64(p.Work))
	dst = append(dst[:len(dst)-1], `,"until":`...)
	return append(strconv.AppendInt(dst, int64(p.Until), 10), '}')
}

func (p *MemberWaiting) appendJSON(dst []byte) []byte {
	if p.Until == 0 {
		return append(dst, "{}"...)
	}
	dst = append(dst, `{"until":`...)
	return append(strconv.AppendInt(dst, int64(p.Until), 10), '}')
}

func appendTaskTime(dst []byte, task, key string, n int64) []byte {
	dst = append(dst, `{"task":`...)
	dst = appendString(dst, task)
	dst = append(dst, key...)
	return append(strconv.AppendInt(dst, n, 10), '}')
}

func (p *TaskCreated) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"task":`...)
	dst = appendTask(dst, &p.Task)
	dst = append(dst, `,"queue":`...)
	dst = appendString(dst, p.Queue)
	dst = append(dst, `,"team":`...)
	dst = appendString(dst, p.Team)
	if p.Deadline != 0 {
		dst = append(dst, `,"deadline":`...)
		dst = strconv.AppendInt(dst, int64(p.Deadline), 10)
	}
	if p.Arrival != "" {
		dst = append(dst, `,"arrival":`...)
		dst = appendString(dst, p.Arrival)
	}
	if p.NextAt != 0 {
		dst = append(dst, `,"next_at":`...)
		dst = strconv.AppendInt(dst, int64(p.NextAt), 10)
	}
	dst = append(dst, `,"interruption":`...)
	dst = strconv.AppendInt(dst, int64(p.Interruption), 10)
	return append(dst, '}')
}

// appendTask encodes a task spec without Info (worlds.Task has no JSON tags:
// its keys are the field names).
func appendTask(dst []byte, t *worlds.Task) []byte {
	dst = append(dst, `{"ID":`...)
	dst = appendString(dst, t.ID)
	dst = append(dst, `,"Title":`...)
	dst = appendString(dst, t.Title)
	dst = append(dst, `,"Role":`...)
	dst = appendString(dst, t.Role)
	dst = append(dst, `,"Effort":`...)
	dst = strconv.AppendInt(dst, int64(t.Effort), 10)
	dst = append(dst, `,"Deps":`...)
	if t.Deps == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, d := range t.Deps {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, d)
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"Value":`...)
	dst = appendFloat(dst, t.Value)
	dst = append(dst, `,"Purchase":`...)
	dst = strconv.AppendInt(dst, t.Purchase, 10)
	dst = append(dst, `,"Chain":`...)
	dst = appendString(dst, t.Chain)
	dst = append(dst, `,"Skill":`...)
	dst = appendString(dst, t.Skill)
	dst = append(dst, `,"Priority":`...)
	dst = strconv.AppendInt(dst, int64(t.Priority), 10)
	return append(dst, `,"Info":null}`...)
}

func (p *Turn) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"turn":`...)
	dst = strconv.AppendUint(dst, p.Turn, 10)
	dst = append(dst, `,"seen":`...)
	dst = strconv.AppendUint(dst, p.Seen, 10)
	dst = append(dst, `,"actions":`...)
	if p.Actions == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range p.Actions {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = p.Actions[i].appendJSON(dst)
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"busy_until":`...)
	dst = strconv.AppendInt(dst, int64(p.BusyUntil), 10)
	if p.InboxRead != 0 {
		dst = append(dst, `,"inbox_read":`...)
		dst = strconv.AppendInt(dst, int64(p.InboxRead), 10)
	}
	return append(dst, '}')
}

func (a *Action) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"type":`...)
	dst = appendString(dst, a.Type)
	opt := func(key, v string) {
		if v != "" {
			dst = append(dst, key...)
			dst = appendString(dst, v)
		}
	}
	opt(`,"task":`, a.Task)
	opt(`,"request":`, a.Request)
	opt(`,"to":`, a.To)
	opt(`,"text":`, a.Text)
	opt(`,"reason":`, a.Reason)
	opt(`,"for":`, a.For)
	if a.Until != 0 {
		dst = append(dst, `,"until":`...)
		dst = strconv.AppendInt(dst, a.Until, 10)
	}
	opt(`,"reply_to":`, a.ReplyTo)
	opt(`,"topic":`, a.Topic)
	return append(dst, '}')
}

// appendJSON encodes a reward; ok is false for a value encoding/json refuses
// (a NaN or infinite figure), which the caller then reports.
func (p *Reward) appendJSON(dst []byte) ([]byte, bool) {
	if !finite(p.Team) {
		return dst, false
	}
	dst = append(dst, `{"team":`...)
	dst = appendFloat(dst, p.Team)
	if len(p.Members) > 0 {
		ids := make([]string, 0, len(p.Members))
		for id, v := range p.Members {
			if !finite(v) {
				return dst, false
			}
			ids = append(ids, id)
		}
		slices.Sort(ids)
		dst = append(dst, `,"members":{`...)
		for i, id := range ids {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, id)
			dst = append(dst, ':')
			dst = appendFloat(dst, p.Members[id])
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `,"rubric":`...)
	dst = appendString(dst, p.Rubric)
	return append(dst, '}'), true
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// appendFloat formats f as encoding/json does (finite values only).
func appendFloat(dst []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-09 → e-9, as encoding/json writes it.
		if n := len(dst); n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// appendString quotes s as encoding/json does. Plain printable ASCII, the
// common case, is copied; anything else (escapes, HTML characters, non-ASCII,
// invalid UTF-8) takes encoding/json's own path.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always encodes
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// payloadDecoders decode each event type's payload into its value type.
var payloadDecoders = map[string]func([]byte) (any, error){
	EvSessionStarted:    decodeTo[SessionStarted],
	EvSessionEnded:      decodeTo[SessionEnded],
	EvTurn:              decodeTo[Turn],
	EvTurnTimeout:       decodeTo[TurnTimeout],
	EvActionRejected:    decodeTo[ActionRejected],
	EvMemberWaiting:     decodeTo[MemberWaiting],
	EvTaskHandedOff:     decodeTo[TaskHandedOff],
	EvTaskClaimed:       decodeTo[TaskClaimed],
	EvWorkStarted:       decodeTo[WorkStarted],
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
}

func decodeTo[T any](b []byte) (any, error) {
	var v T
	err := json.Unmarshal(b, &v)
	return v, err
}

// DecodePayload decodes ev's payload into the value type of its event
// type, once, for replay to hand to ApplyWith and to everything else that
// reads the event (timers, rewards) instead of each decoding it again. It
// returns nil for a type without a payload type, or a payload that does
// not decode (Apply then reports the event with its own error).
func DecodePayload(ev *events.Event) any {
	dec := payloadDecoders[ev.Type]
	if dec == nil || len(ev.Payload) == 0 {
		return nil
	}
	if v, ok := fastDecode(ev.Type, ev.Payload); ok {
		return v
	}
	v, err := dec(ev.Payload)
	if err != nil {
		return nil
	}
	return v
}
