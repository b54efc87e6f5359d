package clock_test

import (
	"fmt"
	"time"

	"github.com/corpsim/corpsim/clock"
)

func ExampleCalendar_AddWork() {
	cal := clock.Calendar{
		Start:    time.Date(2026, time.January, 16, 16, 0, 0, 0, time.UTC), // a Friday
		Holidays: []string{"2026-01-19"},                                   // the Monday after
	}
	if err := cal.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	effort, err := clock.ParseDuration("2h", cal.DayLength())
	if err != nil {
		fmt.Println(err)
		return
	}
	done := cal.AddWork(0, effort)
	fmt.Println(cal.Wall(done).Format("Mon 2006-01-02 15:04"))
	fmt.Println(cal.WorkBetween(0, done))
	// Output:
	// Tue 2026-01-20 10:00
	// 2h
}

func ExampleParseDuration() {
	for _, s := range []string{"1h30m", "1.5d", "1w", "15"} {
		d, err := clock.ParseDuration(s, 8*clock.Hour)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(s, "=", d)
	}
	// Output:
	// 1h30m = 1h30m
	// 1.5d = 12h
	// 1w = 40h
	// clock: invalid duration "15": missing unit after "15" (expected w, d, h, m, s or ms)
}

func ExampleQueue() {
	var q clock.Queue[string]
	q.Push(20, "second")
	q.Push(10, "first")
	q.Push(20, "third") // same time as "second", pushed later
	for q.Len() > 0 {
		at, v, _ := q.Pop()
		fmt.Println(at, v)
	}
	// Output:
	// 10 first
	// 20 second
	// 20 third
}
