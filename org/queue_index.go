package org

import "slices"

// queueIndex is a queue's part of the derived indexes: its open tickets
// in lanes (by priority and role, each in arrival order) and how many
// are open, and its items claimed and shown. Kept per queue and reached
// from a task through its qx, they cost a ticket no lookup by the queue's
// name; they were five maps keyed by it.
type queueIndex struct {
	q       *Queue  // the queue's state (nil for the tasks of no queue)
	num     int     // the queue's number (queueIx)
	byPrio  bool    // served by priority: its open tickets are in lanes by priority (and role)
	lanes   []*lane // its open tickets (see lane), by priority, then role
	openN   int     // its open tickets (the sum of its lanes' n)
	claimed int     // its items claimed and not done
	shown   int     // its items not done and not hidden
}

// lane is a queue's open tickets of one role and one priority (a priority
// queue), or of one role (a queue served in arrival order, whose lanes are
// of priority 0), in arrival order: by creation time, then by the order
// the tasks were made (arrivedEarlier). A member looks only at the lanes of
// its role, from the highest priority down: a queue's head is the first
// ticket it may take there, not one behind a backlog of lower priorities
// or of other roles' tickets. A ticket taken, or moved to another
// priority, stays listed until a look drops it (in), so that a ticket
// released again finds its place still there.
type lane struct {
	prio int
	role string
	open []*Task
	n    int // its open tickets (countOpen)
}

// laneFor returns t's lane, adding it if there is none. Lanes are sorted
// by priority, then role.
func (q *queueIndex) laneFor(t *Task) *lane {
	prio, role := t.Priority, t.Spec.Role
	if !q.byPrio {
		prio = 0
	}
	i := 0
	for i < len(q.lanes) && (q.lanes[i].prio < prio || q.lanes[i].prio == prio && q.lanes[i].role < role) {
		i++
	}
	if i == len(q.lanes) || q.lanes[i].prio != prio || q.lanes[i].role != role {
		q.lanes = slices.Insert(q.lanes, i, &lane{prio: prio, role: role})
	}
	return q.lanes[i]
}

// in reports whether o is one of lane l's open tickets.
func (q *queueIndex) in(l *lane, o *Task) bool {
	return o.Status == StatusOpen && (!q.byPrio || o.Priority == l.prio)
}

// tickets returns lane l's list, dropping from its front the tickets no
// longer in it.
func (q *queueIndex) tickets(l *lane) []*Task {
	list := l.open
	i := 0
	for i < len(list) && !q.in(l, list[i]) {
		i++
	}
	if i > 0 {
		if rest := len(list) - i; rest <= i {
			// No more are left than were dropped: they move to the front
			// of the array (amortized over the dropped), which the lane
			// keeps. Sliced from the front instead, a short queue's list
			// shrank its array at every ticket served and grew a new one
			// at the next arrival: an allocation for most tickets.
			copy(list, list[i:])
			clear(list[rest:]) // the array holds them no longer
			list = list[:rest]
		} else {
			clear(list[:i])
			list = list[i:]
		}
		l.open = list
	}
	return list
}

// enqueue lists open ticket t last in its lane, first dropping the
// tickets no longer in it: from the front, as tickets does, and from all
// of it once they are most of it. Only a look at the queue dropped them
// before, when a decision or a view asked for it; a replay asks nothing,
// and its lists kept every ticket ever queued, retired ones included (64
// MB of a 200,000-ticket replay's 66 MB live heap).
func (s *State) enqueue(t *Task) {
	q := s.queueOf(t)
	l := q.laneFor(t)
	list := q.tickets(l)
	if n := len(list); n >= 64 && n > 2*l.n {
		list = slices.DeleteFunc(list, func(o *Task) bool { return !q.in(l, o) })
	}
	l.open = append(list, t)
}

// reopen puts a ticket back among its queue's open tickets, in arrival order.
func (s *State) reopen(t *Task) {
	s.countOpen(t, 1)
	s.place(t)
}

// place lists open ticket t in its lane at its place in arrival order,
// unless it is listed there: released again before anything dropped it,
// or moved back to a priority it had.
func (s *State) place(t *Task) {
	l := s.queueOf(t).laneFor(t)
	list := l.open
	if slices.Contains(list, t) {
		return
	}
	i := len(list)
	for i > 0 && !s.arrivedEarlier(list[i-1], t) {
		i--
	}
	l.open = slices.Insert(list, i, t)
}

// queueHead is QueueHead of queue number qi, for member m: the first
// ticket m may take of the highest lane of its role that has one.
func (s *State) queueHead(qi int, m *Member) *Task {
	x := &s.qs[qi]
	if s.openTicketN == 0 || x.openN == 0 {
		return nil // no open ticket here
	}
	for i := len(x.lanes) - 1; i >= 0; i-- {
		l := x.lanes[i]
		if l.role != m.Role || l.n == 0 {
			continue // m may take none of it, or it has none open
		}
		for _, t := range x.tickets(l) {
			if x.in(l, t) && s.canTake(m, t) {
				return t
			}
		}
	}
	return nil
}

// queueAhead is QueueAhead of ticket t of queue x, for member m: the
// earliest ticket m may take that ranks above t (a higher priority), or
// with t and arrived earlier. Each lane of m's role gives its first such
// ticket; the lists are in arrival order.
func (s *State) queueAhead(x *queueIndex, t *Task, m *Member) *Task {
	var ahead *Task
	for i := len(x.lanes) - 1; i >= 0 && (!x.byPrio || x.lanes[i].prio >= t.Priority); i-- {
		l := x.lanes[i]
		if l.role != m.Role || l.n == 0 {
			continue
		}
		level := !x.byPrio || l.prio == t.Priority // of t's rank
		for _, o := range x.tickets(l) {
			if o == t || !x.in(l, o) || !s.canTake(m, o) {
				continue
			}
			if level && !s.arrivedEarlier(o, t) {
				break // it and those behind it arrived after t
			}
			if ahead == nil || s.arrivedEarlier(o, ahead) {
				ahead = o
			}
			break // the lane's earliest
		}
	}
	return ahead
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
