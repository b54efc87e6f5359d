package org

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/worlds"
)

// This file holds meetings (format 2): a case step may require one (the
// expected meeting, fixed when the case opens and hidden); the member
// holding the step books it with schedule_meeting, recorded as
// meeting.scheduled, which adds a busy block to every attendee's calendar
// (records of the availability's record type), so that a second meeting
// cannot double-book them. The rubric (package policies) verifies the
// meeting booked against the expected one.

// ActScheduleMeeting books a meeting for a step task the member holds:
// {"type":"schedule_meeting","task":"c1/review","attendees":["zoe","yan"],"start":"2026-02-03T10:00:00Z","for":"30m"}.
const ActScheduleMeeting = "schedule_meeting"

// CaseMeeting is the meeting a step of a case must book (hidden from
// agents but for what MeetingView shows), the one booked for it, and
// whether it was booked when the step was completed.
type CaseMeeting struct {
	payload.ExpectedMeeting
	Booked *payload.MeetingScheduled `json:"booked,omitempty"`
	Done   bool                      `json:"done,omitempty"`
	AtDone bool                      `json:"at_done,omitempty"` // booked at completion
}

// MeetingView is a step's meeting as the member holding it sees it: who
// must attend, the window, the length, the busy blocks of the attendees
// in the window, and the meeting booked.
type MeetingView struct {
	Attendees []string              `json:"attendees"`
	From      string                `json:"from"` // RFC 3339
	To        string                `json:"to"`
	Length    string                `json:"length"`
	Hours     string                `json:"hours"` // the company's working hours, such as "09:00-17:00", on the wall clock of Zone
	Zone      string                `json:"zone"`  // IANA time zone of the company calendar
	Days      []string              `json:"days"`  // the working days the window touches, "2006-01-02" on that wall clock
	Busy      map[string][]BusySpan `json:"busy"`  // attendee -> busy blocks overlapping the window
	Booked    *BusySpan             `json:"booked,omitempty"`
}

// BusySpan is a busy block (or a meeting) on a calendar.
type BusySpan struct {
	Start   string `json:"start"`
	End     string `json:"end"`
	Meeting string `json:"meeting,omitempty"`
}

// MaxAttendees bounds a meeting's attendees.
const MaxAttendees = 20

// caseMeeting is the meeting step task t must book, or nil.
func (s *State) caseMeeting(t *Task) *CaseMeeting {
	c := s.CaseOf(t)
	if c == nil {
		return nil
	}
	for i := range c.Meetings {
		if c.Meetings[i].Step == t.Spec.Step {
			return &c.Meetings[i]
		}
	}
	return nil
}

// Instant is the simulated time of an RFC 3339 instant.
func (s *State) Instant(v string) (clock.Time, bool) {
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return 0, false
	}
	return clock.Time(t.Sub(s.World.Calendar.Start).Milliseconds()), true
}

// wholeSecond reports whether simulated time t is a whole second (what
// RFC3339 writes without loss).
func (s *State) wholeSecond(t clock.Time) bool {
	return s.World.Calendar.Start.Add(time.Duration(t)*time.Millisecond).Nanosecond() == 0
}

// RFC3339 is a simulated time as an RFC 3339 instant (UTC).
func (s *State) RFC3339(t clock.Time) string {
	return s.World.Calendar.Start.Add(time.Duration(t) * time.Millisecond).UTC().Format(time.RFC3339)
}

