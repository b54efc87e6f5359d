package worlds

import (
	"fmt"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // the zone database is part of the binary: a zone's hours do not depend on the machine

	"github.com/corpsim/corpsim/clock"
)

// This file reads the version 2 calendar constructs: the company
// calendar's time zone, a team's own calendar, its shift rota, the 24/7
// coverage a rota must give and the handover rule at the end of a shift.

type fileShift struct {
	ID      string   `yaml:"id"`
	Hours   string   `yaml:"hours"`   // "22:00-06:00": may cross midnight
	Days    []string `yaml:"days"`    // the weekdays it starts on; omitted: every day
	Members []string `yaml:"members"` // members of the team who work it
}

// Shift is one shift of a team's rota: its hours on its days, in the
// team's time zone. A member on it works only then; it has no holidays.
type Shift struct {
	ID       string
	Calendar clock.Calendar // validated
	Members  []string
}

// Team coverage and handover rules (Team.Coverage, Team.Handover).
const (
	// Coverage247 asserts that the team's rota serves each of its queues
	// at every hour of the week; the loader refuses a rota with a gap.
	Coverage247 = "24/7"
	// HandoverRequired makes holding a claimed or in-progress item past
	// the end of one's working period (a shift, or the team's working day)
	// a policy violation, rule RuleHandover: hand it over first.
	HandoverRequired = "required"
	// HandoverOptional is the default: held work waits for its holder.
	HandoverOptional = "optional"
)

// RotateWeekly makes a team's shift member lists take turns weekly.
const RotateWeekly = "weekly"

// rotationMargin is how many weeks past the horizon a rotation is laid
// out; after that, its members would work every shift.
const rotationMargin = 8

// maxShifts bounds a team's shifts: a rota is checked pair by pair.
const maxShifts = 100

// RuleHandover names the violation of holding work past one's shift end
// in a team whose handover is required.
const RuleHandover = "handover"

// MemberSchedule returns the schedule member id works by: its shift, its
// team's calendar, or the company's.
func (w *World) MemberSchedule(id string) clock.Schedule {
	if m, ok := w.Member(id); ok && m.Schedule != nil {
		return m.Schedule
	}
	return &w.Calendar
}

// TeamSchedule returns the hours team is staffed, which the deadlines of
// its queues' tickets follow: its rota, its calendar, or the company's.
func (w *World) TeamSchedule(team string) clock.Schedule {
	if t := w.Team(team); t != nil && t.Schedule != nil {
		return t.Schedule
	}
	return &w.Calendar
}

// Team returns the team with the given ID, or nil.
func (w *World) Team(id string) *Team {
	for i := range w.Teams {
		if w.Teams[i].ID == id {
			return &w.Teams[i]
		}
	}
	return nil
}

