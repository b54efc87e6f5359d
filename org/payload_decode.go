package org

import (
	"sync/atomic"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/worlds"
)

// fastDecoders read the payloads of a ticket's life (the bulk of a long
// log) without reflection, with the decoder the observation uses. Each
// reads exactly what AppendPayload writes (any key order, no unknown or
// repeated keys); anything else fails and DecodePayload falls back to
// encoding/json, so the result is always what json.Unmarshal gives
// (payload_decode_test.go checks both on random payloads).
var fastDecoders = map[string]func(d *viewDecoder) (any, bool){
	EvTurn: func(d *viewDecoder) (any, bool) {
		var p Turn
		ok := d.object(func(key []byte) (uint32, bool) {
			switch string(key) {
			case "turn":
				return 1 << 0, d.uint64(&p.Turn)
			case "seen":
				return 1 << 1, d.uint64(&p.Seen)
			case "actions":
				return 1 << 2, d.array(func() { p.Actions = []Action{} }, func() bool {
					p.Actions = append(p.Actions, Action{})
					return d.action(&p.Actions[len(p.Actions)-1])
				})
			case "busy_until":
				return 1 << 3, d.time(&p.BusyUntil)
			case "inbox_read":
				return 1 << 4, d.int(&p.InboxRead)
			}
			return 0, false
		})
		return p, ok
	},
	EvTaskCreated: func(d *viewDecoder) (any, bool) {
		var p TaskCreated
		ok := d.object(func(key []byte) (uint32, bool) {
			switch string(key) {
			case "task":
				return 1 << 0, d.taskSpec(&p.Task)
			case "queue":
				return 1 << 1, d.str(&p.Queue)
			case "team":
				return 1 << 2, d.str(&p.Team)
			case "deadline":
				return 1 << 3, d.time(&p.Deadline)
			case "arrival":
				return 1 << 4, d.str(&p.Arrival)
			case "next_at":
				return 1 << 5, d.time(&p.NextAt)
			case "interruption":
				return 1 << 6, d.int(&p.Interruption)
			}
			return 0, false
		})
		return p, ok
	},
	EvTaskClaimed: func(d *viewDecoder) (any, bool) {
		var p TaskClaimed
		ok := d.taskAnd(&p.Task, "busy_until", (*int64)(&p.BusyUntil))
		return p, ok
	},
	EvTaskCompleted: func(d *viewDecoder) (any, bool) {
		var p TaskCompleted
		ok := d.taskAnd(&p.Task, "busy_until", (*int64)(&p.BusyUntil))
		return p, ok
	},
	EvWorkFinished: func(d *viewDecoder) (any, bool) {
		var p WorkFinished
		ok := d.taskAnd(&p.Task, "work", (*int64)(&p.Work))
		return p, ok
	},
	EvWorkStarted: func(d *viewDecoder) (any, bool) {
		var p WorkStarted
		ok := d.object(func(key []byte) (uint32, bool) {
			switch string(key) {
			case "task":
				return 1 << 0, d.str(&p.Task)
			case "work":
				return 1 << 1, d.duration(&p.Work)
			case "until":
				return 1 << 2, d.time(&p.Until)
			}
			return 0, false
		})
		return p, ok
	},
	EvMemberWaiting: func(d *viewDecoder) (any, bool) {
		var p MemberWaiting
		ok := d.object(func(key []byte) (uint32, bool) {
			if string(key) == "until" {
				return 1, d.time(&p.Until)
			}
			return 0, false
		})
		return p, ok
	},
}

// taskAnd reads {"task": …, key: n}.
func (d *viewDecoder) taskAnd(task *string, key string, n *int64) bool {
	return d.object(func(k []byte) (uint32, bool) {
		switch string(k) {
		case "task":
			return 1 << 0, d.str(task)
		case key:
			return 1 << 1, d.int64(n)
		}
		return 0, false
	})
}

// taskSpec reads a worlds.Task without Info (its keys are the field names).
func (d *viewDecoder) taskSpec(t *worlds.Task) bool {
	return d.object(func(key []byte) (uint32, bool) {
		switch string(key) {
		case "ID":
			return 1 << 0, d.str(&t.ID)
		case "Title":
			return 1 << 1, d.str(&t.Title)
		case "Role":
			return 1 << 2, d.str(&t.Role)
		case "Effort":
			return 1 << 3, d.duration((*clock.Duration)(&t.Effort))
		case "Deps":
			return 1 << 4, d.array(func() { t.Deps = []string{} }, func() bool {
				t.Deps = append(t.Deps, "")
				return d.str(&t.Deps[len(t.Deps)-1])
			})
		case "Value":
			return 1 << 5, d.float64(&t.Value)
		case "Purchase":
			return 1 << 6, d.int64(&t.Purchase)
		case "Chain":
			return 1 << 7, d.str(&t.Chain)
		case "Skill":
			return 1 << 8, d.str(&t.Skill)
		case "Priority":
			return 1 << 9, d.int(&t.Priority)
		case "Info":
			return 1 << 10, d.literal("null") // an Info takes encoding/json's path
		}
		return 0, false
	})
}

// fastDecode decodes data with the fast decoder of typ; ok is false when
// there is none or it does not read data.
func fastDecode(typ string, data []byte) (v any, ok bool) {
	dec := fastDecoders[typ]
	if dec == nil {
		return nil, false
	}
	d := lastDecoder.Swap(nil)
	if d == nil {
		d = viewDecoders.Get().(*viewDecoder)
	}
	d.data, d.i = data, 0
	v, ok = dec(d)
	d.space()
	ok = ok && d.i == len(d.data)
	d.data = nil
	if !lastDecoder.CompareAndSwap(nil, d) {
		viewDecoders.Put(d)
	}
	return v, ok
}

// lastDecoder is a one-slot cache in front of viewDecoders for fastDecode:
// a replay decodes every payload on one goroutine, one after the other,
// and two atomic swaps cost less than the pool's Get and Put. The slot
// also keeps the decoder's interned strings warm across events.
var lastDecoder atomic.Pointer[viewDecoder]
