package wire

import (
	"slices"
	"sync"

	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/events/payload/fastjson"
	"github.com/corpsim/corpsim/org"
)

// DecodeObservation decodes data, an org.Observation's JSON as json.Marshal
// writes it, into *o (which it overwrites) and reports whether it could.
// It is the hot half of an agent turn: a seat decodes an observation every
// turn. This is about six times faster than encoding/json and allocates
// far less: 6 allocations (3.3 kB) for the startup world's first
// observation, against 136 (7.3 kB).
//
// It reads only what json.Marshal writes, whitespace aside: every key
// spelled exactly as its field's tag, once per object. For anything else (an
// unknown, repeated or case-folded key, a number in the wrong form for its
// field, invalid JSON) it returns false, leaving *o unspecified, and the
// caller decodes data with a full JSON decoder instead. When it returns
// true, *o is what json.Unmarshal would have made of data in a zero
// org.Observation (view_codec_test.go checks this, and fuzzes it).
//
// It is safe for concurrent use. Short strings that recur from turn to turn
// (IDs, roles, statuses) share their memory with earlier observations',
// which Go's immutable strings make invisible, and the deps and waiting_on
// lists of one task list share an array, each capped at its length so that
// an append to one cannot reach another; the rest of *o is new.
func DecodeObservation(data []byte, o *org.Observation) bool {
	*o = org.Observation{}
	d := viewDecoders.Get().(*viewDecoder)
	d.Reset(data)
	ok := d.observation(o)
	ok = d.End() && ok
	viewDecoders.Put(d)
	return ok
}

var viewDecoders = sync.Pool{New: func() any { return new(viewDecoder) }}

// viewDecoder reads an observation's JSON: fastjson's primitives, and
// scratch space for its lists.
type viewDecoder struct {
	fastjson.Decoder

	// Lists are decoded into scratch space and copied out at their length.
	tasks []org.TaskView
	// The string lists of one list's tasks (deps, waiting_on) share one
	// array, given out when the list ends: taskStrs has their strings and
	// taskRefs says whose they are.
	taskStrs []string
	taskRefs []taskRef
	requests []org.RequestView
	messages []org.MessageView
	projects []org.ProjectView
}

type taskRef struct {
	task       int  // index in tasks
	waiting    bool // Waiting, else Deps
	start, end int  // in taskStrs
}

// list decodes an array of T with elem into scratch, calls finish (if not
// nil) with the elements, and sets *v to a copy of exactly their length.
func list[T any](d *viewDecoder, scratch *[]T, v *[]T, elem func(*T) bool, finish func([]T)) bool {
	*scratch = (*scratch)[:0]
	ok := d.Array(func() { *v = []T{} }, func() bool {
		var zero T
		*scratch = append(*scratch, zero)
		return elem(&(*scratch)[len(*scratch)-1])
	})
	if s := *scratch; len(s) > 0 {
		if finish != nil {
			finish(s)
		}
		*v = slices.Clone(s)
		clear(s)
		*scratch = s[:0]
	}
	return ok
}

// taskStrings reads the current task's deps (or waiting_on) into taskStrs.
func (d *viewDecoder) taskStrings(waiting bool) bool {
	ref := taskRef{task: len(d.tasks) - 1, waiting: waiting, start: len(d.taskStrs)}
	listed := false // not null
	ok := d.Array(func() { listed = true }, func() bool {
		listed = true
		var s string
		ok := d.Str(&s)
		d.taskStrs = append(d.taskStrs, s)
		return ok
	})
	if listed {
		ref.end = len(d.taskStrs)
		d.taskRefs = append(d.taskRefs, ref)
	}
	return ok
}

// finishTasks gives the tasks their string lists, from one array.
func (d *viewDecoder) finishTasks(ts []org.TaskView) {
	var all []string
	if len(d.taskStrs) > 0 {
		all = slices.Clone(d.taskStrs)
		clear(d.taskStrs)
	}
	for _, r := range d.taskRefs {
		l := []string{}
		if r.end > r.start {
			l = all[r.start:r.end:r.end]
		}
		if r.waiting {
			ts[r.task].Waiting = l
		} else {
			ts[r.task].Deps = l
		}
	}
	d.taskStrs, d.taskRefs = d.taskStrs[:0], d.taskRefs[:0]
}

