package clock

import (
	"math/rand/v2"
	"testing"
	"time"
)

// byDays returns a copy of c whose rules are not continuous: its methods
// answer by walking the days, as for any other calendar.
func byDays(c *Calendar) *Calendar {
	d := *c
	d.rules = c.build()
	d.rules.continuous = false
	return &d
}

// TestContinuousCalendarIsPlainTime holds the continuous fast paths to the
// walk over the days they skip: for a calendar that works every instant,
// AddWork, WorkBetween, NextWorking and IsWorking answer the same as the
// days do, at random instants and spans from Start on and across 2038,
// where the zone database's explicit transitions end, for a Start with
// milliseconds, a fixed zone and zones that gave up summer time (one whose
// listed zone ends in 2038 with the same offset). Calendars with a gap, a
// holiday or a zone whose offset changes are not continuous.
func TestContinuousCalendarIsPlainTime(t *testing.T) {
	all := [7]bool{true, true, true, true, true, true, true}
	start := time.Date(2026, 3, 2, 9, 30, 0, 123_456_789, time.UTC)
	continuous := []Calendar{
		{Start: start, DayStart: 0, DayEnd: fullDay, Workdays: all},
		{Start: start.In(time.FixedZone("IST", 5*3600+1800)), DayEnd: fullDay, Workdays: all},
		{Start: time.Time{}, DayEnd: fullDay, Workdays: all},
		{Start: start.In(mustLocation(t, "America/Sao_Paulo")), DayEnd: fullDay, Workdays: all},
		{Start: start.In(mustLocation(t, "America/Phoenix")), DayEnd: fullDay, Workdays: all},
	}
	berlin := mustLocation(t, "Europe/Berlin")
	notContinuous := map[string]Calendar{
		"a zone with summer time":                 {Start: start.In(berlin), DayEnd: fullDay, Workdays: all},
		"summer time ending for good after Start": {Start: time.Date(2018, 12, 1, 0, 0, 0, 0, mustLocation(t, "America/Sao_Paulo")), DayEnd: fullDay, Workdays: all},
		"a holiday":                 {Start: start, DayEnd: fullDay, Workdays: all, Holidays: []string{"2026-12-25"}},
		"weekdays only":             {Start: start, DayEnd: fullDay},
		"a night off":               {Start: start, DayStart: 0, DayEnd: 23 * Hour, Workdays: all},
		"the first hour off":        {Start: start, DayStart: Hour, DayEnd: fullDay, Workdays: all},
		"09:00-17:00 (the default)": {Start: start, Workdays: all},
	}
	for name, c := range notContinuous {
		if mustValidate(t, c).resolved().continuous {
			t.Errorf("%s: continuous, want not", name)
		}
	}
	rng := rand.New(rand.NewPCG(21, 4))
	for i, c := range continuous {
		fast := mustValidate(t, c)
		if !fast.resolved().continuous {
			t.Fatalf("calendar %d: not continuous", i)
		}
		slow := byDays(fast)
		for range 3000 {
			a := Time(rng.Int64N(int64(3 * 365 * fullDay)))
			if rng.IntN(4) == 0 {
				a = Time(rng.Int64N(3 * int64(Second))) // about Start
			}
			w := Duration(rng.Int64N(int64(2 * 365 * fullDay)))
			if rng.IntN(3) == 0 {
				w = Duration(rng.Int64N(int64(10 * Minute)))
			}
			if rng.IntN(8) == 0 { // about the end of 2038's listed transitions
				a = Time(time.Date(2038, 1, 1, 0, 0, 0, 0, time.UTC).Sub(fast.Start).Milliseconds()) + Time(rng.Int64N(int64(60*fullDay)))
			}
			b := a.Add(w)
			if got, want := fast.AddWork(a, w), slow.AddWork(a, w); got != want {
				t.Fatalf("calendar %d: AddWork(%s, %s) = %s, by the days %s", i, show(fast, a), w, show(fast, got), show(fast, want))
			}
			if got, want := fast.WorkBetween(a, b), slow.WorkBetween(a, b); got != want {
				t.Fatalf("calendar %d: WorkBetween(%s, %s) = %s, by the days %s", i, show(fast, a), show(fast, b), got, want)
			}
			if got, want := fast.NextWorking(a), slow.NextWorking(a); got != want {
				t.Fatalf("calendar %d: NextWorking(%s) = %s, by the days %s", i, show(fast, a), show(fast, got), show(fast, want))
			}
			if got, want := fast.IsWorking(a), slow.IsWorking(a); got != want {
				t.Fatalf("calendar %d: IsWorking(%s) = %v, by the days %v", i, show(fast, a), got, want)
			}
		}
		// Before Start and past the span the fast paths are not taken:
		// the days answer, as they do for the byDays copy.
		for _, a := range []Time{-1, -Time(fullDay), continuousSpan + 1} {
			if got, want := fast.AddWork(a, Hour), slow.AddWork(a, Hour); got != want {
				t.Errorf("calendar %d: AddWork(%d, 1h) = %d, by the days %d", i, a, got, want)
			}
		}
	}
}
