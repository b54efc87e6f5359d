package clock

import (
	"fmt"
	"math"
	"slices"
	"time"
)

const (
	defaultDayStart = 9 * Hour
	defaultDayEnd   = 17 * Hour
	fullDay         = 24 * Hour

	maxTime       Time = math.MaxInt64
	holidayLayout      = "2006-01-02"
	secondsPerDay      = 86400
)

var defaultWorkdays = [7]bool{
	time.Monday: true, time.Tuesday: true, time.Wednesday: true, time.Thursday: true, time.Friday: true,
}

// Calendar is a business calendar: working hours on working days, minus
// holidays, anchored at a start instant. The zero value of every field but
// Start means the default: 09:00-17:00, Monday to Friday, no holidays.
//
// Days, working hours and holidays are read on the wall clock of
// Start.Location(): a working day runs from the moment the wall clock first
// reaches DayStart on that date to the moment it first reaches DayEnd. So on
// a day when clocks change inside working hours the day is shorter or longer;
// a time skipped when clocks are set forward is reached at the moment of the
// change, and a time shown twice when they are set back is reached the first
// time.
//
// Call Validate after setting the fields, and again after changing them.
// Validate must not run concurrently with other methods; once it has returned,
// all other methods only read the Calendar and may be called from any number
// of goroutines. The methods also work on a Calendar that was never validated
// (more slowly, as they re-read Holidays on each call), and on one that failed
// validation they still return without panicking: invalid hours are replaced
// by the defaults and unparseable holidays are ignored.
//
// Results that would lie beyond the largest Time (about 292 million years
// after Start) saturate at math.MaxInt64.
type Calendar struct {
	// Start is the world's start instant, simulated Time 0. Its Location is
	// used for all wall-clock fields (days, hours, holidays).
	Start time.Time
	// DayStart is the wall-clock offset from midnight at which work begins,
	// e.g. 9*Hour. If DayStart and DayEnd are both zero, 09:00-17:00 is used.
	DayStart Duration
	// DayEnd is the wall-clock offset from midnight at which work ends, e.g.
	// 17*Hour; 24*Hour means midnight at the end of the day. A DayEnd past
	// 24*Hour is a working period that crosses midnight into the next day,
	// such as a night shift 22:00-06:00 (DayStart 22*Hour, DayEnd 30*Hour);
	// it belongs to the day it starts on (its weekday, its holiday), and
	// lasts at most 24 hours.
	DayEnd Duration
	// Workdays says which days are working days, indexed by time.Weekday. If
	// no day is set, Monday to Friday are working days.
	Workdays [7]bool
	// Holidays lists dates ("2006-01-02", in Start's location) that are not
	// working days.
	Holidays []string

	rules *rules // built by Validate; see resolved
}

// rules is the resolved form of a Calendar: defaults applied, holidays parsed.
type rules struct {
	// The fields the rules were built from, to notice a Calendar edited after
	// Validate without calling it again.
	srcStart, srcEnd Duration
	srcDays          [7]bool
	srcHolidays      int
	srcBegin         time.Time // Start, whose location continuous depends on

	dayStart, dayEnd Duration
	dayLen           Duration // dayEnd - dayStart, > 0
	overnight        bool     // dayEnd > 24h: a day's period ends on the next day
	weekLen          Duration // dayLen * perWeek
	days             [7]bool
	perWeek          int64   // number of working weekdays, 1..7
	holidays         []int64 // sorted day numbers of holidays that fall on working weekdays
	// continuous says that every instant from Start on is working time:
	// 00:00-24:00 on all seven days, no holiday, and a location whose UTC
	// offset never changes after Start (steadyOffset). Working time is then time, and the
	// methods answer by arithmetic (see inSpan).
	continuous bool
}

// continuousSpan bounds the instants and spans the continuous fast paths
// answer: far before the last day (lastDay), whose results saturate.
const continuousSpan = maxTime / 4

// inSpan reports whether t lies from Start on and within continuousSpan of
// it, where a continuous calendar's working time is plain time.
func inSpan(t Time) bool { return t >= 0 && t <= continuousSpan }

