package payload

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/corpsim/corpsim/clock"
)

// Meeting events (format 2): a case step may require a meeting; the
// meeting it expects is fixed when the case opens (ExpectedMeeting, hidden
// in case.opened), and a member books one with schedule_meeting, recorded
// as meeting.scheduled (EvMeetingScheduled), which books every attendee.

// ExpectedMeeting is the meeting a step of a case must book: its
// attendees, the span its start must fall in, its length, and each
// attendee's hidden constraints (drawn per seed; known only by asking).
type ExpectedMeeting struct {
	Step      string         `json:"step"`
	Attendees []string       `json:"attendees"`
	From      clock.Time     `json:"from"` // the earliest start
	To        clock.Time     `json:"to"`   // the latest end
	Length    clock.Duration `json:"length"`
	Rules     []MeetingRule  `json:"rules,omitempty"`
}

// MeetingRule is one attendee's hidden constraint on meetings. It applies
// on the days it names (every day when none): there a meeting must start
// no earlier than Earliest, end no later than Latest (on the day it
// starts) and last at most Max; when it names days and nothing else, it
// takes no meetings on those days. Times are "15:04" on the company's
// wall clock, kept to the millisecond.
type MeetingRule struct {
	Member   string         `json:"member"`
	Days     []string       `json:"days,omitempty"` // mon, tue, ...
	Earliest string         `json:"earliest,omitempty"`
	Latest   string         `json:"latest,omitempty"`
	Max      clock.Duration `json:"max,omitempty"`
}

// MeetingScheduled books a meeting for a case step.
type MeetingScheduled struct {
	Meeting   string     `json:"meeting"` // its id, mtg-<n>
	Task      string     `json:"task"`    // the step task
	Attendees []string   `json:"attendees"`
	Start     clock.Time `json:"start"`
	End       clock.Time `json:"end"`
	BusyUntil clock.Time `json:"busy_until"`
}

// Allows reports whether a meeting from start to end (on the company's
// wall clock) keeps the rule.
func (r MeetingRule) Allows(start, end time.Time) bool {
	day := strings.ToLower(start.Weekday().String()[:3])
	if len(r.Days) > 0 && !slices.Contains(r.Days, day) {
		return true
	}
	if r.Max > 0 && end.Sub(start).Milliseconds() > int64(r.Max) {
		return false
	}
	if len(r.Days) > 0 && r.Earliest == "" && r.Latest == "" && r.Max == 0 {
		return false
	}
	// The instant t's wall clock shows minute m of its day.
	at := func(t time.Time, m int) time.Time {
		return time.Date(t.Year(), t.Month(), t.Day(), 0, m, 0, 0, t.Location())
	}
	if e, ok := clockMinutes(r.Earliest); ok && start.Before(at(start, e)) {
		return false
	}
	if l, ok := clockMinutes(r.Latest); ok && end.After(at(start, l)) {
		return false
	}
	return true
}

// clockMinutes parses "15:04" into minutes after midnight.
func clockMinutes(s string) (int, bool) {
	var h, m int
	if _, err := fmt.Sscanf(s, "%d:%d", &h, &m); err != nil || h < 0 || h > 24 || m < 0 || m > 59 {
		return 0, false
	}
	return h*60 + m, true
}

// ValidClock reports whether s is a time of day such as "10:00".
func ValidClock(s string) bool {
	_, ok := clockMinutes(s)
	return ok && len(s) == 5 && s[2] == ':'
}

// Names is a list of member ids an action gives (schedule_meeting's
// attendees), kept as one string so that an Action stays a comparable
// value; it is written as a JSON list.
type Names struct{ joined string }

// NewNames makes the list.
func NewNames(ids ...string) Names { return Names{joined: strings.Join(ids, "\x00")} }

// IsZero reports whether the list is empty.
func (n Names) IsZero() bool { return n.joined == "" }

// List returns the ids.
func (n Names) List() []string {
	if n.joined == "" {
		return nil
	}
	return strings.Split(n.joined, "\x00")
}

// MarshalJSON writes the list.
func (n Names) MarshalJSON() ([]byte, error) {
	l := n.List()
	if l == nil {
		l = []string{}
	}
	return json.Marshal(l)
}

// UnmarshalJSON reads a list of texts (or null).
func (n *Names) UnmarshalJSON(b []byte) error {
	var l []string
	if err := json.Unmarshal(b, &l); err != nil {
		return err
	}
	for _, s := range l {
		if s == "" || strings.Contains(s, "\x00") {
			return fmt.Errorf("payload: attendee %q is not a member id", s)
		}
	}
	*n = NewNames(l...)
	return nil
}
