package clock

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestRotaOfOneIsTheCalendar checks that a Rota of one calendar answers
// every question as the calendar does, on random calendars.
func TestRotaOfOneIsTheCalendar(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 7))
	for i := range 300 {
		c := mustValidate(t, randomCalendar(t, rng))
		r := Rota{c}
		at := Time(rng.Int64N(int64(400 * 24 * Hour)))
		work := Duration(rng.Int64N(int64(20 * 24 * Hour)))
		if got, want := r.AddWork(at, work), c.AddWork(at, work); got != want {
			t.Fatalf("case %d: AddWork(%s, %s) = %s, want %s", i, show(c, at), work, show(c, got), show(c, want))
		}
		b := at.Add(work)
		if got, want := r.WorkBetween(at, b), c.WorkBetween(at, b); got != want {
			t.Fatalf("case %d: WorkBetween = %s, want %s", i, got, want)
		}
		if got, want := r.NextWorking(at), c.NextWorking(at); got != want {
			t.Fatalf("case %d: NextWorking = %s, want %s", i, show(c, got), show(c, want))
		}
		if got, want := r.PeriodEnd(at), c.PeriodEnd(at); got != want {
			t.Fatalf("case %d: PeriodEnd = %s, want %s", i, show(c, got), show(c, want))
		}
	}
}

// TestRotaUnion checks a union of shifts that touch and overlap against
// times read off a week of them.
func TestRotaUnion(t *testing.T) {
	monday := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	weekdays := [7]bool{time.Monday: true, time.Tuesday: true, time.Wednesday: true, time.Thursday: true, time.Friday: true}
	early := mustValidate(t, Calendar{Start: monday, DayStart: 6 * Hour, DayEnd: 14 * Hour, Workdays: weekdays})
	late := mustValidate(t, Calendar{Start: monday, DayStart: 14 * Hour, DayEnd: 22 * Hour, Workdays: weekdays})
	night := mustValidate(t, Calendar{Start: monday, DayStart: 20 * Hour, DayEnd: 30 * Hour, Workdays: weekdays}) // overlaps late
	r := Rota{early, late, night}
	h := func(d, hh int) Time { return Time(d)*Time(24*Hour) + Time(hh)*Time(Hour) }
	tests := []struct {
		name string
		got  Time
		want Time
	}{
		{"the shifts touch: monday's span runs to saturday 06:00", r.PeriodEnd(h(0, 7)), h(5, 6)},
		{"friday's night ends saturday 06:00", r.PeriodEnd(h(4, 12)), h(5, 6)},
		{"saturday morning waits for monday", r.NextWorking(h(5, 7)), h(7, 6)},
		{"a day of work from monday 06:00", r.AddWork(h(0, 6), 24*Hour), h(1, 6)},
		{"thirty hours from friday 06:00 cross the weekend", r.AddWork(h(4, 6), 30*Hour), h(7, 12)},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, show(early, tt.got), show(early, tt.want))
		}
	}
	if got, want := r.WorkBetween(h(0, 0), h(7, 0)), 5*24*Hour; got != want {
		t.Errorf("a week's work = %s, want %s", got, want)
	}
	if !r.IsWorking(h(2, 3)) || r.IsWorking(h(5, 7)) {
		t.Errorf("IsWorking wrong at wednesday 03:00 or saturday 07:00")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		at := Time(rng.Int64N(int64(60 * 24 * Hour)))
		d := Duration(rng.Int64N(int64(9 * 24 * Hour)))
		if got := r.WorkBetween(at, r.AddWork(at, d)); got != d {
			t.Fatalf("WorkBetween(t, AddWork(t, %s)) = %s", d, got)
		}
	}
}
