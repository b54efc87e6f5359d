package org

import (
	"fmt"
	"math/bits"
	"slices"
)

// Who wakeServers may wake, indexed: a ticket's arrival used to look at
// every member of the world (2,000 serving colleagues made it a fifth of a
// desk's work). It now looks at the colleagues serving the ticket's queue
// that may be idle, and at the agent seats of the ticket's role, in member
// order as before.

// memberBits is a set of members by Member.Num.
type memberBits []uint64

func newMemberBits(n int) memberBits { return make(memberBits, (n+63)/64) }

func (b memberBits) set(i int)   { b[i/64] |= 1 << (i % 64) }
func (b memberBits) unset(i int) { b[i/64] &^= 1 << (i % 64) }

// nextIn returns the first member from i on that is in both b and c, or -1.
func (b memberBits) nextIn(c memberBits, i int) int {
	for w := i / 64; w < len(b); w++ {
		word := b[w] & c[w]
		if w == i/64 {
			word &^= 1<<(i%64) - 1 // the members before i
		}
		if word != 0 {
			return w*64 + bits.TrailingZeros64(word)
		}
	}
	return -1
}

// wakeIndex is the members indexed for wakeServers.
type wakeIndex struct {
	// idle holds every member not on leave, holding nothing and not
	// pending, and maybe others: wakeServers drops those it finds are not,
	// and mayIdle adds a member back when it may have become one.
	idle  memberBits
	npcs  []memberBits     // by queue number: the colleagues serving the queue
	seats map[string][]int // by role: its agent seats, ascending
}

// indexMembers builds the wake index of s's members (New, Restore).
func (s *State) indexMembers() {
	n := len(s.Members)
	x := wakeIndex{idle: newMemberBits(n), npcs: make([]memberBits, len(s.World.Queues)), seats: map[string][]int{}}
	for i := range x.npcs {
		x.npcs[i] = newMemberBits(n)
	}
	for _, m := range s.Members {
		x.idle.set(m.num)
		if !m.NPC {
			x.seats[m.Role] = append(x.seats[m.Role], m.num)
			continue
		}
		if d, ok := s.World.Member(m.ID); ok && d.NPC != nil {
			for _, q := range d.NPC.Serves {
				if qi, ok := s.queueIx[q]; ok {
					x.npcs[qi].set(m.num)
				}
			}
		}
	}
	s.wakeIx = x
}

// mayIdle notes that m may now be idle: its leave ended, it let go of a
// task, or it stopped wanting a turn.
func (s *State) mayIdle(m *Member) {
	if !m.OnLeave && m.Holding == 0 && !m.Pending {
		s.wakeIx.idle.set(m.num)
	}
}

// wakeServers wakes who could take the open task t: every agent seat that
// may do it and holds nothing, and — so that simulated servers do not race —
// only the first idle NPC serving its queue when oneNPC (every one
// otherwise). Members are woken in member order.
func (s *State) wakeServers(t *Task, cause uint64, oneNPC bool) {
	if checkWakeIndex {
		s.checkServers(t, oneNPC)
	}
	wake := func(m *Member) { s.wake(m.ID, cause) }
	if s.queueOf(t).num < len(s.wakeIx.npcs) {
		s.servers(t, oneNPC, wake)
	} else {
		s.serversScanned(t, oneNPC, wake) // a queue the world does not define
	}
	if s.Dispatch != nil {
		s.offerWork(t, cause)
	}
}

// servers calls fn, in member order, with the members wakeServers wakes
// for t, whose queue the world defines; fn must not change them.
func (s *State) servers(t *Task, oneNPC bool, fn func(*Member)) {
	var seats []int
	if s.Dispatch == nil && s.servesTask(t.Spec.Role, t) {
		seats = s.wakeIx.seats[t.Spec.Role]
	}
	idle, npcs := s.wakeIx.idle, s.wakeIx.npcs[s.queueOf(t).num]
	npc := idle.nextIn(npcs, 0)
	for {
		seat := -1
		if len(seats) > 0 {
			seat = seats[0]
		}
		if npc >= 0 && (seat < 0 || npc < seat) {
			m := s.Members[npc]
			if m.OnLeave || m.Holding > 0 || m.Pending {
				idle.unset(npc) // until mayIdle
			} else {
				fn(m)
				if oneNPC {
					npc = -1
					continue
				}
			}
			npc = idle.nextIn(npcs, npc+1)
			continue
		}
		if seat < 0 {
			return
		}
		seats = seats[1:]
		if m := s.Members[seat]; !m.OnLeave && m.Holding == 0 {
			fn(m)
		}
	}
}

// serversScanned is servers by a look at every member: for a task whose
// queue the world does not define, and the reference servers is held to.
func (s *State) serversScanned(t *Task, oneNPC bool, fn func(*Member)) {
	npcWoken := false
	for _, m := range s.Members {
		if m.OnLeave || m.Holding > 0 {
			continue
		}
		if m.NPC {
			if !npcWoken && !m.Pending && s.npcServes(m, t.Queue) {
				fn(m)
				npcWoken = oneNPC
			}
			continue
		}
		if s.Dispatch == nil && m.Role == t.Spec.Role && s.servesTask(m.Role, t) {
			fn(m)
		}
	}
}

// checkWakeIndex makes wakeServers hold the index to the scan at every
// call (tests set it).
var checkWakeIndex = false

// checkServers panics unless servers finds for t whom serversScanned
// finds, in the same order.
func (s *State) checkServers(t *Task, oneNPC bool) {
	if s.queueOf(t).num >= len(s.wakeIx.npcs) {
		return
	}
	var got, want []string
	s.servers(t, oneNPC, func(m *Member) { got = append(got, m.ID) })
	s.serversScanned(t, oneNPC, func(m *Member) { want = append(want, m.ID) })
	if !slices.Equal(got, want) {
		panic(fmt.Sprintf("org: at seq %d the wake index finds %v for task %s, a look at every member %v", s.LastSeq, got, t.ID, want))
	}
	s.wakeChecks++
}
