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
	if n := s.openIn(q); n != 3 {
		t.Fatalf("queue %s counts %d open tickets, want 3", q, n)
	}
}