// zone reads a time zone name at path; nil when there is none or it is wrong.
func (v *validator) zone(path, name string) *time.Location {
	if name == "" || !v.needs(2, path, "a time zone") {
		return nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil || name == "Local" {
		v.errf(path, "unknown time zone %q (expected an IANA name such as Europe/Warsaw or UTC)", name)
		return nil
	}
	return loc
}

// hours reads working hours "HH:MM-HH:MM" that may cross midnight
// ("22:00-06:00" ends the next day).
func (v *validator) hours(path, s string) (ds, de clock.Duration, ok bool) {
	a, b, cut := strings.Cut(s, "-")
	ds, err1 := timeOfDay(a)
	de, err2 := timeOfDay(b)
	switch {
	case !cut || err1 != nil || err2 != nil || ds >= 24*clock.Hour:
		v.errf(path, "expected hours like \"09:00-17:00\" or \"22:00-06:00\", got %q", s)
		return 0, 0, false
	case ds == de:
		v.errf(path, "the hours are empty, got %q (\"00:00-24:00\" is the whole day)", s)
		return 0, 0, false
	case de < ds:
		de += 24 * clock.Hour // ends the next day
	}
	return ds, de, true
}

// emptyWorkdays is the mistake of a calendar whose workdays are [], which
// read as the default days, the opposite of what it says.
const emptyWorkdays = "an empty list: name the days worked (leave workdays out for the default)"

// days reads weekdays at path into a calendar's Workdays.
func (v *validator) days(path string, names []string) (out [7]bool) {
	for i, d := range names {
		wd, ok := weekdays[strings.ToLower(d)]
		if !ok {
			v.errf(fmt.Sprintf("%s[%d]", path, i), "unknown weekday %q (expected mon, tue, wed, thu, fri, sat or sun)", d)
			continue
		}
		out[wd] = true
	}
	return out
}

// teamCalendar reads a team's calendar: the company's, with the fields
// the team gives replaced.
func (v *validator) teamCalendar(path string, fc *fileCalendar, company *clock.Calendar) *clock.Calendar {
	c := clock.Calendar{Start: company.Start, DayStart: company.DayStart, DayEnd: company.DayEnd,
		Workdays: company.Workdays, Holidays: company.Holidays}
	if loc := v.zone(path+".timezone", fc.Timezone); loc != nil {
		c.Start = company.Start.In(loc)
	}
	if fc.Hours != "" {
		if ds, de, ok := v.hours(path+".hours", fc.Hours); ok {
			c.DayStart, c.DayEnd = ds, de
		}
	}
	if len(fc.Workdays) > 0 {
		c.Workdays = v.days(path+".workdays", fc.Workdays)
	} else if fc.Workdays != nil && !v.lim.Recorded {
		v.errf(path+".workdays", emptyWorkdays) // [] read as the company's days
	}
	if len(fc.Holidays) > 0 {
		c.Holidays = nil
		for i, h := range fc.Holidays {
			if _, err := time.Parse("2006-01-02", h); err != nil {
				v.errf(fmt.Sprintf("%s.holidays[%d]", path, i), "expected a date like 2026-01-19, got %q", h)
				continue
			}
			c.Holidays = append(c.Holidays, h)
		}
	}
	if err := c.Validate(); err != nil {
		v.errf(path, "%s", strings.TrimPrefix(err.Error(), "clock: "))
	}
	return &c
}

// span is a half-open stretch of the week, in milliseconds from Monday 00:00.
type span struct{ from, to clock.Duration }

const week = 7 * 24 * clock.Hour

// weekSpans returns the stretches of the week a calendar's periods cover,
// on the wall clock (a period crossing Sunday midnight wraps to Monday).
func weekSpans(c *clock.Calendar) []span {
	var out []span
	for wd, on := range c.Workdays {
		if !on {
			continue
		}
		day := clock.Duration((wd+6)%7) * 24 * clock.Hour // Monday is 0
		s, e := day+c.DayStart, day+c.DayEnd
		if e > week {
			out = append(out, span{s, week}, span{0, e - week})
		} else {
			out = append(out, span{s, e})
		}
	}
	return out
}

// weekTime formats an offset into the week as "mon 22:00".
func weekTime(d clock.Duration) string {
	days := []string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}
	day := d / (24 * clock.Hour)
	d -= day * 24 * clock.Hour
	return fmt.Sprintf("%s %02d:%02d", days[day], d/clock.Hour, d%clock.Hour/clock.Minute)
}

// firstOverlap returns the first instant of the week both a and b cover.
func firstOverlap(a, b []span) (clock.Duration, bool) {
	first, found := week, false
	for _, x := range a {
		for _, y := range b {
			if lo, hi := max(x.from, y.from), min(x.to, y.to); lo < hi && lo < first {
				first, found = lo, true
			}
		}
	}
	return first, found
}

// firstGap returns where the first gap in the spans' cover of the week
// begins, counting from Monday 00:00; a gap across Sunday midnight begins
// on Sunday.
func firstGap(spans []span) (clock.Duration, bool) {
	spans = slices.Clone(spans)
	slices.SortFunc(spans, func(a, b span) int { return int(a.from - b.from) })
	var last clock.Duration // where the week's cover ends
	for _, s := range spans {
		last = max(last, s.to)
	}
	at := clock.Duration(0)
	for _, s := range spans {
		if s.from > at {
			if at == 0 && last < week {
				return last, true // the gap began before midnight
			}
			return at, true
		}
		at = max(at, s.to)
	}
	if at == 0 {
		return 0, true // no span at all
	}
	return at, at < week
}