// Validate reports whether the calendar is well formed: DayStart and DayEnd
// lie in [0, 24h] with DayStart before DayEnd (or are both zero, meaning
// 09:00-17:00), and every holiday is a date like "2026-01-19". A calendar
// always has a working day, since an empty Workdays means Monday to Friday.
// On success Validate also prepares the calendar for fast, concurrent use.
func (c *Calendar) Validate() error {
	ds, de := c.DayStart, c.DayEnd
	if ds != 0 || de != 0 {
		if ds < 0 || ds > fullDay {
			return fmt.Errorf("clock: DayStart %v is outside 00:00-24:00", ds)
		}
		if de < 0 || de > ds+fullDay {
			return fmt.Errorf("clock: DayEnd %v is outside 00:00-24:00 and more than a day after DayStart", de)
		}
		if ds >= de {
			return fmt.Errorf("clock: DayStart %s must be before DayEnd %s", clockTime(ds), clockTime(de))
		}
	}
	for _, h := range c.Holidays {
		if _, err := time.Parse(holidayLayout, h); err != nil {
			return fmt.Errorf("clock: holiday %q is not a date like 2026-01-19: %w", h, err)
		}
	}
	c.rules = c.build()
	return nil
}

// clockTime formats an offset from midnight as "09:00" or "09:00:30.500".
func clockTime(d Duration) string {
	s := fmt.Sprintf("%02d:%02d", d/Hour, d%Hour/Minute)
	if r := d % Minute; r != 0 {
		s += fmt.Sprintf(":%02d", r/Second)
		if ms := r % Second; ms != 0 {
			s += fmt.Sprintf(".%03d", ms)
		}
	}
	return s
}

// DayLength returns the length of a working day, DayEnd-DayStart: 8h for the
// zero Calendar. It is the day length to pass to ParseDuration. For a
// calendar with invalid hours it returns the default 8h that the other
// methods use.
func (c *Calendar) DayLength() Duration {
	ds, de := hours(c.DayStart, c.DayEnd)
	return de - ds
}

// hours returns the working hours to use for the given fields.
func hours(ds, de Duration) (Duration, Duration) {
	if 0 <= ds && ds < de && de <= fullDay || 0 <= ds && ds < fullDay && ds < de && de <= ds+fullDay {
		return ds, de
	}
	return defaultDayStart, defaultDayEnd
}

func (c *Calendar) build() *rules {
	r := &rules{srcStart: c.DayStart, srcEnd: c.DayEnd, srcDays: c.Workdays, srcHolidays: len(c.Holidays), srcBegin: c.Start}
	r.dayStart, r.dayEnd = hours(c.DayStart, c.DayEnd)
	r.dayLen = r.dayEnd - r.dayStart
	r.overnight = r.dayEnd > fullDay
	r.days = c.Workdays
	if r.days == [7]bool{} {
		r.days = defaultWorkdays
	}
	for _, ok := range r.days {
		if ok {
			r.perWeek++
		}
	}
	r.weekLen = r.dayLen * Duration(r.perWeek)
	for _, h := range c.Holidays {
		d, err := time.Parse(holidayLayout, h)
		if err != nil {
			continue
		}
		if n := floorDiv(d.Unix(), secondsPerDay); r.days[weekdayOf(n)] {
			r.holidays = append(r.holidays, n)
		}
	}
	slices.Sort(r.holidays)
	r.holidays = slices.Compact(r.holidays)
	r.continuous = r.dayStart == 0 && r.dayEnd == fullDay && r.perWeek == 7 && len(r.holidays) == 0 && steadyOffset(c.Start)
	return r
}

// steadyOffset reports whether the UTC offset of w's location never
// changes after w. A zone may end where the zone database's explicit
// transitions do (2038 for many) and go on with the same offset, as for a
// country that gave up summer time: such ends are followed. A location
// that still changes within a few zones, or that cannot be told within
// them, is not steady.
func steadyOffset(w time.Time) bool {
	_, offset := w.Zone()
	for range 8 {
		_, end := w.ZoneBounds()
		if end.IsZero() {
			return true
		}
		if _, next := end.Zone(); next != offset {
			return false
		}
		w = end
	}
	return false
}

// resolved returns the rules prepared by Validate if the calendar has not
// changed since, or freshly built ones. It never writes to c.
func (c *Calendar) resolved() *rules {
	if r := c.rules; r != nil && r.srcStart == c.DayStart && r.srcEnd == c.DayEnd &&
		r.srcDays == c.Workdays && r.srcHolidays == len(c.Holidays) && r.srcBegin == c.Start {
		return r
	}
	return c.build()
}

