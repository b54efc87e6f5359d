package org

import (
	"cmp"
	"slices"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/worlds"
)

// ShiftView is a member's working period as it sees it, in a world whose
// teams have shifts or require handing work over (format version 2).
type ShiftView struct {
	// Ends is when the member's current working period ends (its next
	// one's end when it is off duty).
	Ends clock.Time `json:"ends"`
	// Handover says the team requires held work handed over before Ends:
	// holding a claimed or in-progress item then is a policy violation.
	Handover bool `json:"handover,omitempty"`
	// Next are colleagues of the member's team, agent seats not on leave,
	// who work when its period ends: the first to be on duty first.
	Next []ShiftMate `json:"next,omitempty"`
}

// ShiftMate is a colleague who takes over at the end of a shift.
type ShiftMate struct {
	ID   string     `json:"id"`
	Role string     `json:"role"`
	From clock.Time `json:"from"` // when it is next on duty, from the end of the shift on
	// Until is the end of the colleague's working period that holds or
	// follows now: work handed to it is its to hand on by then. Only one
	// whose Until is after the shift's end can take work over without
	// holding it past a period's end sooner.
	Until clock.Time `json:"until"`
}

// maxShiftMates bounds ShiftView.Next.
const maxShiftMates = 16

// shiftView is what member m sees of its shift at now, or nil in a world
// whose member works neither on a shift nor in a team that requires
// handover.
func (s *State) shiftView(m *Member, now clock.Time) *ShiftView {
	wm, team := s.defOf(m)
	if wm == nil {
		return nil
	}
	handover := team != nil && team.Handover == worlds.HandoverRequired
	if !wm.OnShift && !handover {
		return nil
	}
	v := &ShiftView{Ends: s.World.MemberSchedule(m.ID).PeriodEnd(now), Handover: handover}
	for i := range s.World.Members {
		o := &s.World.Members[i]
		if o.Team != m.Team || o.ID == m.ID || o.NPC != nil {
			continue
		}
		if st := s.members[o.ID]; st == nil || st.OnLeave {
			continue
		}
		sch := s.World.MemberSchedule(o.ID)
		v.Next = append(v.Next, ShiftMate{ID: o.ID, Role: o.Role, From: sch.NextWorking(v.Ends), Until: sch.PeriodEnd(now)})
	}
	slices.SortStableFunc(v.Next, func(a, b ShiftMate) int { return cmp.Compare(a.From, b.From) })
	if len(v.Next) > maxShiftMates {
		v.Next = v.Next[:maxShiftMates]
	}
	return v
}