// calendars reads every team's calendar, rota, coverage and handover rule,
// and gives each member and team the schedule it works by.
func (v *validator) calendars(f *file, w *World) {
	teamOf := map[string]string{} // member -> team
	roleOf := map[string]string{}
	for _, m := range f.Members {
		teamOf[m.ID], roleOf[m.ID] = m.Team, m.Role
	}
	onShifts := map[string][]*Shift{} // member -> its shifts
	rotated := map[string]clock.Schedule{}
	if !v.rotationsFit(f, w) {
		return
	}
	for i, ft := range f.Teams {
		if i >= len(w.Teams) {
			break
		}
		p := fmt.Sprintf("teams[%d]", i)
		t := &w.Teams[i]
		if ft.Calendar != nil && v.needs(2, p+".calendar", "a team calendar") {
			t.Calendar = v.teamCalendar(p+".calendar", ft.Calendar, &w.Calendar)
			t.Schedule = t.Calendar
		}
		switch ft.Handover {
		case "", HandoverOptional:
		case HandoverRequired:
			if v.needs(2, p+".handover", "handover") {
				t.Handover = HandoverRequired
			}
		default:
			v.errf(p+".handover", "unknown handover %q (expected %s or %s)", ft.Handover, HandoverRequired, HandoverOptional)
		}
		rotaErrs := len(v.errs)
		switch {
		case len(ft.Shifts) > maxShifts:
			v.errf(p+".shifts", "%d shifts: a team has at most %d", len(ft.Shifts), maxShifts)
		case len(ft.Shifts) > 0 && v.needs(2, p+".shifts", "shifts"):
			v.shifts(p, ft, t, w, teamOf, onShifts)
		}
		switch ft.Rotate {
		case "":
		case RotateWeekly:
			if !v.needs(2, p+".rotate", "rotate") {
				break
			}
			if len(t.Shifts) < 2 {
				v.errf(p+".rotate", "rotating weekly needs at least two shifts")
				break
			}
			t.Rotate = RotateWeekly
			if len(v.errs) == rotaErrs {
				v.rotate(p, t, w, rotated)
			}
		default:
			v.errf(p+".rotate", "unknown rotate %q (expected %s)", ft.Rotate, RotateWeekly)
		}
		rotaErrs = len(v.errs) - rotaErrs
		switch ft.Coverage {
		case "":
		case Coverage247:
			if !v.needs(2, p+".coverage", "coverage") {
				break
			}
			t.Coverage = Coverage247
			if len(t.Shifts) == 0 {
				if rotaErrs == 0 {
					v.errf(p+".coverage", "24/7 coverage needs shifts: the team has none")
				}
				break
			}
			if rotaErrs == 0 { // a broken shift has no hours to cover with
				v.coverage(p+".coverage", t, w, roleOf)
			}
		default:
			v.errf(p+".coverage", "unknown coverage %q (expected %s)", ft.Coverage, Coverage247)
		}
	}
	for k := range w.Members {
		m := &w.Members[k]
		switch sh := onShifts[m.ID]; {
		case rotated[m.ID] != nil:
			m.Schedule, m.OnShift = rotated[m.ID], true
		case len(sh) == 1:
			m.Schedule, m.OnShift = &sh[0].Calendar, true
		case len(sh) > 1:
			r := make(clock.Rota, len(sh))
			for j, s := range sh {
				r[j] = &s.Calendar
			}
			m.Schedule, m.OnShift = r, true
		default:
			if t := w.Team(m.Team); t != nil && t.Calendar != nil {
				m.Schedule = t.Calendar
			}
		}
	}
}

