// Package clock is the simulated time of corpsim: instants, durations, the
// business calendar that turns effort into finishing times, and the event
// queue that orders what happens next.
//
// # Simulated time
//
// A [Time] is an integer number of milliseconds since the world's start
// instant, and a [Duration] is a span of milliseconds. Nothing in this package
// reads the wall clock, sleeps, or draws random numbers: every result depends
// only on the arguments, so a run replays exactly.
//
// [ParseDuration] reads the durations written in world files ("90m", "2h30m",
// "1.5d", "2w"). A day ("d") is one working day of the calendar and a week ("w")
// is five working days, so the caller passes the day length.
//
// # The calendar
//
// A [Calendar] knows working hours, working days and holidays, anchored at the
// world's start instant, whose location gives the wall clock (use UTC or a
// fixed zone for results that do not depend on the machine's time zone
// database). Effort is working time: [Calendar.AddWork] answers "if this 3h
// task starts now, when is it done?", skipping nights, weekends and holidays,
// and [Calendar.WorkBetween] measures the working time between two instants.
// The zero Calendar (apart from Start) works 09:00-17:00, Monday to Friday.
// Call [Calendar.Validate] once after filling the fields; after it returns,
// the methods may be called from several goroutines at once.
//
// A calendar's working period may cross midnight (DayEnd past 24h: a night
// shift 22:00-06:00), and a [Rota] is the union of several calendars (a
// member on more than one shift, a team staffed by its shifts). Both are a
// [Schedule], the interface the engine asks about a member's hours.
//
// # The queue
//
// A [Queue] holds pending items ordered by (time, seq): items due at the same
// instant come out in the order they were pushed, never in an order that
// depends on goroutine timing or map iteration.
//
// # Example
//
//	start := time.Date(2026, time.January, 2, 16, 0, 0, 0, time.UTC) // a Friday
//	cal := clock.Calendar{Start: start}
//	if err := cal.Validate(); err != nil {
//		return err
//	}
//	effort, err := clock.ParseDuration("2h", cal.DayLength())
//	if err != nil {
//		return err
//	}
//	done := cal.AddWork(0, effort) // Monday 10:00
//
//	var q clock.Queue[string]
//	q.Push(done, "task finished")
//	q.Push(done, "report due") // same instant: pops after "task finished"
//	for q.Len() > 0 {
//		at, what, _ := q.Pop()
//		fmt.Println(cal.Wall(at).Format(time.Kitchen), what)
//	}
package clock