func (r *rules) isHoliday(n int64) bool {
	_, found := slices.BinarySearch(r.holidays, n)
	return found
}

// holidaysIn returns the number of holidays on working weekdays in days [a, b).
func (r *rules) holidaysIn(a, b int64) int64 {
	i, _ := slices.BinarySearch(r.holidays, a)
	j, _ := slices.BinarySearch(r.holidays, b)
	return int64(j - i)
}

func (r *rules) isWorkday(n int64) bool { return r.days[weekdayOf(n)] && !r.isHoliday(n) }

// uniformWork returns the working time in days [p, q), all of which have
// working hours of exactly dayLen.
func (r *rules) uniformWork(p, q int64) Duration {
	weeks := (q - p) / 7
	count := weeks * r.perWeek
	for n := p + 7*weeks; n < q; n++ {
		if r.days[weekdayOf(n)] {
			count++
		}
	}
	return Duration(count-r.holidaysIn(p, q)) * r.dayLen
}

// Days are numbered on the wall clock of Start's location: day n is the
// calendar date n days after 1970-01-01. A wall-clock time of day n is
// reached at one instant (see reach), so day n's working period is
// P(n) = [reach(n, DayStart), reach(n, DayEnd)). Because reach is monotone,
// the periods are disjoint and in day order, and P(n) lies within
// [reach(n, 0), reach(n+1, 0)). An instant t whose wall clock shows day n
// is at or after reach(n, 0), so no period of a day before n reaches t: every
// method starts its search at the day t shows. A period that crosses
// midnight (DayEnd past 24h) lies within [reach(n, 0), reach(n+2, 0))
// instead, so then the search starts a day earlier (firstDay).

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// weekdayOf returns the weekday of day n; 1970-01-01 was a Thursday.
func weekdayOf(n int64) time.Weekday {
	return time.Weekday(((n+int64(time.Thursday))%7 + 7) % 7)
}

// dayOfWall returns the number of the day w falls on in w's location.
func dayOfWall(w time.Time) int64 {
	_, offset := w.Zone()
	return floorDiv(w.Unix()+int64(offset), secondsPerDay)
}

func (c *Calendar) dayOf(t Time) int64 { return dayOfWall(c.Wall(t)) }

// firstDay is the first day whose working period may hold or follow t: the
// day t shows, or the day before when periods cross midnight.
func (c *Calendar) firstDay(r *rules, t Time) int64 {
	if r.overnight {
		return c.dayOf(t) - 1
	}
	return c.dayOf(t)
}

// lastDay returns a day number past which Times overflow; it is a day or two
// early, which only matters some 292 million years after Start.
func (c *Calendar) lastDay() int64 {
	return floorDiv(c.Start.Unix(), secondsPerDay) + int64(maxTime/Time(fullDay)) - 2
}

// Wall returns the wall-clock instant of t: Start plus t milliseconds, in
// Start's location. It carries no monotonic clock reading.
func (c *Calendar) Wall(t Time) time.Time {
	sec := c.Start.Unix() + int64(t/1000)
	nsec := int64(c.Start.Nanosecond()) + int64(t%1000)*1e6
	return time.Unix(sec, nsec).In(c.Start.Location())
}

// instant returns the first Time whose wall-clock instant is at or after w.
func (c *Calendar) instant(w time.Time) Time {
	sec := w.Unix() - c.Start.Unix()
	ns := int64(w.Nanosecond()) - int64(c.Start.Nanosecond())
	ms := ns / 1e6
	if ns > ms*1e6 {
		ms++
	}
	return Time(sec*1000 + ms)
}

// reach returns the first instant at which the wall clock of Start's location
// reaches offset off (0..24h) of day n: the instant it shows that time, the
// earlier of two if the clock is set back over it, and the moment of the
// change if the clock is set forward over it. (time.Date alone leaves the
// last two cases unspecified, and is not monotone across a gap.)
func (c *Calendar) reach(n int64, off Duration) time.Time {
	w, _, _ := c.reachSpan(n, off)
	return w
}