// Busy returns member's busy blocks (the availability's records naming
// it, meetings included) overlapping [from, to), by start (and in the
// order of State.Records for the same start).
func (s *State) Busy(member string, from, to clock.Time) []BusySpan {
	a := s.World.Availability
	if a == nil {
		return nil
	}
	l := s.busyRecords(member)
	var spans []BusySpan
	// A block that ends after from starts after from - longest.
	i, _ := slices.BinarySearchFunc(l.recs, from-l.longest+1, func(x busyRecord, t clock.Time) int { return cmp.Compare(x.start, t) })
	for _, x := range l.recs[i:] {
		if x.start >= to {
			break
		}
		r := x.r
		if r.Type != a.Record || r.Deleted || r.Fields["member"] != member || x.end <= from {
			continue
		}
		st, _ := r.Fields["start"].(string)
		en, _ := r.Fields["end"].(string)
		mtg, _ := r.Fields["meeting"].(string)
		spans = append(spans, BusySpan{Start: st, End: en, Meeting: mtg})
	}
	if spans == nil {
		spans = []BusySpan{}
	}
	return spans
}

// CheckMeeting is schedule_meeting's check: m holds step task a.Task, the
// step requires a meeting not yet booked, the attendees are members (no
// one twice), the start is an RFC 3339 instant not in the past, the
// length ("for") is positive and at most worlds.MaxMeeting, both whole
// seconds, and no attendee is in another meeting then. It returns the task, the start and
// the end.
func (s *State) CheckMeeting(m *Member, a Action, now clock.Time) (*Task, clock.Time, clock.Time, *Rejection) {
	t, rej := s.named(a)
	if rej != nil {
		return nil, 0, 0, rej
	}
	if rej := s.holds(m, t); rej != nil {
		return nil, 0, 0, rej
	}
	cm := s.caseMeeting(t)
	switch {
	case cm == nil:
		return nil, 0, 0, Reject(KindState, "task %q requires no meeting", t.ID)
	case cm.Booked != nil:
		return nil, 0, 0, Reject(KindState, "task %q's meeting is already booked (%s)", t.ID, cm.Booked.Meeting)
	}
	who := a.Attendees.List()
	if len(who) == 0 {
		return nil, 0, 0, Reject(KindMalformed, "schedule_meeting needs attendees")
	}
	if len(who) > MaxAttendees {
		return nil, 0, 0, Reject(KindMalformed, "at most %d attendees, got %d", MaxAttendees, len(who))
	}
	for i, id := range who {
		if s.Member(id) == nil {
			return nil, 0, 0, Reject(KindUnknown, "no member %q", id)
		}
		if slices.Contains(who[:i], id) {
			return nil, 0, 0, Reject(KindMalformed, "attendee %q is named twice", id)
		}
	}
	start, ok := s.Instant(a.Start)
	if !ok {
		return nil, 0, 0, Reject(KindMalformed, "start %q is not an RFC 3339 time such as %s", a.Start, s.RFC3339(now))
	}
	if start < now {
		return nil, 0, 0, Reject(KindState, "start %s is in the past (now %s)", a.Start, s.RFC3339(now))
	}
	if a.For == "" {
		return nil, 0, 0, Reject(KindMalformed, "schedule_meeting needs its length (for), such as \"30m\"")
	}
	d, err := clock.ParseDuration(a.For, 24*clock.Hour)
	if err != nil || d <= 0 || d > worlds.MaxMeeting {
		return nil, 0, 0, Reject(KindMalformed, "for %q: a meeting lasts more than 0 and at most %s", a.For, worlds.MaxMeeting)
	}
	end := start + clock.Time(d)
	// The calendar's records and the replay read instants to the second.
	switch {
	case !s.wholeSecond(start):
		return nil, 0, 0, Reject(KindMalformed, "start %q: a meeting starts on a whole second, such as %s", a.Start, s.RFC3339(start))
	case !s.wholeSecond(end):
		return nil, 0, 0, Reject(KindMalformed, "for %q: a meeting lasts whole seconds", a.For)
	}
	for _, id := range who {
		for _, b := range s.Busy(id, start, end) {
			if b.Meeting != "" {
				return nil, 0, 0, Reject(KindState, "%s is in meeting %s from %s to %s", id, b.Meeting, b.Start, b.End)
			}
		}
	}
	return t, start, end, nil
}

