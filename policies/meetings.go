package policies

import (
	"slices"
	"strings"

	"github.com/corpsim/corpsim/org"
)

// This file verifies meetings (format 2) from the state: a step that
// requires a meeting is judged on the meeting booked for it when it was
// completed (a booking cannot change afterwards, so it is also the one at
// the end) against five criteria, each worth a fifth: its attendees are
// exactly the required ones; it starts and ends within the window and the
// company's working hours; it
// has the required length; it overlaps no attendee's busy block (other
// than its own); and it keeps every attendee's hidden constraint. A step
// completed with its meeting unmet (not booked, or any criterion failed)
// earns nothing for it, does not verify, and is a wrong outcome. Partial
// credit is the share of criteria met, except that a meeting some
// attendee cannot really attend (it overlaps their busy block or breaks
// their constraint) earns nothing.

// MeetingCriteria names the criteria, in the order MeetingChecks reports them.
var MeetingCriteria = []string{"attendees", "window", "length", "free", "constraints"}

// MeetingChecks says which criteria the meeting booked for cm meets; nil
// when none is booked.
func MeetingChecks(s *org.State, cm *org.CaseMeeting) []bool {
	b := cm.Booked
	if b == nil {
		return nil
	}
	want, got := slices.Sorted(slices.Values(cm.Attendees)), slices.Sorted(slices.Values(b.Attendees))
	free := true
	for _, id := range cm.Attendees {
		for _, blk := range s.Busy(id, b.Start, b.End) {
			if blk.Meeting != b.Meeting {
				free = false
			}
		}
	}
	kept := true
	cal := &s.World.Calendar
	for _, r := range cm.Rules {
		if !r.Allows(cal.Wall(b.Start), cal.Wall(b.End)) {
			kept = false
		}
	}
	inHours := cal.IsWorking(b.Start) && cal.WorkBetween(b.Start, b.End) == b.End.Sub(b.Start)
	return []bool{slices.Equal(want, got), b.Start >= cm.From && b.End <= cm.To && inHours, b.End.Sub(b.Start) == cm.Length, free, kept}
}

// meetingUnmet is why completed step t does not verify on its meeting, or "".
func meetingUnmet(s *org.State, t *org.Task) string {
	c := s.CaseOf(t)
	if c == nil {
		return ""
	}
	for i := range c.Meetings {
		cm := &c.Meetings[i]
		if cm.Step != t.Spec.Step || !cm.Done {
			continue
		}
		if !cm.AtDone {
			return "wrong outcome: no meeting was booked for the step when it was completed"
		}
		var failed []string
		for k, ok := range MeetingChecks(s, cm) {
			if !ok {
				failed = append(failed, MeetingCriteria[k])
			}
		}
		if len(failed) > 0 {
			return "wrong outcome: meeting " + cm.Booked.Meeting + " fails " + strings.Join(failed, ", ")
		}
	}
	return ""
}
