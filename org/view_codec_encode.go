package org

import (
	"encoding/json"
	"strconv"
)

// AppendJSON appends o's JSON to dst: exactly json.Marshal's bytes
// (view_codec_test.go checks this), written without reflection. The driver
// encodes an observation for every turn it asks. The only error is
// json.Marshal's for a task value that is NaN or infinite.
func (o *Observation) AppendJSON(dst []byte) ([]byte, error) {
	if !o.finite() {
		b, err := json.Marshal(o)
		return append(dst, b...), err
	}
	dst = append(dst, `{"session":`...)
	dst = appendString(dst, o.Session)
	dst = append(dst, `,"member":`...)
	dst = appendString(dst, o.Member)
	dst = append(dst, `,"role":`...)
	dst = appendString(dst, o.Role)
	dst = append(dst, `,"team":`...)
	dst = appendString(dst, o.Team)
	dst = append(dst, `,"turn":`...)
	dst = strconv.AppendUint(dst, o.Turn, 10)
	dst = appendKeyInt(dst, `,"time":`, int64(o.Time))
	dst = append(dst, `,"wall":`...)
	dst = appendString(dst, o.Wall)
	dst = appendKeyInt(dst, `,"horizon":`, int64(o.Horizon))
	dst = appendList(dst, `,"assigned":`, o.Assigned, (*TaskView).appendJSON)
	dst = appendList(dst, `,"available":`, o.Available, (*TaskView).appendJSON)
	dst = appendList(dst, `,"upcoming":`, o.Upcoming, (*TaskView).appendJSON)
	dst = appendKeyIntOmit(dst, `,"available_more":`, int64(o.AvailableMore))
	dst = appendKeyIntOmit(dst, `,"upcoming_more":`, int64(o.UpcomingMore))
	dst = appendList(dst, `,"approvals":`, o.Approvals, (*RequestView).appendJSON)
	dst = appendList(dst, `,"requests":`, o.Requests, (*RequestView).appendJSON)
	dst = appendList(dst, `,"inbox":`, o.Inbox, (*MessageView).appendJSON)
	dst = appendKeyIntOmit(dst, `,"inbox_more":`, int64(o.InboxMore))
	if len(o.Awaiting) > 0 {
		dst = appendList(dst, `,"awaiting":`, o.Awaiting, (*MessageView).appendJSON)
	}
	if b := o.Budget; b != nil {
		dst = append(dst, `,"budget":{"team":`...)
		dst = appendString(dst, b.Team)
		dst = appendKeyInt(dst, `,"initial":`, b.Initial)
		dst = appendKeyInt(dst, `,"spent":`, b.Spent)
		dst = appendKeyInt(dst, `,"remaining":`, b.Remaining)
		dst = append(dst, '}')
	}
	dst = appendList(dst, `,"queues":`, o.Queues, func(q **QueueView, dst []byte) []byte {
		if *q == nil {
			return append(dst, "null"...)
		}
		return (*q).appendJSON(dst)
	})
	if o.OnLeave {
		dst = append(dst, `,"on_leave":true`...)
	}
	dst = appendList(dst, `,"projects":`, o.Projects, (*ProjectView).appendJSON)
	if len(o.Rejected) > 0 {
		dst = appendList(dst, `,"rejected":`, o.Rejected, (*RejectedView).appendJSON)
	}
	return append(dst, '}'), nil
}

// finite reports whether every float in o is one JSON can hold.
func (o *Observation) finite() bool {
	for _, l := range [][]TaskView{o.Assigned, o.Available, o.Upcoming} {
		for i := range l {
			if !finite(l[i].Value) {
				return false
			}
		}
	}
	return true
}

// appendList appends key and list as a JSON array (null when nil).
func appendList[T any](dst []byte, key string, list []T, elem func(*T, []byte) []byte) []byte {
	dst = append(dst, key...)
	if list == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = elem(&list[i], dst)
	}
	return append(dst, ']')
}

func appendKeyInt(dst []byte, key string, n int64) []byte {
	return strconv.AppendInt(append(dst, key...), n, 10)
}

// appendKeyIntOmit is appendKeyInt for an omitempty field.
func appendKeyIntOmit(dst []byte, key string, n int64) []byte {
	if n == 0 {
		return dst
	}
	return appendKeyInt(dst, key, n)
}

// appendKeyStringOmit appends key and s unless s is empty (omitempty).
func appendKeyStringOmit(dst []byte, key, s string) []byte {
	if s == "" {
		return dst
	}
	return appendString(append(dst, key...), s)
}