// ScheduleMeeting is the meeting.scheduled of a checked schedule_meeting.
// Its id is mtg-<n>, n one more than the meetings booked, or the next n
// that no booked meeting has and whose calendar records (mtg-<n>-<attendee>)
// no record has taken: where busy records may be created, one may have
// been given such an id.
func (s *State) ScheduleMeeting(a Action, start, end clock.Time) payload.MeetingScheduled {
	taken := map[string]bool{}
	for _, c := range s.Cases {
		for _, cm := range c.Meetings {
			if cm.Booked != nil {
				taken[cm.Booked.Meeting] = true
			}
		}
	}
	who := a.Attendees.List()
	n := len(taken) + 1
	for ; ; n++ {
		id := fmt.Sprintf("mtg-%d", n)
		if !taken[id] && !slices.ContainsFunc(who, func(m string) bool { return s.records[recordKey(s.World.Availability.Record, id+"-"+m)] != nil }) {
			break
		}
	}
	id := fmt.Sprintf("mtg-%d", n)
	return payload.MeetingScheduled{Meeting: id, Task: a.Task, Attendees: who, Start: start, End: end}
}

func (s *State) applyMeetingScheduled(ev *events.Event) error {
	p, err := decode[payload.MeetingScheduled](s, ev)
	if err != nil {
		return err
	}
	m, err := s.actor(ev)
	if err != nil {
		return err
	}
	a := Action{Type: ActScheduleMeeting, Task: p.Task, Attendees: payload.NewNames(p.Attendees...), Start: s.RFC3339(p.Start),
		For: clock.Duration(p.End - p.Start).String()}
	t, start, end, rej := s.CheckMeeting(m, a, clock.Time(ev.Time))
	if rej != nil {
		return refused(ev, rej)
	}
	if start != p.Start || end != p.End || p.Meeting != s.ScheduleMeeting(a, start, end).Meeting {
		return badEvent(ev, "meeting %s does not match its action", p.Meeting)
	}
	typ, _ := s.World.RecordType(s.World.Availability.Record)
	for _, id := range p.Attendees {
		r := &Record{Type: typ.ID, ID: p.Meeting + "-" + id, Fields: payload.Attrs{}}
		for _, f := range typ.Fields {
			r.Fields[f.Name] = f.Zero()
		}
		r.Fields["member"], r.Fields["start"], r.Fields["end"] = id, s.RFC3339(p.Start), s.RFC3339(p.End)
		if _, ok := typ.Field("meeting"); ok {
			r.Fields["meeting"] = p.Meeting
		}
		if s.records[recordKey(r.Type, r.ID)] != nil {
			return badEvent(ev, "record %s %s exists", r.Type, r.ID)
		}
		s.Records = append(s.Records, r)
		s.records[recordKey(r.Type, r.ID)] = r
	}
	booked := p
	booked.BusyUntil = 0
	s.caseMeeting(t).Booked = &booked
	s.busy(m, p.BusyUntil)
	s.wake(m.ID, ev.Seq) // its step now shows the meeting booked: a wait does not put it to sleep
	return nil
}

// meetingDone records, when step t is completed, whether its meeting was booked.
func (s *State) meetingDone(t *Task) {
	if cm := s.caseMeeting(t); cm != nil {
		cm.Done, cm.AtDone = true, cm.Booked != nil
	}
}

