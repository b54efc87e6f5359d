package org

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/corpsim/corpsim/clock"
)

// DecodeObservation decodes data, an Observation's JSON as json.Marshal
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
// Observation (view_codec_test.go checks this, and fuzzes it).
//
// It is safe for concurrent use. Short strings that recur from turn to turn
// (IDs, roles, statuses) share their memory with earlier observations',
// which Go's immutable strings make invisible, and the deps and waiting_on
// lists of one task list share an array, each capped at its length so that
// an append to one cannot reach another; the rest of *o is new.
func DecodeObservation(data []byte, o *Observation) bool {
	*o = Observation{}
	d := viewDecoders.Get().(*viewDecoder)
	d.data, d.i = data, 0
	ok := d.observation(o)
	d.space()
	ok = ok && d.i == len(d.data)
	d.data = nil
	viewDecoders.Put(d)
	return ok
}

var viewDecoders = sync.Pool{New: func() any { return new(viewDecoder) }}

// viewDecoder reads an observation's JSON from data[i:]. Each method
// decodes one value and returns false on anything it does not read. A null
// leaves the value zero, as json.Unmarshal leaves it unchanged (or, for a
// slice or a pointer, sets it to nil).
type viewDecoder struct {
	data []byte
	i    int

	// strs holds recently decoded short strings, by a hash of their bytes.
	strs [512]string
	// Lists are decoded into scratch space and copied out at their length.
	tasks []TaskView
	// The string lists of one list's tasks (deps, waiting_on) share one
	// array, given out when the list ends: taskStrs has their strings and
	// taskRefs says whose they are.
	taskStrs []string
	taskRefs []taskRef
	requests []RequestView
	messages []MessageView
	projects []ProjectView
}

type taskRef struct {
	task       int  // index in tasks
	waiting    bool // Waiting, else Deps
	start, end int  // in taskStrs
}

// maxInterned bounds the strings kept in strs.
const maxInterned = 64

// intern returns b as a string, from strs when it was seen before.
func (d *viewDecoder) intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > maxInterned {
		return string(b)
	}
	h := uint32(2166136261)
	for _, c := range b {
		h = (h ^ uint32(c)) * 16777619
	}
	e := &d.strs[h%uint32(len(d.strs))]
	if *e != string(b) {
		*e = string(b)
	}
	return *e
}