func (d *viewDecoder) observation(o *org.Observation) bool {
	return d.Object(func(key []byte) (uint32, bool) {
		switch string(key) {
		case "session":
			return 1 << 0, d.Str(&o.Session)
		case "member":
			return 1 << 1, d.Str(&o.Member)
		case "role":
			return 1 << 2, d.Str(&o.Role)
		case "team":
			return 1 << 3, d.Str(&o.Team)
		case "turn":
			return 1 << 4, d.Uint64(&o.Turn)
		case "time":
			return 1 << 5, d.Int64((*int64)(&o.Time))
		case "wall":
			return 1 << 6, d.Str(&o.Wall)
		case "horizon":
			return 1 << 7, d.Int64((*int64)(&o.Horizon))
		case "assigned":
			return 1 << 8, d.taskViews(&o.Assigned)
		case "available":
			return 1 << 9, d.taskViews(&o.Available)
		case "upcoming":
			return 1 << 10, d.taskViews(&o.Upcoming)
		case "available_more":
			return 1 << 11, d.Int(&o.AvailableMore)
		case "upcoming_more":
			return 1 << 12, d.Int(&o.UpcomingMore)
		case "approvals":
			return 1 << 13, d.requestViews(&o.Approvals)
		case "requests":
			return 1 << 14, d.requestViews(&o.Requests)
		case "inbox":
			return 1 << 15, d.messageViews(&o.Inbox)
		case "awaiting":
			return 1 << 16, d.messageViews(&o.Awaiting)
		case "budget":
			return 1 << 17, d.budgetView(&o.Budget)
		case "queues":
			return 1 << 18, d.queueViews(&o.Queues)
		case "on_leave":
			return 1 << 19, d.Bool(&o.OnLeave)
		case "projects":
			return 1 << 20, d.projectViews(&o.Projects)
		case "rejected":
			return 1 << 21, d.rejectedViews(&o.Rejected)
		case "inbox_more":
			return 1 << 22, d.Int(&o.InboxMore)
		case "shift":
			return 1 << 23, d.shiftView(&o.Shift)
		case "assigned_more":
			return 1 << 24, d.Int(&o.AssignedMore)
		case "requests_more":
			return 1 << 25, d.Int(&o.RequestsMore)
		case "cases_more":
			return 1 << 26, d.Int(&o.CasesMore)
		case "news":
			return 1 << 27, d.newsViews(&o.News)
		}
		return 0, false
	})
}

func (d *viewDecoder) newsViews(v *[]org.NewsView) bool {
	var scratch []org.NewsView // a few: not kept between observations
	return list(d, &scratch, v, func(n *org.NewsView) bool {
		return d.Object(func(key []byte) (uint32, bool) {
			switch string(key) {
			case "at":
				return 1 << 0, d.Int64((*int64)(&n.At))
			case "kind":
				return 1 << 1, d.Str(&n.Kind)
			case "note":
				return 1 << 2, d.Str(&n.Note)
			}
			return 0, false
		})
	}, nil)
}

func (d *viewDecoder) taskViews(v *[]org.TaskView) bool {
	d.taskStrs, d.taskRefs = d.taskStrs[:0], d.taskRefs[:0]
	return list(d, &d.tasks, v, d.taskView, d.finishTasks)
}

