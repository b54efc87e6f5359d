package org

import (
	"sort"

	"github.com/corpsim/corpsim/worlds"
)

// Dispatch is the state of a world that offers work to one agent seat at a
// time (worlds.DispatchOne): for each role, the seat last offered work
// (the next offer goes to the first idle seat after it, in member order,
// wrapping), and how many seats of the role have passed on open work since
// the role's last claim or new work. It is part of the state's snapshot
// and hash; a world with the default dispatch has none (State.Dispatch is
// nil), so its snapshots do not mention it.
type Dispatch struct {
	Last   map[string]string `json:"last,omitempty"`
	Passes map[string]int    `json:"passes,omitempty"`
}

func newDispatch(w *worlds.World) *Dispatch {
	if w.Dispatch != worlds.DispatchOne {
		return nil
	}
	return &Dispatch{Last: map[string]string{}, Passes: map[string]int{}}
}

// offerWork offers open task t, which a seat may now take, to the next idle
// agent seat of its role: a new round of offers for the role begins.
func (s *State) offerWork(t *Task, cause uint64) {
	role := t.Spec.Role
	delete(s.Dispatch.Passes, role)
	s.offerAfter(t, s.Dispatch.Last[role], cause)
}

// offerAfter wakes the first agent seat after member after (in member
// order, wrapping; "" starts at the first) that may take t, holds nothing,
// is at work and is not already due a turn. It reports whether it found one.
func (s *State) offerAfter(t *Task, after string, cause uint64) bool {
	role := t.Spec.Role
	if !s.Serves(role, t.Queue) {
		return false
	}
	n := len(s.Members)
	start := 0
	if after != "" {
		start = sort.Search(n, func(i int) bool { return s.Members[i].ID > after })
	}
	for k := range n {
		m := s.Members[(start+k)%n]
		if m.Role != role || m.NPC || m.OnLeave || m.Holding > 0 || m.Pending || !s.CanTake(m.ID, t) {
			continue
		}
		s.wake(m.ID, cause)
		s.Dispatch.Last[role] = m.ID
		return true
	}
	return false
}

// passed is called when agent seat m ends a turn asleep (it waited, or its
// turn timed out). If it holds nothing and left work it may take open, it
// passed on that work: the offer goes on to the next idle seat of its role,
// until every idle seat of the role has passed.
func (s *State) passed(m *Member, cause uint64) {
	if s.Dispatch == nil || m.NPC || m.OnLeave || m.Holding > 0 || m.Pending {
		return
	}
	t := s.openFor(m)
	if t == nil {
		return
	}
	s.Dispatch.Passes[m.Role]++
	if s.Dispatch.Passes[m.Role] >= s.idleSeats(m.Role) {
		return // all of them have passed: nobody more is asked until something changes
	}
	s.offerAfter(t, m.ID, cause)
}

// openFor returns an open task m may take now (a ready project task offered
// to its role and skills, or the head of a queue its role serves), or nil.
func (s *State) openFor(m *Member) *Task {
	serves := s.roleServes[m.Role]
	w, _ := s.World.Member(m.ID)
	for i := range s.World.Queues {
		if i >= len(serves) || !serves[i] {
			continue
		}
		q := &s.World.Queues[i]
		if o := s.offers[offerKey{q.ID, m.Role, ""}]; o != nil && len(o.ready) > 0 {
			return o.ready[0]
		}
		if w != nil {
			for _, skill := range w.Skills {
				if o := s.offers[offerKey{q.ID, m.Role, skill}]; o != nil && len(o.ready) > 0 {
					return o.ready[0]
				}
			}
		}
		if t := s.queueHead(q, m.ID); t != nil {
			return t
		}
	}
	return nil
}

// idleSeats counts the agent seats of role that are at work and hold nothing.
func (s *State) idleSeats(role string) int {
	n := 0
	for _, m := range s.Members {
		if m.Role == role && !m.NPC && !m.OnLeave && m.Holding == 0 {
			n++
		}
	}
	return n
}
