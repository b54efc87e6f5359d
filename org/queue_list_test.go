package org

import (
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/worlds"
)

// A ticket released back to its queue while its old place in the queue's
// arrival-order list is still there (a ticket ahead of it kept the list
// from being trimmed) keeps that one place: it is not listed twice. The
// list then holds each open ticket once, which the trimming of enqueue
// counts on (it compares the list with the queue's open tickets).
func TestReleasedTicketKeepsOnePlace(t *testing.T) {
	w, err := worlds.Shipped("support-desk")
	if err != nil {
		t.Fatal(err)
	}
	s := New(w)
	q := w.Queues[0].ID
	ticket := func(id string, at clock.Time) *Task {
		tk := &Task{Spec: &worlds.Task{ID: id, Role: "agent"}, made: true, ID: id, Kind: KindTicket, Queue: q, Created: at, Status: StatusOpen}
		tk.ord = s.nextOrd()
		s.list = append(s.list, tk)
		s.tasks[id] = tk
		s.track(tk)
		return tk
	}
	a, b, c := ticket("a", 1), ticket("b", 2), ticket("c", 3)
	for range 3 { // b claimed and released again, three times
		b.Status = StatusClaimed
		s.countOpen(b, -1)
		b.Status = StatusOpen
		s.reopen(b)
	}
	got := s.openTickets(q)
	if len(got) != 3 || got[0] != a || got[1] != b || got[2] != c {
		ids := make([]string, len(got))
		for i, tk := range got {
			ids[i] = tk.ID
		}
		t.Fatalf("queue %s lists %v, want [a b c]", q, ids)
	}
	if n := s.qs[s.queueIx[q]].openN; n != 3 {
		t.Fatalf("queue %s counts %d open tickets, want 3", q, n)
	}
}

// A queue served as fast as tickets arrive (each taken before the next
// comes) keeps its list's array: trimming the taken ticket from the front
// moves what is left to the array's start instead of shrinking it, so the
// next arrival appends without allocating. Sliced from the front, the list
// needed a new array for most tickets (6,300 of 10,000 at the desk).
func TestShortQueueKeepsItsArray(t *testing.T) {
	w, err := worlds.Shipped("support-desk")
	if err != nil {
		t.Fatal(err)
	}
	s := New(w)
	q := w.Queues[0].ID
	tickets := make([]*Task, 200)
	for i := range tickets {
		id := "t" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		tickets[i] = &Task{Spec: &worlds.Task{ID: id, Role: "agent"}, made: true, ID: id, Kind: KindTicket, Queue: q, Created: clock.Time(i), Status: StatusOpen}
	}
	i := 0
	serve := func() { // the next ticket arrives and is taken at once
		tk := tickets[i%len(tickets)]
		i++
		tk.Status = StatusOpen
		s.enqueue(tk)
		if head := s.openTickets(q); len(head) != 1 || head[0] != tk {
			t.Fatalf("queue %s lists %d tickets, want only %s", q, len(head), tk.ID)
		}
		tk.Status = StatusClaimed
	}
	for range 4 {
		serve() // the array grows to its size
	}
	if n := testing.AllocsPerRun(100, serve); n != 0 {
		t.Errorf("a ticket served as it arrives allocates %.1f times, want 0", n)
	}
}

// openTickets lists the tickets of queue's lanes, the highest lane first,
// dropping from each lane's front those no longer in it (tests).
func (s *State) openTickets(queue string) []*Task {
	x := &s.qs[s.queueIx[queue]]
	if len(x.lanes) == 1 {
		return x.tickets(x.lanes[0])
	}
	var all []*Task
	for i := len(x.lanes) - 1; i >= 0; i-- {
		all = append(all, x.tickets(x.lanes[i])...)
	}
	return all
}

// A priority queue's open ticket whose priority changes moves to the lane
// of its new priority, at its place in arrival order; moved back, it is
// listed once in its old lane. The queue's head follows it.
func TestReprioritizedTicketMovesLane(t *testing.T) {
	w, err := worlds.Shipped("support-desk")
	if err != nil {
		t.Fatal(err)
	}
	s := New(w)
	q := w.Queues[0].ID
	if w.Queues[0].Order != "priority" {
		t.Fatalf("queue %s is served in arrival order; the test needs a priority queue", q)
	}
	var m *Member
	for _, sm := range s.Members {
		if sm.Role == "support" {
			m = sm
			break
		}
	}
	ticket := func(id string, at clock.Time, prio int) *Task {
		tk := &Task{Spec: &worlds.Task{ID: id, Role: "support"}, made: true, ID: id, Kind: KindTicket, Queue: q, Created: at, Status: StatusOpen, Priority: prio}
		tk.ord = s.nextOrd()
		s.list = append(s.list, tk)
		s.tasks[id] = tk
		s.track(tk)
		return tk
	}
	reprioritize := func(tk *Task, prio int) { // as applyTaskReprioritized does
		s.countOpen(tk, -1)
		tk.Priority = prio
		s.countOpen(tk, 1)
		s.place(tk)
	}
	a, b, c := ticket("a", 1, 1), ticket("b", 2, 1), ticket("c", 3, 2)
	qi := s.queueIx[q]
	head := func(want *Task) {
		t.Helper()
		if got := s.queueHead(qi, m); got != want {
			t.Fatalf("head %v, want %s", got, want.ID)
		}
	}
	head(c)
	reprioritize(b, 3)
	head(b)
	if ahead := s.QueueAhead(c, m.ID); ahead != b {
		t.Fatalf("ahead of c: %v, want b", ahead)
	}
	if ahead := s.QueueAhead(a, m.ID); ahead != b {
		t.Fatalf("ahead of a: %v, want b (the earliest of the higher lanes' heads)", ahead)
	}
	reprioritize(b, 1)
	head(c)
	if ahead := s.QueueAhead(b, m.ID); ahead != a {
		t.Fatalf("ahead of b: %v, want a (of its rank and earlier than c)", ahead)
	}
	c.Status = StatusClaimed
	s.countOpen(c, -1)
	head(a)
	if got := s.openTickets(q); len(got) != 2 || got[0] != a || got[1] != b {
		ids := make([]string, len(got))
		for i, tk := range got {
			ids[i] = tk.ID
		}
		t.Fatalf("queue %s lists %v, want [a b]", q, ids)
	}
}