func (d *viewDecoder) taskView(t *org.TaskView) bool {
	return d.Object(func(key []byte) (uint32, bool) {
		switch string(key) {
		case "id":
			return 1 << 0, d.Str(&t.ID)
		case "kind":
			return 1 << 1, d.Str(&t.Kind)
		case "title":
			return 1 << 2, d.Str(&t.Title)
		case "project":
			return 1 << 3, d.Str(&t.Project)
		case "queue":
			return 1 << 4, d.Str(&t.Queue)
		case "role":
			return 1 << 5, d.Str(&t.Role)
		case "skill":
			return 1 << 6, d.Str(&t.Skill)
		case "priority":
			return 1 << 7, d.Int(&t.Priority)
		case "created":
			return 1 << 8, d.Int64((*int64)(&t.Created))
		case "needs_info":
			return 1 << 9, d.infoView(&t.NeedsInfo)
		case "status":
			return 1 << 10, d.Str(&t.Status)
		case "assignee":
			return 1 << 11, d.Str(&t.Assignee)
		case "effort":
			return 1 << 12, d.Int64((*int64)(&t.Effort))
		case "spent":
			return 1 << 13, d.Int64((*int64)(&t.Spent))
		case "value":
			return 1 << 14, d.Float64(&t.Value)
		case "deps":
			return 1 << 15, d.taskStrings(false)
		case "waiting_on":
			return 1 << 16, d.taskStrings(true)
		case "deadline":
			return 1 << 17, d.Int64((*int64)(&t.Deadline))
		case "purchase":
			return 1 << 18, d.Int64(&t.Purchase)
		case "charges":
			return 1 << 23, d.budgetView(&t.Charges)
		case "approval":
			return 1 << 19, d.Str(&t.Approval)
		case "request":
			return 1 << 20, d.Str(&t.Request)
		case "work_until":
			return 1 << 21, d.Int64((*int64)(&t.WorkUntil))
		case "dependents":
			return 1 << 22, d.Int(&t.Dependents)
		}
		return 0, false
	})
}

func (d *viewDecoder) infoView(p **org.InfoView) bool {
	if d.Literal("null") {
		*p = nil
		return true
	}
	v := &org.InfoView{}
	*p = v
	return d.Object(func(key []byte) (uint32, bool) {
		switch string(key) {
		case "from":
			return 1 << 0, d.Str(&v.From)
		case "topic":
			return 1 << 1, d.Str(&v.Topic)
		case "known":
			return 1 << 2, d.Bool(&v.Known)
		}
		return 0, false
	})
}

func (d *viewDecoder) queueViews(v *[]*org.QueueView) bool {
	*v = nil
	return d.Array(func() { *v = []*org.QueueView{} }, func() bool {
		var q *org.QueueView
		if !d.Literal("null") {
			q = &org.QueueView{}
			if !d.queueView(q) {
				return false
			}
		}
		*v = append(*v, q)
		return true
	})
}

func (d *viewDecoder) queueView(q *org.QueueView) bool {
	return d.Object(func(key []byte) (uint32, bool) {
		switch string(key) {
		case "id":
			return 1 << 0, d.Str(&q.ID)
		case "order":
			return 1 << 1, d.Str(&q.Order)
		case "open":
			return 1 << 2, d.Int(&q.Open)
		case "in_progress":
			return 1 << 3, d.Int(&q.InProgress)
		case "wip":
			return 1 << 4, d.Int(&q.WIP)
		case "down_until":
			return 1 << 5, d.Int64((*int64)(&q.DownUntil))
		}
		return 0, false
	})
}

func (d *viewDecoder) requestViews(v *[]org.RequestView) bool {
	return list(d, &d.requests, v, func(r *org.RequestView) bool {
		return d.Object(func(key []byte) (uint32, bool) {
			switch string(key) {
			case "id":
				return 1 << 0, d.Str(&r.ID)
			case "task":
				return 1 << 1, d.Str(&r.Task)
			case "requester":
				return 1 << 2, d.Str(&r.Requester)
			case "amount":
				return 1 << 3, d.Int64(&r.Amount)
			case "step":
				return 1 << 4, d.Int(&r.Step)
			case "role":
				return 1 << 5, d.Str(&r.Role)
			case "approver":
				return 1 << 6, d.Str(&r.Approver)
			case "status":
				return 1 << 7, d.Str(&r.Status)
			case "reason":
				return 1 << 8, d.Str(&r.Reason)
			case "task_assignee":
				return 1 << 9, d.Str(&r.TaskAssignee)
			case "task_purchase":
				return 1 << 10, d.Int64(&r.TaskPurchase)
			case "task_charges":
				return 1 << 11, d.budgetView(&r.TaskCharges)
			}
			return 0, false
		})
	}, nil)
}

