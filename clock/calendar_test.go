package clock

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"
	_ "time/tzdata" // the zones below, whatever the machine has installed
)

// monday is the start of the test calendars: Monday 2026-01-05 00:00 UTC.
var monday = time.Date(2026, time.January, 5, 0, 0, 0, 0, time.UTC)

// at returns the Time of hh:mm on the given day after monday (day 0).
func at(day, hh, mm int) Time {
	return Time(day)*Time(24*Hour) + Time(hh)*Time(Hour) + Time(mm)*Time(Minute)
}

func mustValidate(tb testing.TB, c Calendar) *Calendar {
	tb.Helper()
	if err := c.Validate(); err != nil {
		tb.Fatalf("Validate() = %v, want nil", err)
	}
	return &c
}

func mustLocation(tb testing.TB, name string) *time.Location {
	tb.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		tb.Fatalf("LoadLocation(%q): %v", name, err)
	}
	return loc
}

// show formats a Time as a wall-clock instant for failure messages.
func show(c *Calendar, t Time) string {
	return fmt.Sprintf("%d (%s)", t, c.Wall(t).Format("Mon 2006-01-02 15:04:05.000 MST"))
}

func TestCalendarValidate(t *testing.T) {
	tests := []struct {
		name string
		cal  Calendar
		want string // "" for no error
	}{
		{"zero value", Calendar{}, ""},
		{"explicit hours", Calendar{DayStart: 8 * Hour, DayEnd: 16*Hour + 30*Minute}, ""},
		{"whole day", Calendar{DayStart: 0, DayEnd: 24 * Hour}, ""},
		{"weekend only", Calendar{Workdays: [7]bool{time.Saturday: true, time.Sunday: true}}, ""},
		{"holidays", Calendar{Holidays: []string{"2026-01-19", "2026-12-25", "2026-01-19"}}, ""},
		{"start after end", Calendar{DayStart: 17 * Hour, DayEnd: 9 * Hour}, "clock: DayStart 17:00 must be before DayEnd 09:00"},
		{"empty day", Calendar{DayStart: 9*Hour + 30*Minute + 15*Second, DayEnd: 9*Hour + 30*Minute + 15*Second}, "clock: DayStart 09:30:15 must be before DayEnd 09:30:15"},
		{"only end zero", Calendar{DayStart: 9 * Hour}, "clock: DayStart 09:00 must be before DayEnd 00:00"},
		{"negative start", Calendar{DayStart: -Hour, DayEnd: 9 * Hour}, "clock: DayStart -1h is outside 00:00-24:00"},
		{"end past midnight", Calendar{DayStart: 22 * Hour, DayEnd: 30 * Hour}, ""},
		{"longer than a day", Calendar{DayStart: 9 * Hour, DayEnd: 34 * Hour}, "clock: DayEnd 34h is outside 00:00-24:00 and more than a day after DayStart"},
		{"bad holiday", Calendar{Holidays: []string{"2026-01-19", "2026-02-30"}}, `clock: holiday "2026-02-30" is not a date like 2026-01-19: parsing time "2026-02-30": day out of range`},
		{"holiday with time", Calendar{Holidays: []string{"2026-01-19T00:00"}}, `clock: holiday "2026-01-19T00:00" is not a date like 2026-01-19: parsing time "2026-01-19T00:00": extra text: "T00:00"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cal.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("Validate() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCalendarDayLength(t *testing.T) {
	tests := []struct {
		name string
		cal  Calendar
		want Duration
	}{
		{"zero value", Calendar{}, 8 * Hour},
		{"explicit", Calendar{DayStart: 8 * Hour, DayEnd: 14*Hour + 30*Minute}, 6*Hour + 30*Minute},
		{"whole day", Calendar{DayEnd: 24 * Hour}, 24 * Hour},
		{"invalid falls back to default", Calendar{DayStart: 17 * Hour, DayEnd: 9 * Hour}, 8 * Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.cal.DayLength(); got != tt.want {
				t.Errorf("DayLength() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCalendarWall(t *testing.T) {
	ny := mustLocation(t, "America/New_York")
	start := time.Date(2026, time.March, 7, 12, 0, 0, 250_000, ny) // sub-millisecond start
	c := &Calendar{Start: start}
	tests := []struct {
		name string
		t    Time
		want time.Time
	}{
		{"start", 0, start},
		{"across DST", Time(24 * Hour), start.Add(24 * time.Hour)},
		{"before start", -1500, start.Add(-1500 * time.Millisecond)},
		{"beyond time.Duration", Time(300 * 365 * 24 * Hour), start.Add(150 * 365 * 24 * time.Hour).Add(150 * 365 * 24 * time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := c.Wall(tt.t)
			if !got.Equal(tt.want) || got.Location() != ny {
				t.Errorf("Wall(%d) = %v, want %v", tt.t, got, tt.want)
			}
			if back := c.instant(got); back != tt.t {
				t.Errorf("instant(Wall(%d)) = %d, want %d", tt.t, back, tt.t)
			}
		})
	}
}

func TestCalendarIsWorking(t *testing.T) {
	c := mustValidate(t, Calendar{Start: monday, Holidays: []string{"2026-01-07"}}) // Wednesday
	tests := []struct {
		name string
		t    Time
		want bool
	}{
		{"before the day starts", at(0, 9, 0) - 1, false},
		{"day start", at(0, 9, 0), true},
		{"last millisecond", at(0, 17, 0) - 1, true},
		{"day end", at(0, 17, 0), false},
		{"midnight", at(1, 0, 0), false},
		{"holiday", at(2, 12, 0), false},
		{"after the holiday", at(3, 12, 0), true},
		{"friday", at(4, 16, 59), true},
		{"saturday", at(5, 12, 0), false},
		{"sunday", at(6, 12, 0), false},
		{"before start", at(-3, 10, 0), true}, // Friday 2026-01-02
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.IsWorking(tt.t); got != tt.want {
				t.Errorf("IsWorking(%s) = %v, want %v", show(c, tt.t), got, tt.want)
			}
		})
	}
}

func TestCalendarNextWorking(t *testing.T) {
	c := mustValidate(t, Calendar{Start: monday, Holidays: []string{"2026-01-12"}}) // the next Monday
	tests := []struct {
		name string
		t    Time
		want Time
	}{
		{"working instant", at(0, 10, 30), at(0, 10, 30)},
		{"day start", at(0, 9, 0), at(0, 9, 0)},
		{"early morning", at(0, 3, 0), at(0, 9, 0)},
		{"day end", at(0, 17, 0), at(1, 9, 0)},
		{"friday evening over weekend and holiday", at(4, 18, 0), at(8, 9, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.NextWorking(tt.t); got != tt.want {
				t.Errorf("NextWorking(%s) = %s, want %s", show(c, tt.t), show(c, got), show(c, tt.want))
			}
		})
	}
}

func TestCalendarAddWork(t *testing.T) {
	plain := mustValidate(t, Calendar{Start: monday})
	holidays := mustValidate(t, Calendar{Start: monday, Holidays: []string{"2026-01-07", "2026-01-10", "2026-01-12"}})
	early := mustValidate(t, Calendar{Start: monday, DayStart: 6 * Hour, DayEnd: 10 * Hour,
		Workdays: [7]bool{time.Tuesday: true, time.Thursday: true}})
	tests := []struct {
		name string
		cal  *Calendar
		t    Time
		work Duration
		want Time
	}{
		{"no work", plain, at(5, 12, 0), 0, at(5, 12, 0)},
		{"negative work", plain, at(0, 10, 0), -Hour, at(0, 10, 0)},
		{"within a day", plain, at(0, 10, 0), 2 * Hour, at(0, 12, 0)},
		{"ends exactly at day end", plain, at(0, 9, 0), 8 * Hour, at(0, 17, 0)},
		{"one millisecond more", plain, at(0, 9, 0), 8*Hour + 1, at(1, 9, 0) + 1},
		{"starts before the day", plain, at(0, 7, 0), Hour, at(0, 10, 0)},
		{"starts at day end", plain, at(0, 17, 0), Hour, at(1, 10, 0)},
		{"friday over the weekend", plain, at(4, 16, 0), 2 * Hour, at(7, 10, 0)},
		{"from saturday", plain, at(5, 12, 0), Hour, at(7, 10, 0)},
		{"week", plain, at(0, 9, 0), 40 * Hour, at(4, 17, 0)},
		{"three weeks", plain, at(2, 13, 0), 120 * Hour, at(23, 13, 0)},
		{"year", plain, at(0, 9, 0), 52 * 40 * Hour, at(52*7-3, 17, 0)},
		{"holiday skipped", holidays, at(1, 16, 0), 2 * Hour, at(3, 10, 0)},
		{"weekend holiday changes nothing", holidays, at(4, 16, 0), 2 * Hour, at(8, 10, 0)},
		{"week with holidays", holidays, at(0, 9, 0), 40 * Hour, at(8, 17, 0)},
		{"custom days", early, at(0, 9, 0), 5 * Hour, at(3, 7, 0)},
		{"custom days, two weeks", early, at(1, 6, 0), 16 * Hour, at(10, 10, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.cal.AddWork(tt.t, tt.work)
			if got != tt.want {
				t.Errorf("AddWork(%s, %v) = %s, want %s", show(tt.cal, tt.t), tt.work, show(tt.cal, got), show(tt.cal, tt.want))
			}
			if tt.work > 0 {
				if back := tt.cal.WorkBetween(tt.t, got); back != tt.work {
					t.Errorf("WorkBetween(%s, %s) = %v, want %v", show(tt.cal, tt.t), show(tt.cal, got), back, tt.work)
				}
			}
		})
	}
}

// TestCalendarPeriodEnd checks where a working period ends: a period that
// the next day's touches (a 00:00-24:00 day before another working day) does
// not end at midnight, and one that never ends is reported to end 28 days on,
// as a Rota's.
func TestCalendarPeriodEnd(t *testing.T) {
	all := [7]bool{true, true, true, true, true, true, true}
	office := mustValidate(t, Calendar{Start: monday})
	night := mustValidate(t, Calendar{Start: monday, DayStart: 22 * Hour, DayEnd: 30 * Hour})
	weekdays := mustValidate(t, Calendar{Start: monday, DayStart: 0, DayEnd: 24 * Hour})
	always := mustValidate(t, Calendar{Start: monday, DayStart: 0, DayEnd: 24 * Hour, Workdays: all})
	holiday := mustValidate(t, Calendar{Start: monday, DayStart: 0, DayEnd: 24 * Hour, Workdays: all, Holidays: []string{"2026-01-08"}})
	tests := []struct {
		name string
		c    *Calendar
		at   Time
		want Time
	}{
		{"office hours end at 17:00", office, at(0, 10, 0), at(0, 17, 0)},
		{"after hours: the next day's end", office, at(0, 17, 0), at(1, 17, 0)},
		{"a night ends the next morning", night, at(0, 23, 0), at(1, 6, 0)},
		{"whole weekdays run to saturday", weekdays, at(0, 10, 0), at(5, 0, 0)},
		{"from friday too", weekdays, at(4, 23, 0), at(5, 0, 0)},
		{"on the weekend: the next week's", weekdays, at(5, 10, 0), at(12, 0, 0)},
		{"every hour: 28 days on", always, at(2, 10, 0), at(30, 10, 0)},
		{"up to a holiday", holiday, at(0, 10, 0), at(3, 0, 0)},
		{"on the holiday: from the next day", holiday, at(3, 10, 0), at(32, 0, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.PeriodEnd(tt.at); got != tt.want {
				t.Errorf("PeriodEnd(%s) = %s, want %s", show(tt.c, tt.at), show(tt.c, got), show(tt.c, tt.want))
			}
			if got, want := (Rota{tt.c}).PeriodEnd(tt.at), tt.want; got != want {
				t.Errorf("Rota's PeriodEnd(%s) = %s, want %s", show(tt.c, tt.at), show(tt.c, got), show(tt.c, want))
			}
		})
	}
}

func TestCalendarWorkBetween(t *testing.T) {
	c := mustValidate(t, Calendar{Start: monday, Holidays: []string{"2026-01-07"}})
	tests := []struct {
		name string
		a, b Time
		want Duration
	}{
		{"empty", at(0, 10, 0), at(0, 10, 0), 0},
		{"reversed", at(0, 12, 0), at(0, 10, 0), 0},
		{"within a day", at(0, 10, 0), at(0, 12, 30), 2*Hour + 30*Minute},
		{"night only", at(0, 17, 0), at(1, 9, 0), 0},
		{"whole day", at(0, 0, 0), at(1, 0, 0), 8 * Hour},
		{"over a holiday", at(1, 16, 0), at(3, 10, 0), 2 * Hour},
		{"over a weekend", at(4, 16, 0), at(7, 10, 0), 2 * Hour},
		{"four weeks", at(0, 0, 0), at(28, 0, 0), 19 * 8 * Hour},
		{"before start", at(-7, 0, 0), at(0, 0, 0), 5 * 8 * Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.WorkBetween(tt.a, tt.b); got != tt.want {
				t.Errorf("WorkBetween(%s, %s) = %v, want %v", show(c, tt.a), show(c, tt.b), got, tt.want)
			}
		})
	}
}

// TestCalendarDaylightSaving checks a round-the-clock calendar in New York,
// where 2026-03-08 has 23 hours and 2026-11-01 has 25.
func TestCalendarDaylightSaving(t *testing.T) {
	ny := mustLocation(t, "America/New_York")
	c := mustValidate(t, Calendar{
		Start:    time.Date(2026, time.January, 1, 0, 0, 0, 0, ny),
		DayStart: 0, DayEnd: 24 * Hour,
		Workdays: [7]bool{true, true, true, true, true, true, true},
	})
	midnight := func(m time.Month, d int) Time { return c.instant(time.Date(2026, m, d, 0, 0, 0, 0, ny)) }
	tests := []struct {
		name string
		a, b Time
		want Duration
	}{
		{"spring forward", midnight(time.March, 8), midnight(time.March, 9), 23 * Hour},
		{"fall back", midnight(time.November, 1), midnight(time.November, 2), 25 * Hour},
		{"ordinary day", midnight(time.June, 1), midnight(time.June, 2), 24 * Hour},
		{"whole year", midnight(time.January, 1), c.instant(time.Date(2027, time.January, 1, 0, 0, 0, 0, ny)), 365 * 24 * Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.WorkBetween(tt.a, tt.b); got != tt.want {
				t.Errorf("WorkBetween(%s, %s) = %v, want %v", show(c, tt.a), show(c, tt.b), got, tt.want)
			}
			if got := c.AddWork(tt.a, tt.want); got != tt.b {
				t.Errorf("AddWork(%s, %v) = %s, want %s", show(c, tt.a), tt.want, show(c, got), show(c, tt.b))
			}
		})
	}
}

func TestCalendarZeroValue(t *testing.T) {
	var c Calendar // Start is 0001-01-01 00:00 UTC, a Monday
	if got, want := c.NextWorking(0), at(0, 9, 0); got != want {
		t.Errorf("NextWorking(0) = %s, want %s", show(&c, got), show(&c, want))
	}
	if got, want := c.AddWork(0, 41*Hour), at(7, 10, 0); got != want {
		t.Errorf("AddWork(0, 41h) = %s, want %s", show(&c, got), show(&c, want))
	}
}

// TestCalendarEditedAfterValidate checks that a Calendar changed after
// Validate does not answer from the stale preparation.
func TestCalendarEditedAfterValidate(t *testing.T) {
	c := mustValidate(t, Calendar{Start: monday})
	c.Holidays = append(c.Holidays, "2026-01-06")
	if got, want := c.AddWork(at(0, 16, 0), 2*Hour), at(2, 10, 0); got != want {
		t.Errorf("after adding a holiday: AddWork = %s, want %s", show(c, got), show(c, want))
	}
	c.DayStart, c.DayEnd = 8*Hour, 12*Hour
	if got, want := c.AddWork(at(0, 11, 0), 2*Hour), at(2, 9, 0); got != want {
		t.Errorf("after changing hours: AddWork = %s, want %s", show(c, got), show(c, want))
	}
}

// TestCalendarInvalid checks that an invalid calendar, used anyway, falls back
// to the defaults instead of panicking or looping.
func TestCalendarInvalid(t *testing.T) {
	c := Calendar{Start: monday, DayStart: 17 * Hour, DayEnd: 9 * Hour, Holidays: []string{"bogus", "2026-01-06"}}
	if c.Validate() == nil {
		t.Fatal("Validate() = nil, want an error")
	}
	if got, want := c.AddWork(at(0, 16, 0), 2*Hour), at(2, 10, 0); got != want {
		t.Errorf("AddWork = %s, want %s", show(&c, got), show(&c, want))
	}
}

func TestCalendarSaturates(t *testing.T) {
	c := mustValidate(t, Calendar{Start: monday})
	tests := []struct {
		name string
		got  Time
	}{
		{"AddWork of the largest Duration", c.AddWork(0, math.MaxInt64)},
		{"AddWork near the end of time", c.AddWork(maxTime-Time(Hour), 2*Hour)},
		{"NextWorking near the end of time", c.NextWorking(maxTime - 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != maxTime {
				t.Errorf("got %d, want %d", tt.got, maxTime)
			}
		})
	}
}

func TestCalendarConcurrent(t *testing.T) {
	c := mustValidate(t, Calendar{Start: monday, Holidays: []string{"2026-01-07", "2026-02-16"}})
	want := c.AddWork(at(1, 11, 0), 300*Hour)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if got := c.AddWork(at(1, 11, 0), 300*Hour); got != want {
					t.Errorf("AddWork = %d, want %d", got, want)
					return
				}
				c.IsWorking(at(2, 10, 0))
				c.NextWorking(at(5, 0, 0))
				c.WorkBetween(0, want)
			}
		})
	}
	wg.Wait()
}

// refCalendar is a slow model of Calendar that walks day by day, sharing no
// code with the package. It finds when the wall clock reaches a time from the
// list of the location's UTC offset changes, which it finds by sampling.
type refCalendar struct {
	start    time.Time
	ds, de   time.Duration
	days     [7]bool
	holidays map[string]bool
	offsets  []offsetSpan
}

// offsetSpan is a span of constant UTC offset, from start (Unix seconds) to
// the next span's start.
type offsetSpan struct{ start, offset int64 }

var (
	offsetsMu    sync.Mutex
	offsetsCache = map[*time.Location][]offsetSpan{}
)

// offsetSpans returns loc's offset changes between 1999 and 2070, found by
// sampling every hour and bisecting each change to the second.
func offsetSpans(loc *time.Location) []offsetSpan {
	offsetsMu.Lock()
	defer offsetsMu.Unlock()
	if spans, ok := offsetsCache[loc]; ok {
		return spans
	}
	offsetAt := func(sec int64) int64 {
		_, off := time.Unix(sec, 0).In(loc).Zone()
		return int64(off)
	}
	from, to := time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC).Unix(), time.Date(2070, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	spans := []offsetSpan{{math.MinInt64, offsetAt(from)}}
	for sec := from + 3600; sec <= to; sec += 3600 {
		prev := spans[len(spans)-1].offset
		if offsetAt(sec) == prev {
			continue
		}
		lo, hi := sec-3600, sec
		for hi-lo > 1 {
			if mid := (lo + hi) / 2; offsetAt(mid) == prev {
				lo = mid
			} else {
				hi = mid
			}
		}
		spans = append(spans, offsetSpan{hi, offsetAt(hi)})
	}
	offsetsCache[loc] = spans
	return spans
}

func newRefCalendar(c *Calendar) *refCalendar {
	r := &refCalendar{start: c.Start, ds: 9 * time.Hour, de: 17 * time.Hour, days: c.Workdays,
		holidays: map[string]bool{}, offsets: offsetSpans(c.Start.Location())}
	if c.DayStart != 0 || c.DayEnd != 0 {
		r.ds, r.de = time.Duration(c.DayStart)*time.Millisecond, time.Duration(c.DayEnd)*time.Millisecond
	}
	if r.days == [7]bool{} {
		r.days = [7]bool{false, true, true, true, true, true, false}
	}
	for _, h := range c.Holidays {
		r.holidays[h] = true
	}
	return r
}

// reach returns the first instant, in Unix nanoseconds, at which the wall
// clock shows local (nanoseconds since 1970-01-01 00:00 local) or later.
func (r *refCalendar) reach(local int64) int64 {
	spans := r.offsets
	i := max(sort.Search(len(spans), func(i int) bool { return spans[i].start > local/1e9-2*86400 })-1, 0)
	for ; ; i++ {
		x := local - spans[i].offset*1e9 // the instant showing local in this span
		if spans[i].start != math.MinInt64 {
			x = max(x, spans[i].start*1e9)
		}
		if i+1 == len(spans) || x < spans[i+1].start*1e9 {
			return x
		}
	}
}

// time returns the first Time at or after the Unix nanosecond instant x.
func (r *refCalendar) time(x int64) Time {
	d := x - r.start.UnixNano()
	ms := d / 1e6
	if d > ms*1e6 {
		ms++
	}
	return Time(ms)
}

// day returns the working period of the date y-m-d and whether it is a
// working day, along with the Time the date begins.
func (r *refCalendar) day(y int, m time.Month, d int) (s, e, midnight Time, working bool) {
	date := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	working = r.days[date.Weekday()] && !r.holidays[date.Format("2006-01-02")]
	local := date.UnixNano()
	s, e = r.time(r.reach(local+int64(r.ds))), r.time(r.reach(local+int64(r.de)))
	return s, e, r.time(r.reach(local)), working
}

func (r *refCalendar) date(t Time) (int, time.Month, int) {
	return r.start.Add(time.Duration(t) * time.Millisecond).Date()
}

func (r *refCalendar) addWork(t Time, work Duration) Time {
	if work <= 0 {
		return t
	}
	y, m, d := r.date(t)
	for i := -1; ; i++ {
		s, e, _, working := r.day(y, m, d+i)
		if !working || t >= e {
			continue
		}
		from := max(t, s)
		if work <= e.Sub(from) {
			return from.Add(work)
		}
		work -= e.Sub(from)
		t = e
	}
}

func (r *refCalendar) workBetween(a, b Time) Duration {
	var total Duration
	y, m, d := r.date(a)
	for i := -1; ; i++ {
		s, e, midnight, working := r.day(y, m, d+i)
		if midnight >= b {
			return total
		}
		if lo, hi := max(s, a), min(e, b); working && hi > lo {
			total += hi.Sub(lo)
		}
	}
}

func (r *refCalendar) nextWorking(t Time) Time {
	y, m, d := r.date(t)
	for i := -1; ; i++ {
		if s, e, _, working := r.day(y, m, d+i); working && t < e {
			return max(t, s)
		}
	}
}

var testZones = []string{
	"America/New_York",
	"Europe/Berlin",
	"Australia/Lord_Howe", // 30-minute daylight saving shift
	"America/Santiago",    // changes at midnight
	"America/Havana",      // changes at midnight
	"Asia/Tehran",
}

var (
	testLocationsOnce sync.Once
	testLocationsList []*time.Location
)

// testLocations returns UTC, two fixed zones and the testZones, loaded once so
// that offsetSpans' cache works.
func testLocations(tb testing.TB) []*time.Location {
	testLocationsOnce.Do(func() {
		testLocationsList = []*time.Location{time.UTC, time.FixedZone("IST", 5*3600+1800), time.FixedZone("M", -3*3600)}
		for _, name := range testZones {
			testLocationsList = append(testLocationsList, mustLocation(tb, name))
		}
	})
	return testLocationsList
}

// randomCalendar returns a calendar with random hours, workdays, holidays and
// location, starting between 2020 and 2027.
func randomCalendar(tb testing.TB, rng *rand.Rand) Calendar {
	locs := testLocations(tb)
	loc := locs[rng.IntN(len(locs))]
	start := time.Date(2020+rng.IntN(8), time.Month(1+rng.IntN(12)), 1+rng.IntN(28),
		rng.IntN(24), rng.IntN(60), rng.IntN(60), 0, loc)
	if rng.IntN(4) == 0 {
		start = start.Add(time.Duration(rng.IntN(1e9))) // not a whole millisecond
	}
	c := Calendar{Start: start}
	switch rng.IntN(5) {
	case 0: // default hours
	case 1:
		c.DayStart, c.DayEnd = 0, 24*Hour // catches every daylight saving change
	case 4: // a period that crosses midnight, such as a night shift
		a := Duration(rng.Int64N(int64(24*Hour)-1) + 1)
		c.DayStart = a
		c.DayEnd = 24*Hour + 1 + Duration(rng.Int64N(int64(a)))
		if rng.IntN(2) == 0 {
			c.DayStart, c.DayEnd = a/Hour*Hour, (c.DayEnd+Hour-1)/Hour*Hour
			if c.DayStart == 0 || c.DayEnd > c.DayStart+24*Hour {
				c.DayStart, c.DayEnd = 22*Hour, 30*Hour
			}
		}
	default:
		a := Duration(rng.Int64N(int64(24*Hour) + 1))
		b := Duration(rng.Int64N(int64(24*Hour) + 1))
		if rng.IntN(2) == 0 {
			a, b = a/Hour*Hour, b/(30*Minute)*(30*Minute)
		}
		if a > b {
			a, b = b, a
		}
		if a == b {
			a, b = 0, 24*Hour
		}
		c.DayStart, c.DayEnd = a, b
	}
	if rng.IntN(3) > 0 {
		for d := range c.Workdays {
			c.Workdays[d] = rng.IntN(2) == 0 // all false means Monday to Friday
		}
	}
	for range rng.IntN(40) {
		first := start.AddDate(0, 0, rng.IntN(800)-30)
		for i := range 1 + rng.IntN(3)*rng.IntN(10) {
			c.Holidays = append(c.Holidays, first.AddDate(0, 0, i).Format("2006-01-02"))
		}
	}
	return c
}

// TestCalendarMatchesReference compares every method with the day-by-day
// model on random calendars, instants and amounts of work, including three
// weeks of work and spans of years across daylight saving changes.
func TestCalendarMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(20260105, 1))
	cases := 3000
	if testing.Short() {
		cases = 300
	}
	for i := range cases {
		c := randomCalendar(t, rng)
		if i%2 == 0 {
			c = *mustValidate(t, c) // the other half runs unprepared
		}
		ref := newRefCalendar(&c)
		perWeek := 0
		for _, ok := range ref.days {
			if ok {
				perWeek++
			}
		}
		week := c.DayLength() * Duration(perWeek)

		start := Time(rng.Int64N(int64(2*365*24*Hour))) - Time(30*24*Hour)
		switch rng.IntN(3) {
		case 0:
			start = start / Time(Hour) * Time(Hour)
		case 1:
			start = ref.nextWorking(start)
		}
		var work Duration
		switch rng.IntN(5) {
		case 0:
			work = 3 * week
		case 1:
			work = Duration(rng.Int64N(int64(2 * c.DayLength())))
		case 2:
			work = Duration(rng.Int64N(int64(200 * week))) // years
		default:
			work = Duration(rng.Int64N(int64(5 * week)))
		}
		if rng.IntN(2) == 0 {
			work = work / (15 * Minute) * (15 * Minute)
		}

		name := fmt.Sprintf("case %d: %+v", i, c)
		got, want := c.AddWork(start, work), ref.addWork(start, work)
		if got != want {
			t.Fatalf("%s\nAddWork(%s, %v) = %s, want %s", name, show(&c, start), work, show(&c, got), show(&c, want))
		}
		if back := c.WorkBetween(start, got); back != work {
			t.Fatalf("%s\nWorkBetween(%s, %s) = %v, want %v", name, show(&c, start), show(&c, got), back, work)
		}
		if got, want := c.NextWorking(start), ref.nextWorking(start); got != want {
			t.Fatalf("%s\nNextWorking(%s) = %s, want %s", name, show(&c, start), show(&c, got), show(&c, want))
		}
		if got, want := c.IsWorking(start), ref.nextWorking(start) == start; got != want {
			t.Fatalf("%s\nIsWorking(%s) = %v, want %v", name, show(&c, start), got, want)
		}
		end := start + Time(rng.Int64N(int64(60*24*Hour))) - Time(24*Hour)
		if got, want := c.WorkBetween(start, end), ref.workBetween(start, end); got != want {
			t.Fatalf("%s\nWorkBetween(%s, %s) = %v, want %v", name, show(&c, start), show(&c, end), got, want)
		}
	}
}

// BenchmarkAddWork measures AddWork for short and long spans, against the
// day-by-day reference as a baseline.
func BenchmarkAddWork(b *testing.B) {
	holidays := []string{"2026-01-19", "2026-02-16", "2026-05-25", "2026-07-03", "2026-09-07", "2026-11-26", "2026-12-25"}
	for _, zone := range []string{"UTC", "America/New_York"} {
		c := mustValidate(b, Calendar{Start: time.Date(2026, time.January, 5, 0, 0, 0, 0, mustLocation(b, zone)), Holidays: holidays})
		ref := newRefCalendar(c)
		for _, span := range []struct {
			name string
			work Duration
		}{{"1h", Hour}, {"3w", 120 * Hour}, {"1y", 52 * 40 * Hour}, {"10y", 520 * 40 * Hour}} {
			starts := make([]Time, 1024)
			rng := rand.New(rand.NewPCG(3, 4))
			for i := range starts {
				starts[i] = Time(rng.Int64N(int64(365 * 24 * Hour)))
			}
			b.Run(fmt.Sprintf("%s/%s", zone, span.name), func(b *testing.B) {
				i := 0
				for b.Loop() {
					c.AddWork(starts[i%len(starts)], span.work)
					i++
				}
			})
			if span.work > 52*40*Hour {
				continue
			}
			b.Run(fmt.Sprintf("%s/%s/day-by-day", zone, span.name), func(b *testing.B) {
				i := 0
				for b.Loop() {
					ref.addWork(starts[i%len(starts)], span.work)
					i++
				}
			})
		}
	}
}
