package worlds

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
)

// This file reads members' availability (format 2): busy blocks on their
// calendars, drawn per seed into the records of a record type the world
// declares (so get, search, role access, the state hash and replay cover
// them), and hidden constraints per member on meetings, one drawn per seed
// from the member's list and known only by asking the person. A case step
// may require a meeting (meeting:): its attendees, the window its start
// falls in after the case opens, and its length.

// fileAvailability is the availability section of a world file.
type fileAvailability struct {
	Record      string                      `yaml:"record"`  // the record type holding busy blocks
	Members     []string                    `yaml:"members"` // whose calendars are drawn; default every member
	PerDay      *fileCount                  `yaml:"per_day"` // busy blocks per working day
	Length      *fileSpan                   `yaml:"length"`  // each block's length, in half hours
	Days        int                         `yaml:"days"`    // working days drawn from the start; default the horizon's
	Constraints map[string][]fileConstraint `yaml:"constraints"`
}

type fileCount struct {
	Min int `yaml:"min"`
	Max int `yaml:"max"`
}

type fileSpan struct {
	Min string `yaml:"min"`
	Max string `yaml:"max"`
}

// fileConstraint is one hidden constraint a member may have.
type fileConstraint struct {
	Days     []string `yaml:"days"`
	Earliest string   `yaml:"earliest"`
	Latest   string   `yaml:"latest"`
	Max      string   `yaml:"max"`
	Says     string   `yaml:"says"` // how the member says it when asked
}

// fileMeeting is a meeting a case step requires.
type fileMeeting struct {
	Attendees []string           `yaml:"attendees"` // member ids, or attributes whose values are member ids
	Window    *fileMeetingWindow `yaml:"window"`
	Length    string             `yaml:"length"`
}

type fileMeetingWindow struct {
	From string `yaml:"from"` // working time after the case opens
	To   string `yaml:"to"`
}

// TopicAvailability is the topic a message asks a member's availability
// by: a message whose text mentions it (or "availability", "constraint")
// gets the member's hidden constraint in words.
const TopicAvailability = "availability"

// NoConstraint is what a member without a hidden constraint answers.
const NoConstraint = "My calendar is up to date: any free slot in it works for me."

// MaxMeeting bounds a meeting's length.
const MaxMeeting = 8 * clock.Hour

// Availability is where members' busy blocks are and their hidden
// constraints.
type Availability struct {
	Record      string // record type with fields member, start, end and meeting
	Members     []string
	PerMin      int
	PerMax      int
	LenMin      clock.Duration
	LenMax      clock.Duration
	Days        int
	Constraints map[string][]Constraint // member -> the constraints one of which is drawn per seed
}

// Constraint is a hidden constraint and how its member says it.
type Constraint struct {
	Rule payload.MeetingRule
	Says *Text // over name, days, earliest, latest, max
}

// Meeting is what a case step requires.
type Meeting struct {
	Attendees []string // member ids; an entry naming an attribute is Attrs'
	Attrs     []string // attributes whose values are member ids
	From, To  clock.Duration
	Length    clock.Duration
}

// Constraint returns member's hidden constraint drawn by d, or nil.
func (a *Availability) Constraint(d Draws, member string) *Constraint {
	if a == nil || len(a.Constraints[member]) == 0 {
		return nil
	}
	cs := a.Constraints[member]
	return &cs[int(d.Unit("availability/"+member)*float64(len(cs)))]
}

// Answer is what member says when asked about its availability.
func (a *Availability) Answer(d Draws, member, name string) string {
	c := a.Constraint(d, member)
	if c == nil {
		return NoConstraint
	}
	return c.Render(name)
}

// Render is the constraint as member name says it.
func (c *Constraint) Render(name string) string {
	max := ""
	if c.Rule.Max > 0 {
		max = c.Rule.Max.String()
	}
	return c.Says.Render(map[string]any{"name": name, "days": strings.Join(c.Rule.Days, ", "), "earliest": c.Rule.Earliest, "latest": c.Rule.Latest, "max": max})
}

