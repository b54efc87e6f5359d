package payload

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/corpsim/corpsim/events/payload/fastjson"
)

// Append appends the JSON encoding of an event payload to dst. The
// payloads the engine emits most (a ticket's life: task.created, turn,
// task.claimed, work.started, work.finished, task.completed,
// member.waiting, reward, and format 3's ticket.served and
// ticket.resolved) have hand-written encoders; every other value goes
// through encoding/json. The bytes are exactly json.Marshal's, so a log does
// not depend on which path wrote it (encode_test.go checks this).
func Append(dst []byte, payload any) ([]byte, error) {
	switch p := payload.(type) {
	case TaskCreated:
		if out, ok := p.appendJSON(dst); ok {
			return out, nil
		}
	case *TaskCreated:
		if out, ok := p.appendJSON(dst); ok {
			return out, nil
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
	case TicketServed:
		return p.appendJSON(dst), nil
	case *TicketServed:
		return p.appendJSON(dst), nil
	case TicketResolved:
		return p.appendJSON(dst), nil
	case *TicketResolved:
		return p.appendJSON(dst), nil
	case Reward:
		if out, ok := p.appendJSON(dst); ok {
			return out, nil
		}
	case ActionRejected:
		return p.appendJSON(dst), nil
	case *ActionRejected:
		return p.appendJSON(dst), nil
	}
	b, err := json.Marshal(payload)
	if err != nil {
		return dst, err
	}
	return append(dst, b...), nil
}

// AppendAction appends a's JSON to dst, exactly as json.Marshal writes it.
func AppendAction(dst []byte, a *Action) []byte {
	dst = append(dst, `{"type":`...)
	dst = fastjson.AppendString(dst, a.Type)
	dst = fastjson.AppendKeyStringOmit(dst, `,"task":`, a.Task)
	dst = fastjson.AppendKeyStringOmit(dst, `,"request":`, a.Request)
	dst = fastjson.AppendKeyStringOmit(dst, `,"to":`, a.To)
	dst = fastjson.AppendKeyStringOmit(dst, `,"text":`, a.Text)
	dst = fastjson.AppendKeyStringOmit(dst, `,"reason":`, a.Reason)
	dst = fastjson.AppendKeyStringOmit(dst, `,"for":`, a.For)
	dst = fastjson.AppendKeyIntOmit(dst, `,"until":`, a.Until)
	dst = fastjson.AppendKeyStringOmit(dst, `,"reply_to":`, a.ReplyTo)
	dst = fastjson.AppendKeyStringOmit(dst, `,"topic":`, a.Topic)
	dst = fastjson.AppendKeyStringOmit(dst, `,"template":`, a.Template)
	if !a.Attributes.IsZero() {
		dst = append(append(dst, `,"attributes":`...), a.Attributes.raw...)
	}
	dst = fastjson.AppendKeyStringOmit(dst, `,"record":`, a.Record)
	dst = fastjson.AppendKeyStringOmit(dst, `,"id":`, a.ID)
	if !a.Fields.IsZero() {
		dst = append(append(dst, `,"fields":`...), a.Fields.raw...)
	}
	dst = fastjson.AppendKeyIntOmit(dst, `,"page":`, int64(a.Page))
	dst = fastjson.AppendKeyStringOmit(dst, `,"option":`, a.Option)
	dst = fastjson.AppendKeyStringOmit(dst, `,"case":`, a.Case)
	if !a.Attendees.IsZero() {
		dst = append(dst, `,"attendees":`...)
		for i, id := range a.Attendees.List() {
			if i > 0 {
				dst = append(dst, ',')
			} else {
				dst = append(dst, '[')
			}
			dst = fastjson.AppendString(dst, id)
		}
		dst = append(dst, ']')
	}
	dst = fastjson.AppendKeyStringOmit(dst, `,"start":`, a.Start)
	return append(dst, '}')
}

// appendJSON writes p as json.Marshal does: the action as AppendAction
// (a turn's actions too), the rule left out when empty.
func (p *ActionRejected) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"index":`...)
	dst = strconv.AppendInt(dst, int64(p.Index), 10)
	dst = AppendAction(append(dst, `,"action":`...), &p.Action)
	dst = fastjson.AppendString(append(dst, `,"kind":`...), p.Kind)
	dst = fastjson.AppendKeyStringOmit(dst, `,"rule":`, p.Rule)
	dst = fastjson.AppendString(append(dst, `,"reason":`...), p.Reason)
	return append(dst, '}')
}

func (p *WorkStarted) appendJSON(dst []byte) []byte {
	dst = appendTaskTime(dst, p.Task, `,"work":`, int64(p.Work))
	dst = append(dst[:len(dst)-1], `,"until":`...)
	return append(strconv.AppendInt(dst, int64(p.Until), 10), '}')
}

func (p *MemberWaiting) appendJSON(dst []byte) []byte {
	if p.Until == 0 && p.Seen == 0 {
		return append(dst, "{}"...)
	}
	sep := byte('{')
	if p.Until != 0 {
		dst = append(dst, `{"until":`...)
		dst = strconv.AppendInt(dst, int64(p.Until), 10)
		sep = ','
	}
	if p.Seen != 0 {
		dst = append(append(dst, sep), `"seen":`...)
		dst = strconv.AppendUint(dst, p.Seen, 10)
	}
	return append(dst, '}')
}

func (p *TicketServed) appendJSON(dst []byte) []byte {
	dst = appendTaskTime(dst, p.Task, `,"work":`, int64(p.Work))
	dst = append(dst[:len(dst)-1], `,"until":`...)
	dst = strconv.AppendInt(dst, int64(p.Until), 10)
	dst = append(dst, `,"seen":`...)
	return append(strconv.AppendUint(dst, p.Seen, 10), '}')
}

func (p *TicketResolved) appendJSON(dst []byte) []byte {
	dst = appendTaskTime(dst, p.Task, `,"work":`, int64(p.Work))
	if !p.Then() && p.NextWork == 0 && p.NextUntil == 0 {
		return dst
	}
	dst = dst[:len(dst)-1]
	dst = fastjson.AppendKeyStringOmit(dst, `,"next":`, p.Next)
	dst = fastjson.AppendKeyIntOmit(dst, `,"next_work":`, int64(p.NextWork))
	if p.Waits {
		dst = append(dst, `,"waits":true`...)
	}
	dst = fastjson.AppendKeyIntOmit(dst, `,"next_until":`, int64(p.NextUntil))
	return append(dst, '}')
}

func appendTaskTime(dst []byte, task, key string, n int64) []byte {
	dst = append(dst, `{"task":`...)
	dst = fastjson.AppendString(dst, task)
	dst = append(dst, key...)
	return append(strconv.AppendInt(dst, n, 10), '}')
}

// appendJSON encodes a ticket; ok is false for a value encoding/json
// refuses (a NaN or infinite value), which the caller then reports.
func (p *TaskCreated) appendJSON(dst []byte) ([]byte, bool) {
	if !fastjson.Finite(p.Task.Value) {
		return dst, false
	}
	dst = append(dst, `{"task":`...)
	dst = p.Task.appendJSON(dst)
	dst = fastjson.AppendKeyString(dst, `,"queue":`, p.Queue)
	dst = fastjson.AppendKeyString(dst, `,"team":`, p.Team)
	dst = fastjson.AppendKeyIntOmit(dst, `,"deadline":`, int64(p.Deadline))
	dst = fastjson.AppendKeyStringOmit(dst, `,"arrival":`, p.Arrival)
	dst = fastjson.AppendKeyIntOmit(dst, `,"next_at":`, int64(p.NextAt))
	if p.NextAtZero {
		dst = append(dst, `,"next_at_zero":true`...)
	}
	dst = fastjson.AppendKeyInt(dst, `,"interruption":`, int64(p.Interruption))
	return append(dst, '}'), true
}

func (t *TaskSpec) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"id":`...)
	dst = fastjson.AppendString(dst, t.ID)
	dst = fastjson.AppendKeyString(dst, `,"title":`, t.Title)
	dst = fastjson.AppendKeyString(dst, `,"role":`, t.Role)
	dst = fastjson.AppendKeyInt(dst, `,"effort":`, int64(t.Effort))
	if len(t.Deps) > 0 {
		dst = fastjson.AppendList(dst, `,"deps":`, t.Deps, fastjson.AppendStringAt)
	}
	dst = append(dst, `,"value":`...)
	dst = fastjson.AppendFloat(dst, t.Value)
	dst = fastjson.AppendKeyIntOmit(dst, `,"purchase":`, t.Purchase)
	dst = fastjson.AppendKeyStringOmit(dst, `,"chain":`, t.Chain)
	dst = fastjson.AppendKeyStringOmit(dst, `,"skill":`, t.Skill)
	dst = fastjson.AppendKeyIntOmit(dst, `,"priority":`, int64(t.Priority))
	if in := t.Info; in != nil {
		dst = fastjson.AppendKeyString(dst, `,"info":{"from":`, in.From)
		dst = fastjson.AppendKeyString(dst, `,"topic":`, in.Topic)
		dst = append(dst, '}')
	}
	dst = fastjson.AppendKeyStringOmit(dst, `,"case":`, t.Case)
	dst = fastjson.AppendKeyStringOmit(dst, `,"step":`, t.Step)
	dst = fastjson.AppendKeyIntOmit(dst, `,"amount":`, t.Amount)
	dst = fastjson.AppendKeyStringOmit(dst, `,"npc":`, t.NPC)
	return append(dst, '}')
}

func (p *Turn) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"turn":`...)
	dst = strconv.AppendUint(dst, p.Turn, 10)
	dst = append(dst, `,"seen":`...)
	dst = strconv.AppendUint(dst, p.Seen, 10)
	dst = fastjson.AppendList(dst, `,"actions":`, p.Actions, func(a *Action, dst []byte) []byte { return AppendAction(dst, a) })
	dst = fastjson.AppendKeyInt(dst, `,"busy_until":`, int64(p.BusyUntil))
	dst = fastjson.AppendKeyIntOmit(dst, `,"inbox_read":`, int64(p.InboxRead))
	return append(dst, '}')
}

// appendJSON encodes a reward; ok is false for a value encoding/json refuses
// (a NaN or infinite figure), which the caller then reports.
func (p *Reward) appendJSON(dst []byte) ([]byte, bool) {
	if !fastjson.Finite(p.Team) {
		return dst, false
	}
	dst = append(dst, `{"team":`...)
	dst = fastjson.AppendFloat(dst, p.Team)
	if len(p.Members) > 0 {
		ids := make([]string, 0, len(p.Members))
		for id, v := range p.Members { // order: sorted below, so it cannot reach the bytes
			if !fastjson.Finite(v) {
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
			dst = fastjson.AppendString(dst, id)
			dst = append(dst, ':')
			dst = fastjson.AppendFloat(dst, p.Members[id])
		}
		dst = append(dst, '}')
	}
	dst = fastjson.AppendKeyString(dst, `,"rubric":`, p.Rubric)
	return append(dst, '}'), true
}
