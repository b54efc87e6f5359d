package agents

import (
	"fmt"
	"slices"
	"time"

	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// This file is how the baselines book the meeting a case step requires
// (format 2 availability): every mode reads the attendees' calendars (the
// busy blocks the step's meeting view shows) and books the earliest slot in
// the window, within working hours, free for every attendee; what tells the
// modes apart is the attendees' hidden constraints:
//   - firstSeen (greedy, planner): ignored — the calendar is all they read;
//   - byPolicy (diligent): asked — it messages each attendee about their
//     availability, waits for the replies, and keeps to what they say (it
//     understands a reply by the phrasings the world gives its members, as
//     a reader of the text would);
//   - truth (oracle): read from the world and the session's draws.
//
// The booking and the step's completion come in separate turns: the step is
// completed once the observation shows the meeting booked, so a booking
// refused (a colleague took the slot first) is tried again.

// meetingMemory is what diligent learnt by asking: each attendee's
// constraint (nil for none) once answered, and whom it asked.
type meetingMemory struct {
	rules map[string]*payload.MeetingRule
	asked map[string]bool
}

// slot is the granularity of the starts the baselines try.
const slot = 30 * time.Minute

// meeting returns what to do about step t's meeting: nothing more (ready)
// once it is booked; else the questions to ask, or the booking.
func (c *content) meeting(o org.Observation, t org.TaskView) (acts []org.Action, ready bool) {
	mv := t.Meeting
	if mv.Booked != nil {
		return nil, true
	}
	var rules []payload.MeetingRule
	switch c.mode {
	case truth:
		for _, id := range mv.Attendees {
			if k := c.world.Availability.Constraint(c.draws, id); k != nil {
				rules = append(rules, k.Rule)
			}
		}
	case byPolicy:
		c.learn(o)
		waiting := false
		for _, id := range mv.Attendees {
			r, known := c.meet.rules[id]
			switch {
			case known:
				if r != nil {
					rules = append(rules, *r)
				}
			case !c.meet.asked[id]:
				c.meet.asked[id] = true
				acts = append(acts, org.Action{Type: org.ActMessage, To: id,
					Text: fmt.Sprintf("Hi %s, I am setting up a meeting (%s): what is your availability? Any constraints I should know about?", id, t.ID)})
				waiting = true
			default:
				waiting = true
			}
		}
		if waiting {
			return acts, false
		}
	}
	start, ok := earliestSlot(o, mv, rules)
	if !ok && len(rules) > 0 {
		start, ok = earliestSlot(o, mv, nil) // nothing keeps every rule: keep the calendars at least
	}
	if !ok {
		return nil, false
	}
	return []org.Action{{Type: org.ActScheduleMeeting, Task: t.ID, Attendees: payload.NewNames(mv.Attendees...),
		Start: start.UTC().Format(time.RFC3339), For: mv.Length}}, false
}

// learn reads the inbox for answers about availability (diligent): a
// message is matched against the phrasings of its sender's possible
// constraints, and the answer of a member without one.
func (c *content) learn(o org.Observation) {
	if c.meet.rules == nil {
		c.meet.rules, c.meet.asked = map[string]*payload.MeetingRule{}, map[string]bool{}
	}
	if c.world == nil || c.world.Availability == nil {
		return
	}
	for _, m := range o.Inbox {
		if m.Text == worlds.NoConstraint {
			c.meet.rules[m.From] = nil
			continue
		}
		name := m.From
		if wm, ok := c.world.Member(m.From); ok && wm.Name != "" {
			name = wm.Name
		}
		for _, k := range c.world.Availability.Constraints[m.From] {
			if k.Render(name) == m.Text {
				r := k.Rule
				c.meet.rules[m.From] = &r
				break
			}
		}
	}
}

// earliestSlot is the earliest start on the half-hour grid, from an hour
// after now, whose meeting fits the window and the working hours of one
// of the view's working days, overlaps no
// attendee's busy block and keeps every rule.
func earliestSlot(o org.Observation, mv *org.MeetingView, rules []payload.MeetingRule) (time.Time, bool) {
	from, err1 := time.Parse(time.RFC3339, mv.From)
	to, err2 := time.Parse(time.RFC3339, mv.To)
	now, err3 := time.Parse(time.RFC3339, o.Wall)
	length, err4 := time.ParseDuration(mv.Length)
	var h1, m1, h2, m2 int
	_, err6 := fmt.Sscanf(mv.Hours, "%d:%d-%d:%d", &h1, &m1, &h2, &m2)
	if err1 != nil || err2 != nil || err3 != nil || err4 != nil || err6 != nil {
		return time.Time{}, false
	}
	loc := now.Location() // the company's wall clock (its offset now)
	type span struct{ s, e time.Time }
	var busy []span
	for _, id := range mv.Attendees {
		for _, b := range mv.Busy[id] {
			s, e1 := time.Parse(time.RFC3339, b.Start)
			e, e2 := time.Parse(time.RFC3339, b.End)
			if e1 == nil && e2 == nil {
				busy = append(busy, span{s, e})
			}
		}
	}
	start := now.Add(time.Hour)
	if from.After(start) {
		start = from
	}
	start = start.Truncate(slot)
	if start.Before(now.Add(time.Hour)) || start.Before(from) {
		start = start.Add(slot)
	}
	for s := start; !s.Add(length).After(to); s = s.Add(slot) {
		e := s.Add(length)
		ws, we := s.In(loc), e.In(loc)
		open := time.Date(ws.Year(), ws.Month(), ws.Day(), h1, m1, 0, 0, loc)
		shut := time.Date(ws.Year(), ws.Month(), ws.Day(), h2, m2, 0, 0, loc)
		if ws.Before(open) || we.After(shut) || !slices.Contains(mv.Days, ws.Format(time.DateOnly)) {
			continue
		}
		free := true
		for _, b := range busy {
			if s.Before(b.e) && b.s.Before(e) {
				free = false
				break
			}
		}
		for _, r := range rules {
			free = free && r.Allows(ws, we)
		}
		if free {
			return s, true
		}
	}
	return time.Time{}, false
}
