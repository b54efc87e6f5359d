package org

// queueIndex is a queue's part of the derived indexes: its open tickets
// in arrival order, how many are open at each priority, and its items
// claimed and shown. Kept per queue and reached from a task through its
// qx, they cost a ticket no lookup by the queue's name; they were five
// maps keyed by it.
type queueIndex struct {
	q       *Queue      // the queue's state (nil for the tasks of no queue)
	num     int         // the queue's number (queueIx)
	open    []*Task     // its tickets in arrival order (done and taken ones are dropped lazily)
	prio    []prioCount // its open tickets by priority, ascending; none counts 0
	openN   int         // its open tickets (the sum of prio)
	claimed int         // its items claimed and not done
	shown   int         // its items not done and not hidden
}

// prioCount counts a queue's open tickets of one priority.
type prioCount struct{ prio, n int }

// count adds n to the open tickets of priority prio. A queue's tickets
// have few priorities: the list is short and scanned.
func (q *queueIndex) count(prio, n int) {
	q.openN += n
	i := 0
	for i < len(q.prio) && q.prio[i].prio < prio {
		i++
	}
	if i == len(q.prio) || q.prio[i].prio != prio {
		q.prio = append(q.prio, prioCount{})
		copy(q.prio[i+1:], q.prio[i:])
		q.prio[i] = prioCount{prio: prio}
	}
	if q.prio[i].n += n; q.prio[i].n == 0 {
		q.prio = append(q.prio[:i], q.prio[i+1:]...)
	}
}

// top is the highest priority of the queue's open tickets (0 for none).
func (q *queueIndex) top() int {
	if len(q.prio) == 0 {
		return 0
	}
	return q.prio[len(q.prio)-1].prio
}

// servesTask reports whether role serves t's queue (Serves, without
// building the key).
func (s *State) servesTask(role string, t *Task) bool {
	rs := s.roleServes[role]
	n := s.queueOf(t).num
	return n < len(rs) && rs[n]
}

// queueOf returns the index of t's queue: the last of s.qs when t has no
// queue the world defines.
func (s *State) queueOf(t *Task) *queueIndex {
	if t.qx == nil {
		i, ok := s.queueIx[t.Queue]
		if !ok {
			i = len(s.qs) - 1
		}
		t.qx = &s.qs[i]
	}
	return t.qx
}
