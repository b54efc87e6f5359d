package clock

// Schedule is when someone works: a Calendar, or a Rota of several. The
// engine asks a member's schedule how long its work takes and when it is on
// duty. Implementations are read-only after they are built and safe for
// concurrent use.
type Schedule interface {
	// IsWorking reports whether t is a working instant.
	IsWorking(t Time) bool
	// NextWorking returns t if it is a working instant, else the start of
	// the next working period.
	NextWorking(t Time) Time
	// AddWork returns the instant work of working time has elapsed from t.
	AddWork(t Time, work Duration) Time
	// WorkBetween returns the working time in [a, b).
	WorkBetween(a, b Time) Duration
	// PeriodEnd returns the end of the working period holding t, or of the
	// next one when t is not working.
	PeriodEnd(t Time) Time
}

var (
	_ Schedule = (*Calendar)(nil)
	_ Schedule = Rota(nil)
)

// Rota is the union of several calendars: someone on more than one shift
// (a weekday day shift and a weekend night shift), or the hours a team is
// staffed by all of its shifts. An instant is working when any calendar
// says so; periods that overlap or touch count once. Each calendar must
// have been validated. A Rota of one calendar answers as that calendar.
//
// Its methods walk from one working period to the next, so their cost
// grows with the number of shifts crossed (AddWork of a day of work on
// 8-hour shifts crosses three), not arithmetically as a Calendar's does.
type Rota []*Calendar

// rotaSpan bounds the length of one contiguous working span a Rota
// reports: a rota covering every hour has no end, so PeriodEnd says it
// ends this long after it was asked.
const rotaSpan = 28 * fullDay

// IsWorking implements Schedule.
func (r Rota) IsWorking(t Time) bool {
	for _, c := range r {
		if c.IsWorking(t) {
			return true
		}
	}
	return false
}

// NextWorking implements Schedule.
func (r Rota) NextWorking(t Time) Time {
	next := maxTime
	for _, c := range r {
		if n := c.NextWorking(t); n < next {
			next = n
			if n == t {
				break
			}
		}
	}
	return next
}

// spanEnd returns the end of the contiguous working span that holds the
// working instant t, or limit if it reaches that far.
func (r Rota) spanEnd(t, limit Time) Time {
	e := t
	for e < limit {
		ext := e
		for _, c := range r {
			if c.IsWorking(e) {
				ext = max(ext, c.PeriodEnd(e))
			}
		}
		if ext == e {
			return e
		}
		e = ext
	}
	return limit
}

// PeriodEnd implements Schedule.
func (r Rota) PeriodEnd(t Time) Time {
	s := r.NextWorking(t)
	if s == maxTime {
		return maxTime
	}
	return r.spanEnd(s, s.Add(rotaSpan))
}

// AddWork implements Schedule.
func (r Rota) AddWork(t Time, work Duration) Time {
	if work <= 0 {
		return t
	}
	for {
		s := r.NextWorking(t)
		if s == maxTime {
			return maxTime
		}
		limit := maxTime
		if Time(maxTime)-s > Time(work) {
			limit = s.Add(work)
		}
		e := r.spanEnd(s, limit)
		if e == limit {
			return e
		}
		work -= e.Sub(s)
		t = e
	}
}

// WorkBetween implements Schedule.
func (r Rota) WorkBetween(a, b Time) Duration {
	var total Duration
	for a < b {
		s := r.NextWorking(a)
		if s >= b {
			break
		}
		e := r.spanEnd(s, b)
		total += e.Sub(s)
		a = e
	}
	return total
}