// reachSpan is reach that also returns, when the clock shows exactly the
// time asked for at w (known), the end of the span of constant UTC offset
// holding w (zero if the span has no end).
func (c *Calendar) reachSpan(n int64, off Duration) (w, end time.Time, known bool) {
	want := n*secondsPerDay + int64(off/Second) // local seconds since 1970
	h := off / Hour
	off -= h * Hour
	m := off / Minute
	off -= m * Minute
	s := off / Second
	off -= s * Second
	w = time.Date(1970, time.January, 1+int(n), int(h), int(m), int(s), int(off)*1e6, c.Start.Location())
	_, offset := w.Zone()
	start, end := w.ZoneBounds()
	switch got := w.Unix() + int64(offset); {
	case got < want: // skipped; w is before the gap, which ends its zone
		return end, time.Time{}, false
	case got > want: // skipped; w is after the gap, which starts its zone
		return start, time.Time{}, false
	}
	if start.IsZero() || w.Sub(start) > 48*time.Hour {
		return w, end, true // no recent change could have shown this time before
	}
	_, prev := start.Add(-time.Nanosecond).Zone()
	if earlier := w.Add(-time.Duration(prev-offset) * time.Second); prev > offset && earlier.Before(start) {
		return earlier, start, true // shown once before the clock was set back
	}
	return w, end, true
}

// workHours returns the working period [s, e) of day n, ignoring whether n is
// a working day. e-s is dayLen except when the UTC offset changes inside it.
func (c *Calendar) workHours(r *rules, n int64) (s, e Time) {
	start, end, known := c.reachSpan(n, r.dayStart)
	s = c.instant(start)
	if known && (end.IsZero() || start.Add(time.Duration(r.dayLen)*time.Millisecond).Before(end)) {
		return s, s.Add(r.dayLen) // the clock runs evenly from DayStart to DayEnd
	}
	e = c.instant(c.reach(n, r.dayEnd))
	return s, max(s, e)
}

// uniform returns the instant day n begins, mid = reach(n, 0), and u such
// that the days in [n, u) lie wholly inside one span of constant UTC offset:
// day j begins at mid + (j-n)*24h and its working period is exactly
// [DayStart, DayEnd) after that. u <= n if day n itself may not be uniform;
// u is math.MaxInt64 if the offset never changes after day n.
func (c *Calendar) uniform(n int64) (u int64, mid Time) {
	w := c.reach(n, 0)
	start, end := w.ZoneBounds()
	switch {
	case !start.IsZero() && !start.Before(w):
		u = n // the offset changes at this midnight: take the day on its own
	case end.IsZero():
		u = math.MaxInt64
	default:
		// Leave out the day before the change too: with clocks set forward
		// from 23:30 to 00:30 it ends (DayEnd 24:00) half an hour early.
		u = dayOfWall(end) - 1
	}
	return u, c.instant(w)
}

// IsWorking reports whether t is inside working hours, [DayStart, DayEnd),
// on a working day that is not a holiday.
func (c *Calendar) IsWorking(t Time) bool {
	r := c.resolved()
	if r.continuous && inSpan(t) {
		return true
	}
	last := c.lastDay()
	for n := c.firstDay(r, t); n < last; n++ {
		if r.isWorkday(n) {
			s, e := c.workHours(r, n)
			if t < s {
				return false // later periods start later still
			}
			if t < e {
				return true
			}
		}
		if c.instant(c.reach(n+1, 0)) > t {
			return false
		}
		// Only if clocks were set back across midnight does t, dated day
		// n, come after day n+1 began.
	}
	return false
}

// NextWorking returns t if t is a working instant, and otherwise the start of
// the next working period.
func (c *Calendar) NextWorking(t Time) Time {
	r := c.resolved()
	if r.continuous && inSpan(t) {
		return t
	}
	last := c.lastDay()
	for n := c.firstDay(r, t); n < last; n++ {
		if r.isWorkday(n) {
			if s, e := c.workHours(r, n); t < e {
				return max(t, s)
			}
		}
	}
	return maxTime
}

