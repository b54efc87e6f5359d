package wire

import (
	"encoding/json"
	"strconv"

	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/events/payload/fastjson"
	"github.com/corpsim/corpsim/org"
)

// AppendObservation appends o's JSON to dst: exactly json.Marshal's bytes
// (observation_test.go checks this), written without reflection. The
// driver encodes an observation for every turn it asks. The only error is
// json.Marshal's for a task value that is NaN or infinite.
func AppendObservation(dst []byte, o *org.Observation) ([]byte, error) {
	if !finite(o) || o.Shift != nil || len(o.Cases) > 0 || o.CasesMore > 0 || o.RequestsMore > 0 || len(o.Ask) > 0 || len(o.Open) > 0 || caseRequests(o) ||
		len(o.Systems) > 0 || len(o.Results) > 0 || o.Policy != "" {
		// A shift or cases (version 2 worlds): encoding/json writes them.
		b, err := json.Marshal(o)
		return append(dst, b...), err
	}
	dst = fastjson.AppendKeyString(dst, `{"session":`, o.Session)
	dst = fastjson.AppendKeyString(dst, `,"member":`, o.Member)
	dst = fastjson.AppendKeyString(dst, `,"role":`, o.Role)
	dst = fastjson.AppendKeyString(dst, `,"team":`, o.Team)
	dst = append(dst, `,"turn":`...)
	dst = strconv.AppendUint(dst, o.Turn, 10)
	dst = fastjson.AppendKeyInt(dst, `,"time":`, int64(o.Time))
	dst = fastjson.AppendKeyString(dst, `,"wall":`, o.Wall)
	dst = fastjson.AppendKeyInt(dst, `,"horizon":`, int64(o.Horizon))
	dst = fastjson.AppendList(dst, `,"assigned":`, o.Assigned, appendTaskView)
	dst = fastjson.AppendList(dst, `,"available":`, o.Available, appendTaskView)
	dst = fastjson.AppendList(dst, `,"upcoming":`, o.Upcoming, appendTaskView)
	dst = fastjson.AppendKeyIntOmit(dst, `,"assigned_more":`, int64(o.AssignedMore))
	dst = fastjson.AppendKeyIntOmit(dst, `,"available_more":`, int64(o.AvailableMore))
	dst = fastjson.AppendKeyIntOmit(dst, `,"upcoming_more":`, int64(o.UpcomingMore))
	dst = fastjson.AppendList(dst, `,"approvals":`, o.Approvals, appendRequestView)
	dst = fastjson.AppendList(dst, `,"requests":`, o.Requests, appendRequestView)
	dst = fastjson.AppendList(dst, `,"inbox":`, o.Inbox, appendMessageView)
	dst = fastjson.AppendKeyIntOmit(dst, `,"inbox_more":`, int64(o.InboxMore))
	if len(o.Awaiting) > 0 {
		dst = fastjson.AppendList(dst, `,"awaiting":`, o.Awaiting, appendMessageView)
	}
	dst = appendBudgetView(dst, `,"budget":{"team":`, o.Budget)
	dst = fastjson.AppendList(dst, `,"queues":`, o.Queues, func(q **org.QueueView, dst []byte) []byte {
		if *q == nil {
			return append(dst, "null"...)
		}
		return appendQueueView(*q, dst)
	})
	if o.OnLeave {
		dst = append(dst, `,"on_leave":true`...)
	}
	dst = fastjson.AppendList(dst, `,"projects":`, o.Projects, appendProjectView)
	if len(o.Rejected) > 0 {
		dst = fastjson.AppendList(dst, `,"rejected":`, o.Rejected, appendRejectedView)
	}
	if len(o.News) > 0 { // the last field: those between are not on this path
		dst = fastjson.AppendList(dst, `,"news":`, o.News, appendNewsView)
	}
	return append(dst, '}'), nil
}