// list decodes an array of T with elem into scratch, calls finish (if not
// nil) with the elements, and sets *v to a copy of exactly their length.
func list[T any](d *viewDecoder, scratch *[]T, v *[]T, elem func(*T) bool, finish func([]T)) bool {
	*scratch = (*scratch)[:0]
	ok := d.array(func() { *v = []T{} }, func() bool {
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

func (d *viewDecoder) space() {
	for d.i < len(d.data) && d.data[d.i] <= ' ' {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// next skips whitespace and consumes c if it comes next.
func (d *viewDecoder) next(c byte) bool {
	d.space()
	if d.i < len(d.data) && d.data[d.i] == c {
		d.i++
		return true
	}
	return false
}

// literal consumes word (null, true or false) if it comes next, after whitespace.
func (d *viewDecoder) literal(word string) bool {
	d.space()
	if len(d.data)-d.i >= len(word) && string(d.data[d.i:d.i+len(word)]) == word {
		d.i += len(word)
		return true
	}
	return false
}

// object reads an object, calling field for each key with the decoder at
// the key's value. field returns the key's bit (0 for an unknown key) and
// whether its value was read; a key seen twice fails.
func (d *viewDecoder) object(field func(key []byte) (uint32, bool)) bool {
	if d.literal("null") {
		return true
	}
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return true
	}
	var seen uint32
	for {
		key, ok := d.key()
		if !ok {
			return false
		}
		bit, ok := field(key)
		if !ok || bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		if d.next(',') {
			continue
		}
		return d.next('}')
	}
}

// key reads an object's key and the colon after it. It does not unquote
// the key: one with an escape or a byte no tag has matches no field, and
// the object fails.
func (d *viewDecoder) key() ([]byte, bool) {
	if !d.next('"') {
		return nil, false
	}
	n := bytes.IndexByte(d.data[d.i:], '"')
	if n < 0 {
		return nil, false
	}
	key := d.data[d.i : d.i+n]
	d.i += n + 1
	return key, d.next(':')
}

// array reads an array, calling elem with the decoder at each element.
// empty is called for [] (to set an empty, non-nil slice).
func (d *viewDecoder) array(empty func(), elem func() bool) bool {
	if d.literal("null") {
		return true
	}
	if !d.next('[') {
		return false
	}
	if d.next(']') {
		empty()
		return true
	}
	for {
		if !elem() {
			return false
		}
		if d.next(',') {
			continue
		}
		return d.next(']')
	}
}

// plain marks the bytes a string holds as they are: not a quote, a
// backslash, a control character or part of a multibyte character.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func (d *viewDecoder) str(s *string) bool {
	if d.literal("null") {
		return true
	}
	if !d.next('"') {
		return false
	}
	start, ascii := d.i, true
	for d.i < len(d.data) {
		for d.i < len(d.data) && plain[d.data[d.i]] {
			d.i++
		}
		if d.i == len(d.data) {
			break
		}
		switch c := d.data[d.i]; {
		case c == '"':
			raw := d.data[start:d.i]
			d.i++
			if ascii || utf8.Valid(raw) {
				*s = d.intern(raw)
				return true
			}
			// Invalid UTF-8 becomes U+FFFD: let encoding/json say how.
			return unquote(d.data[start-1:d.i], s)
		case c == '\\':
			// Escapes are rare (quotes, <, >, &): encoding/json reads the string.
			return d.escaped(start-1, s)
		case c < 0x20:
			return false
		}
		ascii = false
		d.i++
	}
	return false
}

// escaped reads the string that starts at data[open] (its quote) and has an
// escape at or after d.i, with encoding/json.
func (d *viewDecoder) escaped(open int, s *string) bool {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case '\\':
			d.i += 2
			continue
		case '"':
			d.i++
			return unquote(d.data[open:d.i], s)
		}
		d.i++
	}
	return false
}

// unquote sets *s to the string literal lit as encoding/json reads it.
func unquote(lit []byte, s *string) bool {
	var v string
	if json.Unmarshal(lit, &v) != nil {
		return false
	}
	*s = v
	return true
}

func (d *viewDecoder) boolean(b *bool) bool {
	switch {
	case d.literal("true"):
		*b = true
	case d.literal("false"):
		*b = false
	default:
		return d.literal("null")
	}
	return true
}

// digits reads an integer's digits without a sign: 0, or a nonzero digit
// and more digits, not followed by a fraction or an exponent. It fails on
// overflow beyond max.
func (d *viewDecoder) digits(max uint64) (uint64, bool) {
	start := d.i
	var n uint64
	for d.i < len(d.data) {
		c := d.data[d.i]
		if c < '0' || c > '9' {
			break
		}
		if n > (max-uint64(c-'0'))/10 {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
		d.i++
	}
	switch {
	case d.i == start, d.data[start] == '0' && d.i > start+1:
		return 0, false
	case d.i < len(d.data) && (d.data[d.i] == '.' || d.data[d.i] == 'e' || d.data[d.i] == 'E'):
		return 0, false // a float: encoding/json refuses it for an integer field
	}
	return n, true
}

func (d *viewDecoder) int64(v *int64) bool {
	if d.literal("null") {
		return true
	}
	if d.next('-') {
		n, ok := d.digits(1 << 63)
		*v = -int64(n)
		return ok
	}
	n, ok := d.digits(math.MaxInt64)
	*v = int64(n)
	return ok
}

func (d *viewDecoder) uint64(v *uint64) bool {
	if d.literal("null") {
		return true
	}
	d.space()
	n, ok := d.digits(math.MaxUint64)
	*v = n
	return ok
}

func (d *viewDecoder) int(v *int) bool {
	n := int64(*v)
	ok := d.int64(&n)
	*v = int(n)
	return ok && int64(int(n)) == n
}

func (d *viewDecoder) time(v *clock.Time) bool         { return d.int64((*int64)(v)) }
func (d *viewDecoder) duration(v *clock.Duration) bool { return d.int64((*int64)(v)) }

// float64 reads a JSON number, as encoding/json does: strconv.ParseFloat of
// the number's text, which must be in range.
func (d *viewDecoder) float64(v *float64) bool {
	if d.literal("null") {
		return true
	}
	d.space()
	start := d.i
	d.next('-')
	if !d.intPart() {
		return false
	}
	if d.i < len(d.data) && d.data[d.i] == '.' {
		d.i++
		if !d.someDigits() {
			return false
		}
	}
	if d.i < len(d.data) && (d.data[d.i] == 'e' || d.data[d.i] == 'E') {
		d.i++
		if d.i < len(d.data) && (d.data[d.i] == '+' || d.data[d.i] == '-') {
			d.i++
		}
		if !d.someDigits() {
			return false
		}
	}
	f, err := strconv.ParseFloat(string(d.data[start:d.i]), 64)
	*v = f
	return err == nil
}

// intPart reads 0, or a nonzero digit and more digits.
func (d *viewDecoder) intPart() bool {
	if d.i < len(d.data) && d.data[d.i] == '0' {
		d.i++
		return true
	}
	return d.someDigits()
}

func (d *viewDecoder) someDigits() bool {
	start := d.i
	for d.i < len(d.data) && d.data[d.i] >= '0' && d.data[d.i] <= '9' {
		d.i++
	}
	return d.i > start
}

// taskStrings reads the current task's deps (or waiting_on) into taskStrs.
func (d *viewDecoder) taskStrings(waiting bool) bool {
	ref := taskRef{task: len(d.tasks) - 1, waiting: waiting, start: len(d.taskStrs)}
	listed := false // not null
	ok := d.array(func() { listed = true }, func() bool {
		listed = true
		var s string
		ok := d.str(&s)
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
func (d *viewDecoder) finishTasks(ts []TaskView) {
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

func (d *viewDecoder) observation(o *Observation) bool {
	return d.object(func(key []byte) (uint32, bool) {
		switch string(key) {
		case "session":
			return 1 << 0, d.str(&o.Session)
		case "member":
			return 1 << 1, d.str(&o.Member)
		case "role":
			return 1 << 2, d.str(&o.Role)
		case "team":
			return 1 << 3, d.str(&o.Team)
		case "turn":
			return 1 << 4, d.uint64(&o.Turn)
		case "time":
			return 1 << 5, d.time(&o.Time)
		case "wall":
			return 1 << 6, d.str(&o.Wall)
		case "horizon":
			return 1 << 7, d.time(&o.Horizon)
		case "assigned":
			return 1 << 8, d.taskViews(&o.Assigned)
		case "available":
			return 1 << 9, d.taskViews(&o.Available)
		case "upcoming":
			return 1 << 10, d.taskViews(&o.Upcoming)
		case "available_more":
			return 1 << 11, d.int(&o.AvailableMore)
		case "upcoming_more":
			return 1 << 12, d.int(&o.UpcomingMore)
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
			return 1 << 19, d.boolean(&o.OnLeave)
		case "projects":
			return 1 << 20, d.projectViews(&o.Projects)
		case "rejected":
			return 1 << 21, d.rejectedViews(&o.Rejected)
		case "inbox_more":
			return 1 << 22, d.int(&o.InboxMore)
		}
		return 0, false
	})
}

func (d *viewDecoder) taskViews(v *[]TaskView) bool {
	d.taskStrs, d.taskRefs = d.taskStrs[:0], d.taskRefs[:0]
	return list(d, &d.tasks, v, d.taskView, d.finishTasks)
}

func (d *viewDecoder) taskView(t *TaskView) bool {
	return d.object(func(key []byte) (uint32, bool) {
		switch string(key) {
		case "id":
			return 1 << 0, d.str(&t.ID)
		case "kind":
			return 1 << 1, d.str(&t.Kind)
		case "title":
			return 1 << 2, d.str(&t.Title)
		case "project":
			return 1 << 3, d.str(&t.Project)
		case "queue":
			return 1 << 4, d.str(&t.Queue)
		case "role":
			return 1 << 5, d.str(&t.Role)
		case "skill":
			return 1 << 6, d.str(&t.Skill)
		case "priority":
			return 1 << 7, d.int(&t.Priority)
		case "created":
			return 1 << 8, d.time(&t.Created)
		case "needs_info":
			return 1 << 9, d.infoView(&t.NeedsInfo)
		case "status":
			return 1 << 10, d.str(&t.Status)
		case "assignee":
			return 1 << 11, d.str(&t.Assignee)
		case "effort":
			return 1 << 12, d.duration(&t.Effort)
		case "spent":
			return 1 << 13, d.duration(&t.Spent)
		case "value":
			return 1 << 14, d.float64(&t.Value)
		case "deps":
			return 1 << 15, d.taskStrings(false)
		case "waiting_on":
			return 1 << 16, d.taskStrings(true)
		case "deadline":
			return 1 << 17, d.time(&t.Deadline)
		case "purchase":
			return 1 << 18, d.int64(&t.Purchase)
		case "approval":
			return 1 << 19, d.str(&t.Approval)
		case "request":
			return 1 << 20, d.str(&t.Request)
		case "work_until":
			return 1 << 21, d.time(&t.WorkUntil)
		case "dependents":
			return 1 << 22, d.int(&t.Dependents)
		}
		return 0, false
	})
}

func (d *viewDecoder) infoView(p **InfoView) bool {
	if d.literal("null") {
		*p = nil
		return true
	}
	v := &InfoView{}
	*p = v
	return d.object(func(key []byte) (uint32, bool) {
		switch string(key) {
		case "from":
			return 1 << 0, d.str(&v.From)
		case "topic":
			return 1 << 1, d.str(&v.Topic)
		case "known":
			return 1 << 2, d.boolean(&v.Known)
		}
		return 0, false
	})
}

func (d *viewDecoder) queueViews(v *[]*QueueView) bool {
	*v = nil
	return d.array(func() { *v = []*QueueView{} }, func() bool {
		var q *QueueView
		if !d.literal("null") {
			q = &QueueView{}
			if !d.queueView(q) {
				return false
			}
		}
		*v = append(*v, q)
		return true
	})
}

func (d *viewDecoder) queueView(q *QueueView) bool {
	return d.object(func(key []byte) (uint32, bool) {
		switch string(key) {
		case "id":
			return 1 << 0, d.str(&q.ID)
		case "order":
			return 1 << 1, d.str(&q.Order)
		case "open":
			return 1 << 2, d.int(&q.Open)
		case "in_progress":
			return 1 << 3, d.int(&q.InProgress)
		case "wip":
			return 1 << 4, d.int(&q.WIP)
		case "down_until":
			return 1 << 5, d.time(&q.DownUntil)
		}
		return 0, false
	})
}

func (d *viewDecoder) requestViews(v *[]RequestView) bool {
	return list(d, &d.requests, v, func(r *RequestView) bool {
		return d.object(func(key []byte) (uint32, bool) {
			switch string(key) {
			case "id":
				return 1 << 0, d.str(&r.ID)
			case "task":
				return 1 << 1, d.str(&r.Task)
			case "requester":
				return 1 << 2, d.str(&r.Requester)
			case "amount":
				return 1 << 3, d.int64(&r.Amount)
			case "step":
				return 1 << 4, d.int(&r.Step)
			case "role":
				return 1 << 5, d.str(&r.Role)
			case "approver":
				return 1 << 6, d.str(&r.Approver)
			case "status":
				return 1 << 7, d.str(&r.Status)
			case "reason":
				return 1 << 8, d.str(&r.Reason)
			case "task_assignee":
				return 1 << 9, d.str(&r.TaskAssignee)
			case "task_purchase":
				return 1 << 10, d.int64(&r.TaskPurchase)
			}
			return 0, false
		})
	}, nil)
}

func (d *viewDecoder) messageViews(v *[]MessageView) bool {
	return list(d, &d.messages, v, func(m *MessageView) bool {
		return d.object(func(key []byte) (uint32, bool) {
			switch string(key) {
			case "id":
				return 1 << 0, d.str(&m.ID)
			case "from":
				return 1 << 1, d.str(&m.From)
			case "text":
				return 1 << 2, d.str(&m.Text)
			case "topic":
				return 1 << 3, d.str(&m.Topic)
			case "sent_at":
				return 1 << 4, d.time(&m.SentAt)
			}
			return 0, false
		})
	}, nil)
}

func (d *viewDecoder) budgetView(p **BudgetView) bool {
	if d.literal("null") {
		*p = nil
		return true
	}
	b := &BudgetView{}
	*p = b
	return d.object(func(key []byte) (uint32, bool) {
		switch string(key) {
		case "team":
			return 1 << 0, d.str(&b.Team)
		case "initial":
			return 1 << 1, d.int64(&b.Initial)
		case "spent":
			return 1 << 2, d.int64(&b.Spent)
		case "remaining":
			return 1 << 3, d.int64(&b.Remaining)
		}
		return 0, false
	})
}

func (d *viewDecoder) projectViews(v *[]ProjectView) bool {
	return list(d, &d.projects, v, func(p *ProjectView) bool {
		return d.object(func(key []byte) (uint32, bool) {
			switch string(key) {
			case "id":
				return 1 << 0, d.str(&p.ID)
			case "title":
				return 1 << 1, d.str(&p.Title)
			case "deadline":
				return 1 << 2, d.time(&p.Deadline)
			case "done":
				return 1 << 3, d.int(&p.Done)
			case "tasks":
				return 1 << 4, d.int(&p.Tasks)
			}
			return 0, false
		})
	}, nil)
}

func (d *viewDecoder) rejectedViews(v *[]RejectedView) bool {
	*v = nil
	return d.array(func() { *v = []RejectedView{} }, func() bool {
		*v = append(*v, RejectedView{})
		r := &(*v)[len(*v)-1]
		return d.object(func(key []byte) (uint32, bool) {
			switch string(key) {
			case "action":
				return 1 << 0, d.action(&r.Action)
			case "kind":
				return 1 << 1, d.str(&r.Kind)
			case "rule":
				return 1 << 2, d.str(&r.Rule)
			case "reason":
				return 1 << 3, d.str(&r.Reason)
			}
			return 0, false
		})
	})
}

func (d *viewDecoder) action(a *Action) bool {
	return d.object(func(key []byte) (uint32, bool) {
		switch string(key) {
		case "type":
			return 1 << 0, d.str(&a.Type)
		case "task":
			return 1 << 1, d.str(&a.Task)
		case "request":
			return 1 << 2, d.str(&a.Request)
		case "to":
			return 1 << 3, d.str(&a.To)
		case "text":
			return 1 << 4, d.str(&a.Text)
		case "reason":
			return 1 << 5, d.str(&a.Reason)
		case "for":
			return 1 << 6, d.str(&a.For)
		case "until":
			return 1 << 7, d.int64(&a.Until)
		case "reply_to":
			return 1 << 8, d.str(&a.ReplyTo)
		case "topic":
			return 1 << 9, d.str(&a.Topic)
		}
		return 0, false
	})
}
