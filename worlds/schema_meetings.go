package worlds

import "reflect"

// The JSON Schema of availability and meetings (version 2, meetings.go).

func init() {
	for t, s := range meetingSpecs { // order: each entry is its own type's
		specs[t] = s
	}
	root := specs[reflect.TypeFor[file]()]
	root.fields["availability"] = fieldSpec{doc: "Version 2: members' calendars (busy blocks drawn per seed into a record type) and hidden constraints on meetings, known only by asking."}
	step := specs[reflect.TypeFor[fileCaseStep]()]
	step.fields["meeting"] = fieldSpec{doc: "Version 2: a meeting the step must book (schedule_meeting), verified from the state at completion and at the end."}
}

var meetingSpecs = map[reflect.Type]typeSpec{
	reflect.TypeFor[fileAvailability](): {
		doc: "Members' availability: busy blocks on their calendars and hidden constraints.",
		fields: map[string]fieldSpec{
			"record":      {doc: "The record type holding busy blocks: fields member (text), start and end (date-time), and meeting (text, a booked meeting's id).", required: true, apply: id},
			"members":     {doc: "Whose calendars are drawn; default every member.", apply: ids},
			"per_day":     {doc: "Busy blocks per working day: {min, max}."},
			"length":      {doc: "Each block's length, whole half hours: {min: 30m, max: 2h}."},
			"days":        {doc: "Working days drawn from the start; 0 (default): up to the horizon."},
			"constraints": {doc: "Member -> constraints, one drawn per seed: {days, earliest, latest, max, says}."},
		},
	},
	reflect.TypeFor[fileCount](): {
		doc: "A whole-number range.",
		fields: map[string]fieldSpec{
			"min": {doc: "At least."},
			"max": {doc: "At most."},
		},
	},
	reflect.TypeFor[fileSpan](): {
		doc: "A range of durations.",
		fields: map[string]fieldSpec{
			"min": {doc: "Shortest, such as 30m.", required: true},
			"max": {doc: "Longest, such as 2h.", required: true},
		},
	},
	reflect.TypeFor[fileConstraint](): {
		doc: "A hidden constraint: on days (every day when none) a meeting starts no earlier than earliest and ends no later than latest; max bounds its length; days alone (no time, no max): no meetings those days.",
		fields: map[string]fieldSpec{
			"days":     {doc: "Days it applies to: mon, tue, wed, thu, fri, sat, sun."},
			"earliest": {doc: "Earliest start, such as \"10:00\"."},
			"latest":   {doc: "Latest end, such as \"16:00\"."},
			"max":      {doc: "Longest meeting, such as 1h."},
			"says":     {doc: "How the member says it when asked: a text template over {{.name}}, {{.days}}, {{.earliest}}, {{.latest}}, {{.max}}.", required: true},
		},
	},
	reflect.TypeFor[fileMeeting](): {
		doc: "A meeting a step must book.",
		fields: map[string]fieldSpec{
			"attendees": {doc: "Member ids, or choice attributes whose values are member ids.", required: true},
			"window":    {doc: "When it may take place: {from, to}, working time after the case opens.", required: true},
			"length":    {doc: "How long it lasts, such as 30m.", required: true},
		},
	},
	reflect.TypeFor[fileMeetingWindow](): {
		doc: "A span after the case opens, in working time.",
		fields: map[string]fieldSpec{
			"from": {doc: "Its start; default when the case opens."},
			"to":   {doc: "Its end, such as 2d.", required: true},
		},
	},
}