func (d *viewDecoder) messageViews(v *[]org.MessageView) bool {
	return list(d, &d.messages, v, func(m *org.MessageView) bool {
		return d.Object(func(key []byte) (uint32, bool) {
			switch string(key) {
			case "id":
				return 1 << 0, d.Str(&m.ID)
			case "from":
				return 1 << 1, d.Str(&m.From)
			case "text":
				return 1 << 2, d.Str(&m.Text)
			case "topic":
				return 1 << 3, d.Str(&m.Topic)
			case "sent_at":
				return 1 << 4, d.Int64((*int64)(&m.SentAt))
			}
			return 0, false
		})
	}, nil)
}

func (d *viewDecoder) budgetView(p **org.BudgetView) bool {
	if d.Literal("null") {
		*p = nil
		return true
	}
	b := &org.BudgetView{}
	*p = b
	return d.Object(func(key []byte) (uint32, bool) {
		switch string(key) {
		case "team":
			return 1 << 0, d.Str(&b.Team)
		case "initial":
			return 1 << 1, d.Int64(&b.Initial)
		case "spent":
			return 1 << 2, d.Int64(&b.Spent)
		case "remaining":
			return 1 << 3, d.Int64(&b.Remaining)
		}
		return 0, false
	})
}

func (d *viewDecoder) projectViews(v *[]org.ProjectView) bool {
	return list(d, &d.projects, v, func(p *org.ProjectView) bool {
		return d.Object(func(key []byte) (uint32, bool) {
			switch string(key) {
			case "id":
				return 1 << 0, d.Str(&p.ID)
			case "title":
				return 1 << 1, d.Str(&p.Title)
			case "deadline":
				return 1 << 2, d.Int64((*int64)(&p.Deadline))
			case "done":
				return 1 << 3, d.Int(&p.Done)
			case "tasks":
				return 1 << 4, d.Int(&p.Tasks)
			}
			return 0, false
		})
	}, nil)
}

func (d *viewDecoder) rejectedViews(v *[]org.RejectedView) bool {
	*v = nil
	return d.Array(func() { *v = []org.RejectedView{} }, func() bool {
		*v = append(*v, org.RejectedView{})
		r := &(*v)[len(*v)-1]
		return d.Object(func(key []byte) (uint32, bool) {
			switch string(key) {
			case "action":
				return 1 << 0, payload.DecodeAction(&d.Decoder, &r.Action)
			case "kind":
				return 1 << 1, d.Str(&r.Kind)
			case "rule":
				return 1 << 2, d.Str(&r.Rule)
			case "reason":
				return 1 << 3, d.Str(&r.Reason)
			}
			return 0, false
		})
	})
}

func (d *viewDecoder) shiftView(p **org.ShiftView) bool {
	if d.Literal("null") {
		*p = nil
		return true
	}
	v := &org.ShiftView{}
	*p = v
	return d.Object(func(key []byte) (uint32, bool) {
		switch string(key) {
		case "ends":
			return 1 << 0, d.Int64((*int64)(&v.Ends))
		case "handover":
			return 1 << 1, d.Bool(&v.Handover)
		case "next":
			v.Next = nil
			return 1 << 2, d.Array(func() { v.Next = []org.ShiftMate{} }, func() bool {
				v.Next = append(v.Next, org.ShiftMate{})
				m := &v.Next[len(v.Next)-1]
				return d.Object(func(key []byte) (uint32, bool) {
					switch string(key) {
					case "id":
						return 1 << 0, d.Str(&m.ID)
					case "role":
						return 1 << 1, d.Str(&m.Role)
					case "from":
						return 1 << 2, d.Int64((*int64)(&m.From))
					case "until":
						return 1 << 3, d.Int64((*int64)(&m.Until))
					}
					return 0, false
				})
			})
		}
		return 0, false
	})
}