func (t *TaskView) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, t.ID)
	dst = append(dst, `,"kind":`...)
	dst = appendString(dst, t.Kind)
	dst = append(dst, `,"title":`...)
	dst = appendString(dst, t.Title)
	dst = appendKeyStringOmit(dst, `,"project":`, t.Project)
	dst = append(dst, `,"queue":`...)
	dst = appendString(dst, t.Queue)
	dst = append(dst, `,"role":`...)
	dst = appendString(dst, t.Role)
	dst = appendKeyStringOmit(dst, `,"skill":`, t.Skill)
	dst = appendKeyIntOmit(dst, `,"priority":`, int64(t.Priority))
	dst = appendKeyInt(dst, `,"created":`, int64(t.Created))
	if in := t.NeedsInfo; in != nil {
		dst = append(dst, `,"needs_info":{"from":`...)
		dst = appendString(dst, in.From)
		dst = append(dst, `,"topic":`...)
		dst = appendString(dst, in.Topic)
		dst = append(dst, `,"known":`...)
		dst = strconv.AppendBool(dst, in.Known)
		dst = append(dst, '}')
	}
	dst = append(dst, `,"status":`...)
	dst = appendString(dst, t.Status)
	dst = appendKeyStringOmit(dst, `,"assignee":`, t.Assignee)
	dst = appendKeyInt(dst, `,"effort":`, int64(t.Effort))
	dst = appendKeyInt(dst, `,"spent":`, int64(t.Spent))
	dst = append(dst, `,"value":`...)
	dst = appendFloat(dst, t.Value)
	if len(t.Deps) > 0 {
		dst = appendList(dst, `,"deps":`, t.Deps, appendStringAt)
	}
	if len(t.Waiting) > 0 {
		dst = appendList(dst, `,"waiting_on":`, t.Waiting, appendStringAt)
	}
	dst = appendKeyInt(dst, `,"deadline":`, int64(t.Deadline))
	dst = appendKeyIntOmit(dst, `,"purchase":`, t.Purchase)
	dst = appendKeyStringOmit(dst, `,"approval":`, t.Approval)
	dst = appendKeyStringOmit(dst, `,"request":`, t.Request)
	dst = appendKeyIntOmit(dst, `,"work_until":`, int64(t.WorkUntil))
	dst = appendKeyInt(dst, `,"dependents":`, int64(t.Dependents))
	return append(dst, '}')
}

func appendStringAt(s *string, dst []byte) []byte { return appendString(dst, *s) }

func (q *QueueView) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, q.ID)
	dst = append(dst, `,"order":`...)
	dst = appendString(dst, q.Order)
	dst = appendKeyInt(dst, `,"open":`, int64(q.Open))
	dst = appendKeyInt(dst, `,"in_progress":`, int64(q.InProgress))
	dst = appendKeyIntOmit(dst, `,"wip":`, int64(q.WIP))
	dst = appendKeyIntOmit(dst, `,"down_until":`, int64(q.DownUntil))
	return append(dst, '}')
}

func (r *RequestView) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, r.ID)
	dst = append(dst, `,"task":`...)
	dst = appendString(dst, r.Task)
	dst = append(dst, `,"requester":`...)
	dst = appendString(dst, r.Requester)
	dst = appendKeyInt(dst, `,"amount":`, r.Amount)
	dst = appendKeyInt(dst, `,"step":`, int64(r.Step))
	dst = append(dst, `,"role":`...)
	dst = appendString(dst, r.Role)
	dst = append(dst, `,"approver":`...)
	dst = appendString(dst, r.Approver)
	dst = append(dst, `,"status":`...)
	dst = appendString(dst, r.Status)
	dst = appendKeyStringOmit(dst, `,"reason":`, r.Reason)
	dst = append(dst, `,"task_assignee":`...)
	dst = appendString(dst, r.TaskAssignee)
	dst = appendKeyInt(dst, `,"task_purchase":`, r.TaskPurchase)
	return append(dst, '}')
}

func (m *MessageView) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, m.ID)
	dst = append(dst, `,"from":`...)
	dst = appendString(dst, m.From)
	dst = append(dst, `,"text":`...)
	dst = appendString(dst, m.Text)
	dst = appendKeyStringOmit(dst, `,"topic":`, m.Topic)
	dst = appendKeyInt(dst, `,"sent_at":`, int64(m.SentAt))
	return append(dst, '}')
}

func (p *ProjectView) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, p.ID)
	dst = append(dst, `,"title":`...)
	dst = appendString(dst, p.Title)
	dst = appendKeyInt(dst, `,"deadline":`, int64(p.Deadline))
	dst = appendKeyInt(dst, `,"done":`, int64(p.Done))
	dst = appendKeyInt(dst, `,"tasks":`, int64(p.Tasks))
	return append(dst, '}')
}

func (r *RejectedView) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"action":`...)
	dst = r.Action.appendJSON(dst)
	dst = append(dst, `,"kind":`...)
	dst = appendString(dst, r.Kind)
	dst = appendKeyStringOmit(dst, `,"rule":`, r.Rule)
	dst = append(dst, `,"reason":`...)
	dst = appendString(dst, r.Reason)
	return append(dst, '}')
}

// AppendJSON appends r's JSON to dst: exactly json.Marshal's bytes
// (view_codec_test.go checks this). An agent host encodes a reply every turn.
func (r *Reply) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"turn":`...)
	dst = strconv.AppendUint(dst, r.Turn, 10)
	return append(appendList(dst, `,"actions":`, r.Actions, func(a *Action, dst []byte) []byte {
		return a.appendJSON(dst)
	}), '}')
}
