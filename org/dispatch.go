package org

import (
	"slices"
	"sort"

	"github.com/corpsim/corpsim/worlds"
)

// Dispatch is the state of a world that offers work to one agent seat at a
// time (worlds.DispatchOne), per role:
//
//   - Last: the seat last offered work; the next offer goes to the first
//     eligible seat after it, in member order, wrapping;
//   - Since: the seq of the event that made work of the role available
//     last (a new round of offers); a seat whose turn was decided on an
//     older observation has not seen that work;
//   - Passed: the seats that, having seen it, ended a turn idle with work
//     they may take still open since the round began. They are not offered
//     it again in the round; when every eligible idle seat has passed,
//     nobody more is asked until something changes.
//
// It is part of the state's snapshot and hash. A world with the default
// dispatch has none (State.Dispatch is nil), so its snapshots do not
// mention it.
type Dispatch struct {
	Last   map[string]string          `json:"last,omitempty"`
	Since  map[string]uint64          `json:"since,omitempty"`
	Passed map[string]map[string]bool `json:"passed,omitempty"`
}

func newDispatch(w *worlds.World) *Dispatch {
	if w.Dispatch != worlds.DispatchOne {
		return nil
	}
	return &Dispatch{Last: map[string]string{}, Since: map[string]uint64{}, Passed: map[string]map[string]bool{}}
}

// fill gives a decoded Dispatch its empty maps.
func (d *Dispatch) fill() {
	if d.Last == nil {
		d.Last = map[string]string{}
	}
	if d.Since == nil {
		d.Since = map[string]uint64{}
	}
	if d.Passed == nil {
		d.Passed = map[string]map[string]bool{}
	}
}

// newRound starts a round of offers for role at the event seq: work was
// made available, or taken.
func (d *Dispatch) newRound(role string, seq uint64) {
	d.Since[role] = seq
	delete(d.Passed, role)
}

// offerWork offers open task t, which a seat may now take, to the next idle
// agent seat of its role: a new round of offers for the role begins.
func (s *State) offerWork(t *Task, cause uint64) {
	s.Dispatch.newRound(t.Spec.Role, cause)
	s.offerNext(t, cause)
}

// offerNext wakes the first agent seat after the role's last offered one
// (in member order, wrapping) that may take t, holds nothing, is at work,
// is not already due a turn and has not passed in this round. It reports
// whether it found one.
func (s *State) offerNext(t *Task, cause uint64) bool {
	role := t.Spec.Role
	if !s.servesTask(role, t) {
		return false
	}
	passed := s.Dispatch.Passed[role]
	n := len(s.Members)
	start := 0
	if after := s.Dispatch.Last[role]; after != "" {
		start = sort.Search(n, func(i int) bool { return s.Members[i].ID > after })
	}
	for k := range n {
		m := s.Members[(start+k)%n]
		if m.Role != role || m.NPC || m.OnLeave || m.Holding > 0 || m.Pending || passed[m.ID] || !s.CanTake(m.ID, t) {
			continue
		}
		s.wake(m.ID, cause)
		s.Dispatch.Last[role] = m.ID
		return true
	}
	return false
}

// passed is called when agent seat m ends a turn asleep (it waited, or its
// turn timed out). If it holds nothing and work it may take is open, then
// either it decided on an observation older than that work (it is asked
// again), or it passed on it: the offer goes on to the next seat.
func (s *State) passed(m *Member, cause uint64) {
	if s.Dispatch == nil || m.NPC || m.OnLeave || m.Holding > 0 || m.Pending {
		return
	}
	t := s.openFor(m)
	if t == nil {
		return
	}
	d := s.Dispatch
	if m.Seen < d.Since[m.Role] {
		s.wake(m.ID, cause)
		return
	}
	if d.Passed[m.Role] == nil {
		d.Passed[m.Role] = map[string]bool{}
	}
	d.Passed[m.Role][m.ID] = true
	s.offerNext(t, cause)
}

// left is called when agent seat m goes on leave: work offered to it goes
// on to the next seat.
func (s *State) left(m *Member, cause uint64) {
	if s.Dispatch == nil || m.NPC {
		return
	}
	if t := s.openFor(m); t != nil {
		s.offerNext(t, cause)
	}
}

// openFor returns an open task m may take now, as its view would offer it
// (a ready project task of its role and skills, or the head ticket of a
// queue its role serves, in a queue neither down nor at its WIP limit), or
// nil: the first such by the world's order of queues, a queue's ready tasks
// (those naming no skill, then each of m's skills) before its head ticket.
// A ready task no budget can pay counts (the view lists it last), and which
// ready tasks a view has moved aside (firstPayable) never changes the answer.
func (s *State) openFor(m *Member) *Task {
	serves := s.roleServes[m.Role]
	ro := s.roleOffers[m.Role]
	var skills []string
	if w, _ := s.defOf(m); w != nil {
		skills = w.Skills
	}
	// The first queue with a ready task m may take, from the offer sets
	// that hold a task (in no order).
	first := len(serves)
	if ro != nil {
		for _, o := range ro.live {
			if o.readyN() == 0 || o.qi >= first || !serves[o.qi] ||
				o.skill != "" && !slices.Contains(skills, o.skill) || s.queueBlocked(o.qi, s.Now) {
				continue
			}
			first = o.qi
		}
	}
	if s.openTicketN > 0 {
		// A head ticket of a queue before it comes first.
		for i := range first {
			if serves[i] && !s.queueBlocked(i, s.Now) {
				if t := s.queueHead(i, m); t != nil {
					return t
				}
			}
		}
	}
	if first < len(serves) {
		for _, o := range s.offersFor(ro, first, skills) {
			if t := o.first(); t != nil {
				return t
			}
		}
	}
	return nil
}
