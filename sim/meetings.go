package sim

import (
	"strings"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// This file does meetings (format 2): the meetings a new case's steps
// must book (fixed when it opens, with each attendee's hidden constraint
// for the seed), the booking of one (schedule_meeting), and an NPC's
// answer when a member asks about its availability.

// expectMeetings fixes the meetings of a new case's steps that apply.
func (e *Engine) expectMeetings(tpl *worlds.CaseTemplate, p *payload.CaseOpened) {
	applies := map[string]bool{}
	for _, s := range p.Steps {
		applies[s.Step] = true
	}
	vars := payload.Vars(p.Case, p.Attributes)
	for i := range tpl.Steps {
		st := &tpl.Steps[i]
		if st.Meeting == nil || !applies[st.ID] {
			continue
		}
		p.Meetings = append(p.Meetings, e.cfg.World.Expect(st.Meeting, st.ID, e.now, vars, e.truth))
	}
}

// performMeeting emits the meeting.scheduled of an accepted
// schedule_meeting starting at cursor and returns when the member is next
// free (booking costs what a message does).
func (e *Engine) performMeeting(m *org.Member, c *org.Checked, cause uint64, cursor clock.Time) clock.Time {
	_, start, end, rej := e.st.CheckMeeting(m, c.Action, e.now)
	if rej != nil {
		return cursor // checked just before: cannot happen
	}
	cursor = e.schedule(m.ID).AddWork(cursor, e.cost(m, e.cfg.World.ActionCosts().Message))
	p := e.st.ScheduleMeeting(c.Action, start, end)
	p.BusyUntil = cursor
	e.emit(payload.EvMeetingScheduled, m.ID, cause, p)
	return cursor
}

// availabilityAnswer is what NPC id says to a message asking about its
// availability (its hidden constraint in words), when the world has
// availability and the message asks.
func (e *Engine) availabilityAnswer(id, text string) (string, bool) {
	a := e.cfg.World.Availability
	if a == nil {
		return "", false
	}
	t := strings.ToLower(text)
	if !strings.Contains(t, worlds.TopicAvailability) && !strings.Contains(t, "constraint") && !strings.Contains(t, "available") {
		return "", false
	}
	name := id
	if m, ok := e.cfg.World.Member(id); ok && m.Name != "" {
		name = m.Name
	}
	return a.Answer(e.truth, id, name), true
}