// shifts reads team t's rota.
func (v *validator) shifts(p string, ft fileTeam, t *Team, w *World, teamOf map[string]string, onShifts map[string][]*Shift) {
	start := w.Calendar.Start
	if t.Calendar != nil {
		start = t.Calendar.Start // the team's time zone
	}
	ids := map[string]string{}
	for j, fs := range ft.Shifts {
		sp := fmt.Sprintf("%s.shifts[%d]", p, j)
		v.checkID(sp+".id", "shift", fs.ID, ids)
		sh := Shift{ID: fs.ID, Calendar: clock.Calendar{Start: start}}
		if fs.Hours == "" {
			v.errf(sp+".hours", "missing shift hours, such as \"22:00-06:00\"")
		} else if ds, de, ok := v.hours(sp+".hours", fs.Hours); ok {
			sh.Calendar.DayStart, sh.Calendar.DayEnd = ds, de
		}
		if len(fs.Days) == 0 {
			sh.Calendar.Workdays = [7]bool{true, true, true, true, true, true, true}
		} else {
			sh.Calendar.Workdays = v.days(sp+".days", fs.Days)
		}
		if err := sh.Calendar.Validate(); err != nil {
			v.errf(sp, "%s", strings.TrimPrefix(err.Error(), "clock: "))
		}
		if len(fs.Members) == 0 {
			v.errf(sp+".members", "shift %q has no members", fs.ID)
		}
		for k, id := range fs.Members {
			mp := fmt.Sprintf("%s.members[%d]", sp, k)
			team, known := teamOf[id]
			switch {
			case !known:
				v.errf(mp, "unknown member %q", id)
				continue
			case team != t.ID:
				v.errf(mp, "%s is in team %s, not %s: only a team's members work its shifts", id, team, t.ID)
				continue
			case slices.Contains(sh.Members, id):
				v.errf(mp, "%s is on shift %q twice", id, fs.ID)
				continue
			}
			sh.Members = append(sh.Members, id)
		}
		t.Shifts = append(t.Shifts, sh)
	}
	// Overlaps are checked once every shift is read, and reported at the
	// later shift's entry for the member.
	seen := map[string][]int{} // member -> indexes of its shifts so far
	for j := range t.Shifts {
		sh := &t.Shifts[j]
		for k, id := range sh.Members {
			for _, i := range seen[id] {
				if at, ok := firstOverlap(weekSpans(&t.Shifts[i].Calendar), weekSpans(&sh.Calendar)); ok {
					v.errf(fmt.Sprintf("%s.shifts[%d].members[%d]", p, j, k),
						"%s is on shifts %q and %q, which overlap at %s", id, t.Shifts[i].ID, sh.ID, weekTime(at))
				}
			}
			seen[id] = append(seen[id], j)
		}
	}
	r := make(clock.Rota, len(t.Shifts))
	for j := range t.Shifts {
		r[j] = &t.Shifts[j].Calendar
		for _, id := range t.Shifts[j].Members {
			onShifts[id] = append(onShifts[id], &t.Shifts[j])
		}
	}
	t.Schedule = r
}

// coverage checks that t's rota serves each queue its members serve at
// every hour of the week, on the team's wall clock (in every week of its
// rotation).
func (v *validator) coverage(path string, t *Team, w *World, roleOf map[string]string) {
	phases := 1
	if t.Rotate == RotateWeekly {
		phases = len(t.Shifts)
	}
	for k := range phases {
		if !v.coverPhase(path, t, w, roleOf, k) {
			return
		}
	}
}

// coverPhase checks coverage in week k of a rotation (the shifts worked by
// their own lists when k is 0), and reports whether it holds.
func (v *validator) coverPhase(path string, t *Team, w *World, roleOf map[string]string, k int) bool {
	n := len(t.Shifts)
	for _, q := range w.Queues {
		var spans []span
		served := false
		for _, m := range w.Members {
			if m.Team == t.ID && slices.Contains(q.ServedBy, m.Role) {
				served = true
			}
		}
		if !served {
			continue // not one of the team's queues
		}
		for j := range t.Shifts {
			group := t.Shifts[((j-k)%n+n)%n].Members // who works shift j in week k
			if slices.ContainsFunc(group, func(id string) bool { return slices.Contains(q.ServedBy, roleOf[id]) }) {
				spans = append(spans, weekSpans(&t.Shifts[j].Calendar)...)
			}
		}
		if at, gap := firstGap(spans); gap {
			week := ""
			if t.Rotate == RotateWeekly {
				week = fmt.Sprintf(" in week %d of the rotation", k+1)
			}
			v.errf(path, "24/7 coverage leaves queue %q unserved at %s%s: no shift has a member serving it then", q.ID, weekTime(at), week)
			return false
		}
	}
	return true
}