func appendNewsView(n *org.NewsView, dst []byte) []byte {
	dst = fastjson.AppendKeyInt(dst, `{"at":`, int64(n.At))
	dst = fastjson.AppendKeyString(dst, `,"kind":`, n.Kind)
	dst = fastjson.AppendKeyString(dst, `,"note":`, n.Note)
	return append(dst, '}')
}

// finite reports whether every float in o is one JSON can hold.
func finite(o *org.Observation) bool {
	for _, l := range [][]org.TaskView{o.Assigned, o.Available, o.Upcoming} {
		for i := range l {
			if !fastjson.Finite(l[i].Value) {
				return false
			}
		}
	}
	return true
}

func appendTaskView(t *org.TaskView, dst []byte) []byte {
	dst = fastjson.AppendKeyString(dst, `{"id":`, t.ID)
	dst = fastjson.AppendKeyString(dst, `,"kind":`, t.Kind)
	dst = fastjson.AppendKeyString(dst, `,"title":`, t.Title)
	dst = fastjson.AppendKeyStringOmit(dst, `,"project":`, t.Project)
	dst = fastjson.AppendKeyString(dst, `,"queue":`, t.Queue)
	dst = fastjson.AppendKeyString(dst, `,"role":`, t.Role)
	dst = fastjson.AppendKeyStringOmit(dst, `,"skill":`, t.Skill)
	dst = fastjson.AppendKeyIntOmit(dst, `,"priority":`, int64(t.Priority))
	dst = fastjson.AppendKeyInt(dst, `,"created":`, int64(t.Created))
	if in := t.NeedsInfo; in != nil {
		dst = fastjson.AppendKeyString(dst, `,"needs_info":{"from":`, in.From)
		dst = fastjson.AppendKeyString(dst, `,"topic":`, in.Topic)
		dst = append(dst, `,"known":`...)
		dst = strconv.AppendBool(dst, in.Known)
		dst = append(dst, '}')
	}
	dst = fastjson.AppendKeyString(dst, `,"status":`, t.Status)
	dst = fastjson.AppendKeyStringOmit(dst, `,"assignee":`, t.Assignee)
	dst = fastjson.AppendKeyInt(dst, `,"effort":`, int64(t.Effort))
	dst = fastjson.AppendKeyInt(dst, `,"spent":`, int64(t.Spent))
	dst = append(dst, `,"value":`...)
	dst = fastjson.AppendFloat(dst, t.Value)
	if len(t.Deps) > 0 {
		dst = fastjson.AppendList(dst, `,"deps":`, t.Deps, fastjson.AppendStringAt)
	}
	if len(t.Waiting) > 0 {
		dst = fastjson.AppendList(dst, `,"waiting_on":`, t.Waiting, fastjson.AppendStringAt)
	}
	dst = fastjson.AppendKeyInt(dst, `,"deadline":`, int64(t.Deadline))
	dst = fastjson.AppendKeyIntOmit(dst, `,"purchase":`, t.Purchase)
	dst = appendBudgetView(dst, `,"charges":{"team":`, t.Charges)
	dst = fastjson.AppendKeyStringOmit(dst, `,"approval":`, t.Approval)
	dst = fastjson.AppendKeyStringOmit(dst, `,"request":`, t.Request)
	dst = fastjson.AppendKeyIntOmit(dst, `,"work_until":`, int64(t.WorkUntil))
	dst = fastjson.AppendKeyInt(dst, `,"dependents":`, int64(t.Dependents))
	return append(dst, '}')
}

func appendQueueView(q *org.QueueView, dst []byte) []byte {
	dst = fastjson.AppendKeyString(dst, `{"id":`, q.ID)
	dst = fastjson.AppendKeyString(dst, `,"order":`, q.Order)
	dst = fastjson.AppendKeyInt(dst, `,"open":`, int64(q.Open))
	dst = fastjson.AppendKeyInt(dst, `,"in_progress":`, int64(q.InProgress))
	dst = fastjson.AppendKeyIntOmit(dst, `,"wip":`, int64(q.WIP))
	dst = fastjson.AppendKeyIntOmit(dst, `,"down_until":`, int64(q.DownUntil))
	return append(dst, '}')
}