// availability checks the availability section.
func (v *validator) availability(f *file, w *World, r *refs) {
	fa := f.Availability
	if fa == nil || !v.needs(2, "availability", "availability") {
		return
	}
	a := &Availability{Record: fa.Record, Days: fa.Days, Constraints: map[string][]Constraint{}}
	if t := r.types[fa.Record]; t == nil {
		v.errf("availability.record", "unknown record type %q: declare the busy blocks' record type in a system", fa.Record)
	} else {
		for _, need := range []struct{ name, typ string }{{"member", FieldText}, {"start", FieldDateTime}, {"end", FieldDateTime}} {
			if fd, ok := t.Field(need.name); !ok || fd.Type != need.typ {
				v.errf("availability.record", "record type %s needs a %s field %s", t.ID, need.typ, need.name)
			}
		}
		// A booked meeting's blocks name it in meeting: without the field
		// every meeting overlaps its own blocks and none is a double
		// booking. A recorded world reads as it did then.
		switch fd, ok := t.Field("meeting"); {
		case ok && fd.Type != FieldText:
			v.errf("availability.record", "record type %s's field meeting must be text", t.ID)
		case !ok && !v.lim.Recorded:
			v.errf("availability.record", "record type %s needs a %s field meeting (a booked meeting's id; empty for a drawn block)", t.ID, FieldText)
		}
	}
	for i, m := range fa.Members {
		if v.ref(fmt.Sprintf("availability.members[%d]", i), "member", m, r.members) {
			a.Members = append(a.Members, m)
		}
	}
	if len(fa.Members) == 0 {
		for _, m := range f.Members {
			a.Members = append(a.Members, m.ID)
		}
	}
	slices.Sort(a.Members)
	a.Members = slices.Compact(a.Members)
	day := w.Calendar.DayLength()
	if fa.PerDay != nil {
		a.PerMin, a.PerMax = fa.PerDay.Min, fa.PerDay.Max
		if a.PerMin < 0 || a.PerMax < a.PerMin || a.PerMax > 12 {
			v.errf("availability.per_day", "blocks per day from min to max, 0 <= min <= max <= 12, got %d to %d", a.PerMin, a.PerMax)
		}
	}
	a.LenMin, a.LenMax = 30*clock.Minute, clock.Hour
	if fa.Length != nil {
		lo, ok1 := v.duration("availability.length.min", fa.Length.Min, day, true)
		hi, ok2 := v.duration("availability.length.max", fa.Length.Max, day, true)
		if ok1 && ok2 {
			a.LenMin, a.LenMax = lo, hi
			switch {
			case hi < lo:
				v.errf("availability.length", "max %s is shorter than min %s", fa.Length.Max, fa.Length.Min)
			case lo%(30*clock.Minute) != 0 || hi%(30*clock.Minute) != 0:
				v.errf("availability.length", "busy blocks are whole half hours, got %s to %s", fa.Length.Min, fa.Length.Max)
			case hi > day:
				v.errf("availability.length.max", "a block of %s does not fit a working day of %s", fa.Length.Max, day.String())
			}
		}
	}
	if fa.Days < 0 || fa.Days > 60 {
		v.errf("availability.days", "draw 1 to 60 working days (0: the horizon's), got %d", fa.Days)
	}
	sayAttrs := []Attr{{Name: "name", Kind: AttrText}, {Name: "days", Kind: AttrText}, {Name: "earliest", Kind: AttrText}, {Name: "latest", Kind: AttrText}, {Name: "max", Kind: AttrText}}
	for _, m := range slices.Sorted(maps.Keys(fa.Constraints)) {
		mp := "availability.constraints." + m
		if !v.ref(mp, "member", m, r.members) {
			continue
		}
		if len(fa.Constraints[m]) == 0 {
			v.errf(mp, "list the constraints one of which is drawn per seed")
		}
		for i, fc := range fa.Constraints[m] {
			cp := fmt.Sprintf("%s[%d]", mp, i)
			c := Constraint{Rule: payload.MeetingRule{Member: m, Earliest: fc.Earliest, Latest: fc.Latest}}
			for j, d := range fc.Days {
				if _, ok := weekdays[d]; !ok {
					v.errf(fmt.Sprintf("%s.days[%d]", cp, j), "unknown day %q (expected mon, tue, wed, thu, fri, sat or sun)", d)
				}
				c.Rule.Days = append(c.Rule.Days, d)
			}
			for _, x := range []struct{ name, val string }{{"earliest", fc.Earliest}, {"latest", fc.Latest}} {
				if x.val != "" && !payload.ValidClock(x.val) {
					v.errf(cp+"."+x.name, "a time of day such as \"10:00\", got %q", x.val)
				}
			}
			if fc.Earliest != "" && fc.Latest != "" && fc.Earliest >= fc.Latest {
				v.errf(cp, "earliest %s is not before latest %s", fc.Earliest, fc.Latest)
			}
			if fc.Max != "" {
				c.Rule.Max, _ = v.duration(cp+".max", fc.Max, day, true)
			}
			if fc.Says == "" {
				v.errf(cp+".says", "say how %s puts the constraint when asked (a text template over {{.name}}, {{.days}}, {{.earliest}}, {{.latest}}, {{.max}})", m)
			} else {
				c.Says = v.compileText(cp+".says", fc.Says, sayAttrs)
			}
			a.Constraints[m] = append(a.Constraints[m], c)
		}
	}
	w.Availability = a
	v.avail = a
}