// maxRotationDays bounds the days off the weekly rotations of a world lay
// out, about 48 bytes each once loaded: 4,000,000 is about 200 MB, as much
// as the largest worlds the other limits admit. Without it a file of a
// few megabytes, thousands of rotating teams on a century's horizon,
// would take tens of gigabytes to load.
const maxRotationDays = 4_000_000

// rotationsFit counts the days off the weekly rotations of f would lay
// out before any is (a long horizon multiplies them apart from the file's
// size), and refuses the world for a limit at the rotate field of the team
// that takes them past maxRotationDays.
func (v *validator) rotationsFit(f *file, w *World) bool {
	weeks := int(w.Horizon/clock.Time(7*24*clock.Hour)) + 2 + rotationMargin
	days := 0
	for i, ft := range f.Teams {
		if ft.Rotate != RotateWeekly || len(ft.Shifts) < 2 || len(ft.Shifts) > maxShifts {
			continue
		}
		lists := 0
		for _, s := range ft.Shifts {
			if len(s.Members) > 0 {
				lists++
			}
		}
		if days += lists * (len(ft.Shifts) - 1) * 7 * weeks; days > maxRotationDays {
			v.errf(fmt.Sprintf("teams[%d].rotate", i), "%v: the weekly rotations lay out about %d days off over the horizon, above the limit of %d (a shorter horizon, fewer shifts or fewer teams rotating)",
				ErrLimit, days, maxRotationDays)
			v.overLimit++
			return false
		}
	}
	return true
}

// rotate lays out the weekly rotation of t's shift lists for each member:
// a Rota of every shift, each with the weeks the member does not work it
// as holidays, from the week of the start to rotationMargin weeks past the
// horizon. Weeks run Monday to Sunday on the team's clock.
func (v *validator) rotate(p string, t *Team, w *World, rotated map[string]clock.Schedule) {
	n := len(t.Shifts)
	list := map[string]int{} // member -> the shift it is listed on
	for i := range t.Shifts {
		for k, id := range t.Shifts[i].Members {
			if j, ok := list[id]; ok {
				v.errf(fmt.Sprintf("%s.shifts[%d].members[%d]", p, i, k), "%s is also listed on shift %q: with rotate: weekly a member is on one list", id, t.Shifts[j].ID)
				continue
			}
			list[id] = i
		}
	}
	start := t.Shifts[0].Calendar.Start
	y, m, d := start.Date()
	monday := time.Date(y, m, d, 12, 0, 0, 0, time.UTC).AddDate(0, 0, -(int(start.Weekday())+6)%7)
	weeks := int(w.Horizon/clock.Time(7*24*clock.Hour)) + 2 + rotationMargin
	// The members of one list share its rota (a Schedule is read-only):
	// one per member took 293 MB for a 73 KB file of 1,000 members on a
	// ten-year horizon.
	byList := make([]clock.Rota, n)
	for j := range t.Shifts {
		for _, id := range t.Shifts[j].Members {
			if list[id] != j || rotated[id] != nil {
				continue
			}
			if byList[j] != nil {
				rotated[id] = byList[j]
				continue
			}
			r := make(clock.Rota, n)
			for s := range t.Shifts {
				c := t.Shifts[s].Calendar
				c.Holidays = nil
				for wk := range weeks {
					if (j+wk)%n == s {
						continue // the member works shift s in week wk
					}
					for day := range 7 {
						c.Holidays = append(c.Holidays, monday.AddDate(0, 0, 7*wk+day).Format("2006-01-02"))
					}
				}
				if err := c.Validate(); err != nil {
					v.errf(p+".rotate", "%s", strings.TrimPrefix(err.Error(), "clock: "))
					return
				}
				r[s] = &c
			}
			rotated[id], byList[j] = r, r
		}
	}
}
