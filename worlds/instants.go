package worlds

import (
	"strings"
	"time"

	"github.com/corpsim/corpsim/clock"
)

// This file reads the times of a world file. Version 1 writes every instant
// as an offset: working time from the world's start ("3d", "2d4h"). From
// version 2 an instant may also be written in RFC 3339
// ("2026-02-17T09:00:00Z"). An instant means exactly what the offset of the
// working time elapsed from the start to it means: inside working hours it
// is that moment; outside them (a night, a weekend, a holiday) it is the end
// of the last working period before it, as an offset ending there is, so
// "Saturday noon" is Friday's close of business and a deadline of
// 2026-01-21T17:00:00Z is the same as the offset reaching it. (An instant
// before the first working moment is that moment.) An instant before the
// world's start, or past the horizon, is refused.
//
// Every field that takes a time (interruptions[].at, arrivals[].start,
// until and at[], projects[].start and deadline, members[].npc.absent[].from,
// horizon) reads it with when.

// looksLikeInstant reports whether s is written as a calendar instant
// ("2026-…T…") rather than as an offset: a date then a "T". Offsets never
// contain '-'.
func looksLikeInstant(s string) bool {
	return len(s) >= 11 && s[4] == '-' && strings.ContainsRune(s, 'T')
}

// instant reads an RFC 3339 instant s at path as a simulated time on cal:
// the offset of the working time from cal.Start to it (milliseconds rounded
// up, so that a time never falls before the instant written). It reports the
// field and returns false when s is not an instant, the file's version is
// below 2, or the instant falls before the start or after limit (0: no
// limit).
func (v *validator) instant(path, s string, cal *clock.Calendar, limit clock.Time) (clock.Time, bool) {
	if !v.needs(2, path, "an RFC 3339 instant") {
		return 0, false
	}
	w, err := time.Parse(time.RFC3339, s)
	if err != nil {
		v.errf(path, "expected an RFC 3339 instant such as 2026-02-17T09:00:00Z, got %q", s)
		return 0, false
	}
	if w.Before(cal.Start) {
		v.errf(path, "%s is before the world's start (%s)", s, cal.Start.Format(time.RFC3339))
		return 0, false
	}
	d := w.Sub(cal.Start)
	ms := d.Milliseconds()
	if time.Duration(ms)*time.Millisecond < d {
		ms++
	}
	t := cal.AddWork(cal.NextWorking(0), cal.WorkBetween(0, clock.Time(ms)))
	if limit > 0 && t > limit {
		v.errf(path, "%s is past the horizon (%s)", s, cal.Wall(limit).Format(time.RFC3339))
		return 0, false
	}
	return t, true
}

// when reads a time at path: an offset (working time from the start, as in
// every version) or, from version 2, an RFC 3339 instant. required says the
// field must be given; positive that an offset of zero, or an instant that
// is the start, is refused. An instant must fall within [start, v.horizon].
func (v *validator) when(path, s string, cal *clock.Calendar, required, positive bool) (clock.Time, bool) {
	if s == "" && !required {
		return 0, true
	}
	if looksLikeInstant(s) {
		t, ok := v.instant(path, s, cal, v.horizon)
		if ok && positive && t == 0 && !v.lim.Recorded { // a recorded world reads as it did then: no deadline
			// As an offset of zero is: a deadline at time 0 reads as none.
			v.errf(path, "%s is the world's start: it must be after it", s)
			return 0, false
		}
		return t, ok
	}
	d, ok := v.duration(path, s, cal.DayLength(), positive)
	if !ok {
		return 0, false
	}
	return cal.AddWork(cal.NextWorking(0), d), true
}