// meeting checks a case step's meeting.
func (v *validator) meeting(path string, fm *fileMeeting, c *CaseTemplate, r *refs, cal *clock.Calendar) *Meeting {
	if fm == nil {
		return nil
	}
	if v.avail == nil {
		v.errf(path, "a meeting needs the world's availability (the record type of busy blocks)")
		return nil
	}
	day := cal.DayLength()
	m := &Meeting{}
	if len(fm.Attendees) == 0 {
		v.errf(path+".attendees", "a meeting needs attendees: member ids or attributes whose values are member ids")
	}
	for i, x := range fm.Attendees {
		ap := fmt.Sprintf("%s.attendees[%d]", path, i)
		if a, ok := findAttr(c.Attrs, x); ok {
			if a.Kind != AttrChoice {
				v.errf(ap, "attribute %q is not a choice of member ids", x)
				continue
			}
			for _, ch := range a.Choices {
				if r.members[ch.Value] == "" {
					v.errf(ap, "attribute %q may be %q, which is not a member", x, ch.Value)
				}
			}
			m.Attrs = append(m.Attrs, x)
			continue
		}
		if v.ref(ap, "member or attribute", x, r.members) {
			m.Attendees = append(m.Attendees, x)
		}
	}
	if fm.Window == nil {
		v.errf(path+".window", "a meeting needs its window: {from: <working time after the case opens>, to: ...}")
	} else {
		from, to := clock.Duration(0), clock.Duration(0)
		if fm.Window.From != "" {
			from, _ = v.duration(path+".window.from", fm.Window.From, day, false)
		}
		to, ok := v.duration(path+".window.to", fm.Window.To, day, true)
		if ok && to <= from {
			v.errf(path+".window.to", "the window ends (%s) before it starts (%s)", fm.Window.To, fm.Window.From)
		}
		m.From, m.To = from, to
	}
	if l, ok := v.duration(path+".length", fm.Length, day, true); ok {
		m.Length = l
		switch {
		case l > MaxMeeting:
			v.errf(path+".length", "a meeting lasts at most %s, got %s", MaxMeeting.String(), fm.Length)
		case fm.Window != nil && m.To > m.From && l > m.To-m.From:
			v.errf(path+".length", "a meeting of %s does not fit its window", fm.Length)
		}
	}
	return m
}

