package agents

import (
	"slices"

	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// The meeting tool (format 2 availability): book the meeting a case step
// requires. It follows open_case in org.ActionTypes order, before the
// record tools (tools_records.go, whose init runs after this file's).
func init() { toolSpecs = append(toolSpecs, meetingToolSpecs...) }

var meetingToolSpecs = []toolSpec{
	{
		name: org.ActScheduleMeeting,
		desc: "Book the meeting a case step you hold requires (its \"meeting\" in your observation: attendees, window, length, working hours and each attendee's busy blocks). " +
			"Costs 5 minutes. Every attendee is booked; a booking that overlaps an attendee's other meeting is refused. Some colleagues have constraints on meetings " +
			"that are in no calendar: ask them by message about their availability before you book. When you complete the step, the meeting is checked: exactly " +
			"the required attendees, inside the window and working hours, the required length, free for everyone, every attendee's constraint kept. One booking per step.",
		params: []toolParam{paramTask(`ID of the case step task you hold that requires the meeting, e.g. "reviews-1.book".`),
			{name: "attendees", typ: "array", required: true, desc: `Member ids of the attendees, e.g. ["dana", "eli", "lou"].`,
				set: func(a *org.Action, v any) { a.Attendees = v.(payload.Names) }},
			{name: "start", typ: "string", required: true, desc: `When it starts, RFC 3339, e.g. "2026-02-03T10:00:00Z".`,
				set: func(a *org.Action, v any) { a.Start = v.(string) }},
			{name: "for", typ: "string", required: true, desc: `How long it lasts, e.g. "30m" or "1h".`,
				set: func(a *org.Action, v any) { a.For = v.(string) }}},
	},
}

// meetingTools drops schedule_meeting from defs when world w has no
// availability (no step of it can require a meeting).
func meetingTools(w *worlds.World, defs []Tool) []Tool {
	if w.Availability != nil {
		return defs
	}
	return slices.DeleteFunc(defs, func(t Tool) bool { return t.Function.Name == org.ActScheduleMeeting })
}