func appendRequestView(r *org.RequestView, dst []byte) []byte {
	dst = fastjson.AppendKeyString(dst, `{"id":`, r.ID)
	dst = fastjson.AppendKeyString(dst, `,"task":`, r.Task)
	dst = fastjson.AppendKeyString(dst, `,"requester":`, r.Requester)
	dst = fastjson.AppendKeyInt(dst, `,"amount":`, r.Amount)
	dst = fastjson.AppendKeyInt(dst, `,"step":`, int64(r.Step))
	dst = fastjson.AppendKeyString(dst, `,"role":`, r.Role)
	dst = fastjson.AppendKeyString(dst, `,"approver":`, r.Approver)
	dst = fastjson.AppendKeyString(dst, `,"status":`, r.Status)
	dst = fastjson.AppendKeyStringOmit(dst, `,"reason":`, r.Reason)
	dst = fastjson.AppendKeyString(dst, `,"task_assignee":`, r.TaskAssignee)
	dst = fastjson.AppendKeyInt(dst, `,"task_purchase":`, r.TaskPurchase)
	dst = appendBudgetView(dst, `,"task_charges":{"team":`, r.TaskCharges)
	return append(dst, '}')
}

// appendBudgetView appends b after key (which opens its object and names
// its first field), or nothing when b is nil (the fields are omitempty).
func appendBudgetView(dst []byte, key string, b *org.BudgetView) []byte {
	if b == nil {
		return dst
	}
	dst = fastjson.AppendKeyString(dst, key, b.Team)
	dst = fastjson.AppendKeyInt(dst, `,"initial":`, b.Initial)
	dst = fastjson.AppendKeyInt(dst, `,"spent":`, b.Spent)
	dst = fastjson.AppendKeyInt(dst, `,"remaining":`, b.Remaining)
	return append(dst, '}')
}

func appendMessageView(m *org.MessageView, dst []byte) []byte {
	dst = fastjson.AppendKeyString(dst, `{"id":`, m.ID)
	dst = fastjson.AppendKeyString(dst, `,"from":`, m.From)
	dst = fastjson.AppendKeyString(dst, `,"text":`, m.Text)
	dst = fastjson.AppendKeyStringOmit(dst, `,"topic":`, m.Topic)
	dst = fastjson.AppendKeyInt(dst, `,"sent_at":`, int64(m.SentAt))
	return append(dst, '}')
}

func appendProjectView(p *org.ProjectView, dst []byte) []byte {
	dst = fastjson.AppendKeyString(dst, `{"id":`, p.ID)
	dst = fastjson.AppendKeyString(dst, `,"title":`, p.Title)
	dst = fastjson.AppendKeyInt(dst, `,"deadline":`, int64(p.Deadline))
	dst = fastjson.AppendKeyInt(dst, `,"done":`, int64(p.Done))
	dst = fastjson.AppendKeyInt(dst, `,"tasks":`, int64(p.Tasks))
	return append(dst, '}')
}

func appendRejectedView(r *org.RejectedView, dst []byte) []byte {
	dst = append(dst, `{"action":`...)
	dst = payload.AppendAction(dst, &r.Action)
	dst = fastjson.AppendKeyString(dst, `,"kind":`, r.Kind)
	dst = fastjson.AppendKeyStringOmit(dst, `,"rule":`, r.Rule)
	dst = fastjson.AppendKeyString(dst, `,"reason":`, r.Reason)
	return append(dst, '}')
}

// caseRequests reports whether a request o lists is a case step's (its
// TaskAmount set): encoding/json writes the field.
func caseRequests(o *org.Observation) bool {
	for _, list := range [][]org.RequestView{o.Approvals, o.Requests} {
		for i := range list {
			if list[i].TaskAmount != 0 {
				return true
			}
		}
	}
	return false
}