// Expect resolves a step's meeting for a case opened at opened with vars
// (its attributes): the attendees and the window's instants on the
// company calendar, and each attendee's constraint drawn by d.
func (w *World) Expect(m *Meeting, step string, opened clock.Time, vars map[string]any, d Draws) payload.ExpectedMeeting {
	x := payload.ExpectedMeeting{Step: step, Length: m.Length}
	seen := map[string]bool{}
	add := func(id string) {
		if id != "" && !seen[id] {
			seen[id] = true
			x.Attendees = append(x.Attendees, id)
		}
	}
	for _, id := range m.Attendees {
		add(id)
	}
	for _, a := range m.Attrs {
		s, _ := vars[a].(string)
		add(s)
	}
	x.From = w.Calendar.AddWork(opened, m.From)
	if m.From == 0 {
		x.From = w.Calendar.NextWorking(opened)
	}
	x.To = w.Calendar.AddWork(opened, m.To)
	for _, id := range x.Attendees {
		if c := w.Availability.Constraint(d, id); c != nil {
			x.Rules = append(x.Rules, c.Rule)
		}
	}
	return x
}

// BusyBlocks draws the busy blocks of the members' calendars with d:
// records of the availability's type, ids busy-<member>-<n>, each within
// the company's working hours on a working day.
func (w *World) BusyBlocks(d Draws) []Record {
	a := w.Availability
	if a == nil {
		return nil
	}
	t, ok := w.RecordType(a.Record)
	if !ok {
		return nil
	}
	cal := &w.Calendar
	dayStart, dayEnd := cal.DayStart, cal.DayEnd
	if dayStart == 0 && dayEnd == 0 {
		dayStart, dayEnd = 9*clock.Hour, 17*clock.Hour
	}
	slot := 30 * clock.Minute
	slots := int((dayEnd - dayStart) / slot)
	days := a.Days
	var starts []time.Time // the working days' starts on the wall clock
	if days == 0 {
		days = 60
	}
	base := cal.Wall(0)
	midnight := time.Date(base.Year(), base.Month(), base.Day(), 0, 0, 0, 0, base.Location())
	for d := 0; len(starts) < days && d < 4*days+14; d++ {
		ws := midnight.AddDate(0, 0, d).Add(time.Duration(dayStart) * time.Millisecond)
		at := clock.Time(ws.Sub(cal.Start).Milliseconds())
		if at < 0 || !cal.IsWorking(at) {
			continue
		}
		if a.Days == 0 && at >= w.Horizon {
			break
		}
		starts = append(starts, ws)
	}
	var out []Record
	for _, m := range a.Members {
		n := 0
		for di, ws := range starts {
			key := fmt.Sprintf("busy/%s/%d", m, di)
			count := a.PerMin + int(d.Unit(key+"/n")*float64(a.PerMax-a.PerMin+1))
			used := make([]bool, slots)
			for k := range count {
				kk := key + "/" + strconv.Itoa(k)
				steps := int((a.LenMax - a.LenMin) / slot)
				length := int(a.LenMin/slot) + int(d.Unit(kk+"/len")*float64(steps+1))
				if length > slots {
					continue
				}
				first := int(d.Unit(kk+"/at") * float64(slots-length+1))
				if slices.Contains(used[first:first+length], true) {
					continue
				}
				for i := first; i < first+length; i++ {
					used[i] = true
				}
				n++
				start := ws.Add(time.Duration(first) * 30 * time.Minute)
				end := start.Add(time.Duration(length) * 30 * time.Minute)
				rec := Record{Type: t.ID, ID: fmt.Sprintf("busy-%s-%d", m, n), Fields: map[string]any{}}
				for _, f := range t.Fields {
					rec.Fields[f.Name] = f.Zero()
				}
				rec.Fields["member"] = m
				rec.Fields["start"] = start.UTC().Format(time.RFC3339)
				rec.Fields["end"] = end.UTC().Format(time.RFC3339)
				out = append(out, rec)
			}
		}
	}
	return out
}