// AddWork returns the instant at which work of working time has elapsed,
// starting at t and skipping nights, non-working days and holidays.
// AddWork(t, 0) is t, as is AddWork with negative work. If the work ends
// exactly at the end of a working day, the result is that DayEnd instant, not
// the next morning. Long spans are cheap: whole weeks, and whole spans
// between UTC offset changes, are skipped arithmetically, so the cost grows
// with the number of daylight saving changes crossed (two a year where they
// apply), not with the number of days. On a calendar that works every
// instant (00:00-24:00 on all seven days, no holidays, a zone without
// offset changes: a 24/7 operation) it is t+work, with no day looked at.
func (c *Calendar) AddWork(t Time, work Duration) Time {
	if work <= 0 {
		return t
	}
	r := c.resolved()
	if r.continuous && inSpan(t) && work <= Duration(continuousSpan) {
		return t.Add(work)
	}
	return c.addWork(r, t, work)
}

// addWork is AddWork by the days of the calendar, for work > 0.
func (c *Calendar) addWork(r *rules, t Time, work Duration) Time {
	last := c.lastDay()
	for n := c.firstDay(r, t); n < last; {
		if work > r.weekLen {
			// Skip uniform days that start after t, leaving some work for
			// after: the whole span up to the next UTC offset change if the
			// work outlasts it, else whole weeks.
			if u, mid := c.uniform(n); u > n && mid >= t {
				u = min(u, last)
				if w := r.uniformWork(n, u); w < work {
					work -= w
					n = u
					continue
				}
				if weeks := min(int64((work-1)/r.weekLen), (u-n)/7); weeks > 0 {
					work -= Duration(weeks)*r.weekLen - Duration(r.holidaysIn(n, n+7*weeks))*r.dayLen
					n += 7 * weeks
					continue
				}
			}
		}
		if r.isWorkday(n) {
			if s, e := c.workHours(r, n); t < e {
				from := max(t, s)
				if work <= e.Sub(from) {
					return from.Add(work)
				}
				work -= e.Sub(from)
				t = e
			}
		}
		n++
	}
	return maxTime
}

// WorkBetween returns the working time in [a, b), or 0 if b <= a. For any t
// and d >= 0, WorkBetween(t, AddWork(t, d)) == d.
func (c *Calendar) WorkBetween(a, b Time) Duration {
	if b <= a {
		return 0
	}
	r := c.resolved()
	if r.continuous && inSpan(a) && inSpan(b) {
		return b.Sub(a)
	}
	return c.workBetween(r, a, b)
}

// workBetween is WorkBetween by the days of the calendar, for a < b.
func (c *Calendar) workBetween(r *rules, a, b Time) Duration {
	last := c.lastDay()
	var total Duration
	extra := max(0, r.dayEnd-fullDay) // how far a period reaches into the next day
	for n := c.firstDay(r, a); n < last; {
		u, mid := c.uniform(n)
		if mid >= b {
			break // this day and all later ones begin at or after b
		}
		if u > n && mid >= a {
			// Whole uniform days that end by b.
			if full := min(int64((b.Sub(mid)-extra)/fullDay), u-n); full > 0 {
				total += r.uniformWork(n, n+full)
				n += full
				continue
			}
		}
		if r.isWorkday(n) {
			s, e := c.workHours(r, n)
			s, e = max(s, a), min(e, b)
			total += max(e.Sub(s), 0)
		}
		n++
	}
	return total
}

// PeriodEnd returns the end of the working period that holds t, or of the
// next one if t is not a working instant: the instant a shift ends. Periods
// that touch are one, as in a Rota: a 00:00-24:00 day followed by another
// working day does not end at midnight. A period that goes on for rotaSpan
// (a calendar that works every instant) is reported to end rotaSpan after
// its start or t, whichever is later.
func (c *Calendar) PeriodEnd(t Time) Time {
	r := c.resolved()
	if r.continuous && inSpan(t) {
		return t.Add(rotaSpan)
	}
	last := c.lastDay()
	for n := c.firstDay(r, t); n < last; n++ {
		if !r.isWorkday(n) {
			continue
		}
		s, e := c.workHours(r, n)
		if t >= e {
			continue
		}
		limit := maxTime
		if from := max(t, s); maxTime-from > Time(rotaSpan) {
			limit = from.Add(rotaSpan)
		}
		for m := n + 1; e < limit && m < last && r.isWorkday(m); m++ {
			s2, e2 := c.workHours(r, m)
			if s2 != e {
				break
			}
			e = e2
		}
		return min(e, limit)
	}
	return maxTime
}