// meetingView is the meeting of a step task, or nil.
func (s *State) meetingView(t *Task) *MeetingView {
	cm := s.caseMeeting(t)
	if cm == nil {
		return nil
	}
	v := &MeetingView{Attendees: slices.Clone(cm.Attendees), From: s.RFC3339(cm.From), To: s.RFC3339(cm.To),
		Length: cm.Length.String(), Busy: map[string][]BusySpan{}, Zone: s.World.Calendar.Start.Location().String()}
	ds, de := s.World.Calendar.DayStart, s.World.Calendar.DayEnd
	if ds == 0 && de == 0 {
		ds, de = 9*clock.Hour, 17*clock.Hour
	}
	cal := &s.World.Calendar
	from, to := cal.Wall(cm.From), cal.Wall(cm.To)
	for d := time.Date(from.Year(), from.Month(), from.Day(), 0, 0, 0, 0, from.Location()); !d.After(to); d = d.AddDate(0, 0, 1) {
		at := clock.Time(d.Add(time.Duration(ds) * time.Millisecond).Sub(cal.Start).Milliseconds())
		if cal.IsWorking(at) {
			v.Days = append(v.Days, d.Format(time.DateOnly))
		}
	}
	v.Hours = fmt.Sprintf("%02d:%02d-%02d:%02d", ds/clock.Hour, ds%clock.Hour/clock.Minute, de/clock.Hour, de%clock.Hour/clock.Minute)
	for _, id := range cm.Attendees {
		v.Busy[id] = s.Busy(id, cm.From, cm.To)
	}
	if b := cm.Booked; b != nil {
		v.Booked = &BusySpan{Start: s.RFC3339(b.Start), End: s.RFC3339(b.End), Meeting: b.Meeting}
	}
	return v
}

// busyIndex files the records of the world's availability type by the
// member they name, by the instant they start (in the order of
// State.Records for the same start), so that a member's busy blocks in a
// window cost the blocks around it, not a look (and two RFC 3339 parses)
// at every record of the session. Records are appended; one filed is
// changed only by a write (update, or a create taking a deleted record's
// id again), which files them all again at the next look (refile).
// Derived: never hashed nor in snapshots.
type busyIndex struct {
	recs filed[Record] // of State.Records
	of   map[string]*busyList
}

// busyList is a member's filed availability records whose start and end
// are RFC 3339 instants, by start, and the longest of their blocks.
type busyList struct {
	recs    []busyRecord
	longest clock.Time
}

// busyRecord is a filed availability record, with its start and end.
type busyRecord struct {
	r          *Record
	start, end clock.Time
}

// busyRecords returns the records of the availability type that named
// member when they were filed (Busy checks each again).
func (s *State) busyRecords(member string) *busyList {
	x, typ := &s.busyIx, s.World.Availability.Record
	if !x.recs.of(s.Records) {
		*x = busyIndex{} // not the slice they were filed from
	}
	if x.of == nil {
		x.of = map[string]*busyList{}
	}
	for _, r := range x.recs.take(s.Records) {
		id, ok := r.Fields["member"].(string)
		if !ok || r.Type != typ {
			continue
		}
		b, ok := readBusy(s, r)
		if !ok {
			continue // no block
		}
		l := x.of[id]
		if l == nil {
			l = &busyList{}
			x.of[id] = l
		}
		// After every block that starts no later: the order of Records.
		i, _ := slices.BinarySearchFunc(l.recs, b.start+1, func(x busyRecord, t clock.Time) int { return cmp.Compare(x.start, t) })
		l.recs = slices.Insert(l.recs, i, b)
		l.longest = max(l.longest, b.end-b.start)
	}
	if l := x.of[member]; l != nil {
		return l
	}
	return &busyList{}
}

// readBusy reads r's start and end; ok is false when either is not an
// RFC 3339 instant (the record then makes no busy block).
func readBusy(s *State, r *Record) (b busyRecord, ok bool) {
	b.r = r
	st, _ := r.Fields["start"].(string)
	en, _ := r.Fields["end"].(string)
	var ok1, ok2 bool
	b.start, ok1 = s.Instant(st)
	b.end, ok2 = s.Instant(en)
	return b, ok1 && ok2
}

// refileBusy files the availability records again at the next look: r
// was written, and the member it names may have changed.
func (s *State) refileBusy(r *Record) {
	if a := s.World.Availability; a != nil && r.Type == a.Record {
		s.busyIx = busyIndex{}
	}
}
