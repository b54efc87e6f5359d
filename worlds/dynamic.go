package worlds

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"

	"strings"

	"github.com/corpsim/corpsim/clock"
)

// fileArrival is a process that brings new tickets into a queue.
type fileArrival struct {
	ID      string       `yaml:"id"`
	Queue   string       `yaml:"queue"`
	Process string       `yaml:"process"` // poisson, scheduled or bursty
	Every   string       `yaml:"every"`   // poisson: mean gap; scheduled: the gap; bursty: gap between bursts
	Burst   int          `yaml:"burst"`   // bursty: tickets per burst
	At      []string     `yaml:"at"`      // scheduled: instants (working time from the start) instead of every
	Start   string       `yaml:"start"`
	Until   string       `yaml:"until"`
	Count   *int         `yaml:"count"` // stop after this many (before load scaling); nil: no limit
	Ticket  fileTemplate `yaml:"ticket"`
	Case    string       `yaml:"case"` // version 2: the process opens cases of this template instead of tickets
}

// fileTemplate describes the tickets an arrival process brings.
type fileTemplate struct {
	Title    string         `yaml:"title"`
	Role     string         `yaml:"role"`
	Skill    string         `yaml:"skill"`
	Team     string         `yaml:"team"`
	Effort   fileDist       `yaml:"effort"`
	Value    *float64       `yaml:"value"`
	SLA      fileSLA        `yaml:"sla"`
	Priority map[int]int    `yaml:"priority"` // priority -> weight
	Purchase fileAmountDist `yaml:"purchase"`
	Approval string         `yaml:"approval"`
	Info     *fileInfo      `yaml:"info"`
}

// fileDist is a duration distribution: "2h" (fixed), {mean: 2h} (exponential) or {min: 1h, max: 3h} (uniform).
type fileDist struct {
	Fixed string
	Mean  string `yaml:"mean"`
	Min   string `yaml:"min"`
	Max   string `yaml:"max"`
	set   bool
}

// UnmarshalYAML accepts a scalar or a mapping.
func (d *fileDist) UnmarshalYAML(n ast.Node) error {
	const want = `expected a duration like "2h" or a distribution like {mean: 2h} or {min: 1h, max: 3h}`
	switch unwrap(n).(type) {
	case *ast.StringNode, *ast.IntegerNode, *ast.FloatNode:
		var s string
		if err := yaml.NodeToValue(n, &s); err != nil {
			return &yaml.SyntaxError{Message: want, Token: n.GetToken()}
		}
		*d = fileDist{Fixed: s, set: true}
		return nil
	case *ast.MappingNode, *ast.MappingValueNode:
		var m struct {
			Mean string `yaml:"mean"`
			Min  string `yaml:"min"`
			Max  string `yaml:"max"`
		}
		if err := yaml.NodeToValue(n, &m, yaml.DisallowUnknownField()); err != nil {
			return err
		}
		*d = fileDist{Mean: m.Mean, Min: m.Min, Max: m.Max, set: true}
		return nil
	}
	return &yaml.SyntaxError{Message: want, Token: n.GetToken()}
}

// fileAmountDist is a money distribution: 3000 (fixed), {mean: 2000} or {min: 100, max: 9000}.
type fileAmountDist struct {
	Fixed int64
	Mean  int64 `yaml:"mean"` // the tags name the mapping's keys in errors (fieldsAt)
	Min   int64 `yaml:"min"`
	Max   int64 `yaml:"max"`
	set   bool
}

// UnmarshalYAML accepts an integer or a mapping.
func (d *fileAmountDist) UnmarshalYAML(n ast.Node) error {
	const want = "expected an amount like 3000 or a distribution like {mean: 2000} or {min: 100, max: 9000}"
	switch unwrap(n).(type) {
	case *ast.IntegerNode:
		var v int64
		if err := yaml.NodeToValue(n, &v); err != nil {
			return &yaml.SyntaxError{Message: want, Token: n.GetToken()}
		}
		*d = fileAmountDist{Fixed: v, set: true}
		return nil
	case *ast.MappingNode, *ast.MappingValueNode:
		var m struct {
			Mean int64 `yaml:"mean"`
			Min  int64 `yaml:"min"`
			Max  int64 `yaml:"max"`
		}
		if err := yaml.NodeToValue(n, &m, yaml.DisallowUnknownField()); err != nil {
			return err
		}
		*d = fileAmountDist{Mean: m.Mean, Min: m.Min, Max: m.Max, set: true}
		return nil
	}
	return &yaml.SyntaxError{Message: want, Token: n.GetToken()}
}

// fileInterruption is something that happens to the company at a set time.
type fileInterruption struct {
	At       string        `yaml:"at"`
	Kind     string        `yaml:"kind"` // reprioritize, leave, outage, change, urgent
	Task     string        `yaml:"task"`
	Member   string        `yaml:"member"`
	Delegate string        `yaml:"delegate"`
	Queue    string        `yaml:"queue"`
	For      string        `yaml:"for"`
	Value    *float64      `yaml:"value"`
	Priority *int          `yaml:"priority"`
	Effort   string        `yaml:"effort"` // change: extra effort
	Note     string        `yaml:"note"`
	Ticket   *fileTemplate `yaml:"ticket"`
	// DelegateLimit limits what a leave's delegate may approve (version 2).
	DelegateLimit *fileDelegateLimit `yaml:"delegate_limit"`
}

// Dist is a distribution of durations or amounts. Kind is "fixed", "exp" or "uniform".
type Dist struct {
	Kind        string
	Fixed, Mean int64
	Min, Max    int64
}

// Sample draws from the distribution with u01 a uniform number in [0, 1)
// and e1 an exponential number with mean 1, both supplied by the caller's
// seeded stream. A draw is within the distribution's range, an
// exponential one at most the largest int64, however large the range:
// max-min+1 is counted in uint64, and no float beyond int64 is converted
// (Go leaves that to the machine: the smallest int64 on amd64).
func (d Dist) Sample(u01, e1 float64) int64 {
	switch d.Kind {
	case "exp":
		x := e1*float64(d.Mean) + 0.5
		if x >= 0x1p63 {
			return math.MaxInt64
		}
		return max(1, int64(x))
	case "uniform":
		span := uint64(d.Max - d.Min) // Min >= 0, so it fits
		x := u01 * (float64(span) + 1)
		if x >= float64(span) {
			return d.Max
		}
		return d.Min + int64(x)
	}
	return d.Fixed
}

// Template describes the tickets an arrival or an urgent interruption brings.
type Template struct {
	Title  string
	Role   string
	Skill  string
	Team   string
	Effort Dist // milliseconds of working time
	Value  float64
	SLA    clock.Duration // 0: none
	// SLAByPriority is the SLA per priority (version 2), sorted by
	// priority; nil when SLA applies to every ticket. Read it with SLAFor.
	SLAByPriority []PrioritySLA
	Priority      []Weighted
	Purchase      Dist // amount; Kind "" for none
	Chain         string
	Info          *Info
}

// Weighted is a priority and its weight.
type Weighted struct {
	Priority int
	Weight   int
}

// Info is information a task needs that only one member holds and gives when asked.
type Info struct {
	From  string
	Topic string
}

// Arrival is a process that brings tickets into a queue. Gaps are in working time.
type Arrival struct {
	ID      string
	Queue   string
	Process string // poisson, scheduled, bursty
	Every   clock.Duration
	Burst   int
	At      []clock.Time
	Start   clock.Time
	Until   clock.Time // 0: the horizon
	Count   int        // 0: no limit
	Ticket  Template
	Case    string // the case template it opens cases of, instead of tickets ("" for tickets)
}

// Interruption is something that happens at a set time.
type Interruption struct {
	At       clock.Time
	Kind     string
	Task     string
	Member   string
	Delegate string
	Queue    string
	For      clock.Duration
	Value    *float64
	Priority *int
	Effort   clock.Duration
	Note     string
	Ticket   *Template
	// DelegateLimit limits what Delegate may approve for Member on leave;
	// nil for no limit.
	DelegateLimit *DelegateLimit
}

// Interruption kinds.
const (
	Reprioritize = "reprioritize"
	Leave        = "leave"
	Outage       = "outage"
	Change       = "change"
	Urgent       = "urgent"
)

// offset parses a time: a working-time offset from the start or, from
// version 2, an RFC 3339 instant (when).
func (v *validator) offset(path, s string, cal *clock.Calendar, required bool) (clock.Time, bool) {
	return v.when(path, s, cal, required, false)
}

type refs struct {
	roles, teams, members, queues, chains, tasks map[string]string
	agentHeld, npcServes                         map[string]bool
	servedBy                                     map[string][]string
	npcKnows                                     map[string]map[string]string
	cases                                        map[string]string // case template -> where it is defined
	memberRole                                   map[string]string
	chainAttr                                    map[string]string // approval chain -> the attribute it reads
	types                                        map[string]*RecordType
	creators                                     map[string][]string // record type -> roles that may create it (facts.go)
}

func (v *validator) dist(path string, d fileDist, cal *clock.Calendar, required bool) Dist {
	dayLen := cal.DayLength()
	switch {
	case !d.set:
		if required {
			v.errf(path, "missing effort (for example \"2h\", {mean: 2h} or {min: 1h, max: 3h})")
		}
		return Dist{}
	case d.Fixed != "":
		x, _ := v.duration(path, d.Fixed, dayLen, true)
		return Dist{Kind: "fixed", Fixed: int64(x)}
	case d.Mean != "" && d.Min == "" && d.Max == "":
		x, _ := v.duration(path+".mean", d.Mean, dayLen, true)
		return Dist{Kind: "exp", Mean: int64(x)}
	case d.Mean == "" && d.Min != "" && d.Max != "":
		lo, ok1 := v.duration(path+".min", d.Min, dayLen, true)
		hi, ok2 := v.duration(path+".max", d.Max, dayLen, true)
		if ok1 && ok2 && hi < lo {
			v.errf(path+".max", "max (%s) is less than min (%s)", hi, lo)
		}
		return Dist{Kind: "uniform", Min: int64(lo), Max: int64(hi)}
	}
	v.errf(path, "give either mean (exponential) or both min and max (uniform)")
	return Dist{}
}

func (v *validator) amount(path string, d fileAmountDist) Dist {
	switch {
	case !d.set:
		return Dist{}
	case d.Fixed != 0:
		if d.Fixed < 0 {
			v.errf(path, "purchase must not be negative, got %d", d.Fixed)
		}
		return Dist{Kind: "fixed", Fixed: d.Fixed}
	case d.Mean > 0 && d.Min == 0 && d.Max == 0:
		return Dist{Kind: "exp", Mean: d.Mean}
	case d.Mean == 0 && d.Max > 0 && d.Min >= 0 && d.Min <= d.Max:
		return Dist{Kind: "uniform", Min: d.Min, Max: d.Max}
	}
	v.errf(path, "expected a positive amount, {mean: N} or {min: A, max: B} with 0 <= A <= B")
	return Dist{}
}

func (v *validator) template(path string, t *fileTemplate, queue string, r *refs, cal *clock.Calendar, defaultChain string, fixedPriority *int) Template {
	out := Template{Title: t.Title, Role: t.Role, Skill: t.Skill, Team: t.Team}
	if out.Title == "" {
		out.Title = "ticket"
	}
	v.skillHeld(path+".skill", "ticket", out.Title, t.Role, t.Skill)
	if v.ref(path+".role", "role", t.Role, r.roles) && queue != "" && r.queues[queue] != "" {
		if !slices.Contains(r.servedBy[queue], t.Role) {
			v.errf(path+".role", "tickets need role %q, which does not serve queue %q", t.Role, queue)
		} else if !r.agentHeld[t.Role] && !r.npcServes[queue] {
			v.errf(path+".role", "tickets need role %q, which no agent seat holds and no NPC serves", t.Role)
		}
	}
	if t.Team != "" {
		v.ref(path+".team", "team", t.Team, r.teams)
	}
	out.Effort = v.dist(path+".effort", t.Effort, cal, true)
	out.Value = float64(out.Effort.Fixed+out.Effort.Mean+(out.Effort.Min+out.Effort.Max)/2) / float64(clock.Hour)
	if t.Value != nil {
		v.finite(path+".value", t.Value)
		v.nonNegative(path+".value", t.Value)
		out.Value = *t.Value
	}
	for _, p := range slices.Sorted(maps.Keys(t.Priority)) { // in order, so are the errors
		w := t.Priority[p]
		if w < 0 {
			v.errf(path+".priority", "weights must not be negative, got %d for priority %d", w, p)
		}
		out.Priority = append(out.Priority, Weighted{Priority: p, Weight: w})
	}
	sortWeighted(out.Priority)
	v.sla(path+".sla", t.SLA, &out, cal, fixedPriority)
	out.Purchase = v.amount(path+".purchase", t.Purchase)
	if out.Purchase.Kind != "" {
		switch {
		case t.Approval != "":
			if v.ref(path+".approval", "approval chain", t.Approval, r.chains) {
				out.Chain = t.Approval
			}
		case defaultChain != "":
			out.Chain = defaultChain
		default:
			v.errf(path+".approval", "tickets make a purchase: name their approval chain")
		}
	}
	out.Info = v.info(path+".info", t.Info, r)
	return out
}

func (v *validator) info(path string, in *fileInfo, r *refs) *Info {
	if in == nil {
		return nil
	}
	if !v.ref(path+".from", "member", in.From, r.members) {
		return nil
	}
	if in.Topic == "" {
		v.errf(path+".topic", "missing topic")
		return nil
	}
	if k, ok := r.npcKnows[in.From]; !ok || k[in.Topic] == "" {
		v.errf(path+".topic", "%s does not know topic %q (an NPC's npc.knows lists what it can tell)", in.From, in.Topic)
		return nil
	}
	return &Info{From: in.From, Topic: in.Topic}
}

func (v *validator) arrivals(f *file, w *World, r *refs) {
	cal := &w.Calendar
	seen := map[string]string{}
	for i, a := range f.Arrivals {
		p := fmt.Sprintf("arrivals[%d]", i)
		v.checkID(p+".id", "arrival", a.ID, seen)
		out := Arrival{ID: a.ID, Queue: a.Queue, Process: a.Process, Burst: a.Burst}
		if a.Count != nil {
			out.Count = *a.Count
		}
		if a.Case == "" {
			v.ref(p+".queue", "queue", a.Queue, r.queues)
		}
		switch a.Process {
		case "poisson", "bursty":
			switch {
			case a.Process == "bursty" && a.Burst == 0:
				v.errf(p+".burst", "a bursty process needs burst: the number of tickets per burst")
			case a.Process == "bursty" && a.Burst < 1:
				v.errf(p+".burst", "burst must be at least 1, got %d", a.Burst)
			}
			out.Every, _ = v.duration(p+".every", a.Every, cal.DayLength(), true)
		case "scheduled":
			switch {
			case len(a.At) > 0 && a.Every != "":
				v.errf(p+".every", "give either at or every for a scheduled process, not both")
			case len(a.At) > 0:
				for j, at := range a.At {
					t, _ := v.offset(fmt.Sprintf("%s.at[%d]", p, j), at, cal, true)
					out.At = append(out.At, t)
				}
			default:
				out.Every, _ = v.duration(p+".every", a.Every, cal.DayLength(), true)
			}
		case "":
			v.errf(p+".process", "missing process (poisson, scheduled or bursty)")
		default:
			v.errf(p+".process", "unknown process %q (expected poisson, scheduled or bursty)", a.Process)
		}
		var startOK, untilOK bool
		out.Start, startOK = v.offset(p+".start", a.Start, cal, false)
		out.Until, untilOK = v.offset(p+".until", a.Until, cal, false)
		if w.Horizon > 0 && out.Start >= w.Horizon {
			v.errf(p+".start", "%s falls at or after the horizon: the process would bring no ticket", a.Start)
		} else if a.Until != "" && startOK && untilOK && out.Until <= out.Start && !v.lim.Recorded {
			v.errf(p+".until", "%s is not after the process's start (%s): it would bring no ticket", a.Until, cmp.Or(a.Start, "0"))
		}
		if a.Count != nil && *a.Count < 1 && !v.lim.Recorded { // a recorded world reads as it did then (0: no limit)
			// 0 would read as no limit, the opposite of what it says.
			v.errf(p+".count", "count must be at least 1, got %d (leave it out for no limit)", *a.Count)
		}
		defaultChain := ""
		if len(w.Approvals) == 1 {
			defaultChain = w.Approvals[0].ID
		}
		if a.Case != "" {
			if v.needs(2, p+".case", "an arrival opening cases") && v.ref(p+".case", "case template", a.Case, r.cases) {
				out.Case = a.Case
			}
			if !reflect.ValueOf(a.Ticket).IsZero() {
				v.errf(p+".ticket", "an arrival brings cases or tickets: give case or ticket, not both")
			}
			if a.Queue != "" {
				v.errf(p+".queue", "a case goes to its template's queue; leave queue out")
			}
			w.Arrivals = append(w.Arrivals, out)
			continue
		}
		out.Ticket = v.template(p+".ticket", &a.Ticket, a.Queue, r, cal, defaultChain, nil)
		w.Arrivals = append(w.Arrivals, out)
	}
}

func (v *validator) interruptions(f *file, w *World, r *refs) {
	cal := &w.Calendar
	for i, in := range f.Interrupts {
		p := fmt.Sprintf("interruptions[%d]", i)
		out := Interruption{Kind: in.Kind, Task: in.Task, Member: in.Member, Delegate: in.Delegate, Queue: in.Queue,
			Value: in.Value, Priority: in.Priority, Note: in.Note}
		v.finite(p+".value", in.Value)
		v.nonNegative(p+".value", in.Value)
		var okAt bool
		out.At, okAt = v.offset(p+".at", in.At, cal, true)
		if okAt && w.Horizon > 0 && out.At >= w.Horizon {
			v.errf(p+".at", "%s falls at or after the horizon: it would never happen", in.At)
		}
		needFor := func() {
			out.For, _ = v.duration(p+".for", in.For, cal.DayLength(), true)
		}
		if !v.lim.Recorded { // a recorded world reads as it did then, when the field was ignored
			v.kindFields(p, in)
		}
		switch in.Kind {
		case Reprioritize:
			v.ref(p+".task", "task", in.Task, r.tasks)
			if in.Value == nil && in.Priority == nil {
				v.errf(p, "reprioritize needs a new value or priority")
			}
		case Leave:
			v.ref(p+".member", "member", in.Member, r.members)
			if in.Delegate != "" && v.ref(p+".delegate", "member", in.Delegate, r.members) && in.Delegate == in.Member {
				v.errf(p+".delegate", "%s cannot delegate to themselves", in.Member)
			}
			needFor()
		case Outage:
			v.ref(p+".queue", "queue", in.Queue, r.queues)
			needFor()
		case Change:
			v.ref(p+".task", "task", in.Task, r.tasks)
			out.Effort, _ = v.duration(p+".effort", strings.TrimPrefix(in.Effort, "+"), cal.DayLength(), true)
		case Urgent:
			v.ref(p+".queue", "queue", in.Queue, r.queues)
			if in.Ticket == nil {
				v.errf(p+".ticket", "an urgent interruption brings a ticket: describe it")
			} else {
				defaultChain := ""
				if len(w.Approvals) == 1 {
					defaultChain = w.Approvals[0].ID
				}
				t := v.template(p+".ticket", in.Ticket, in.Queue, r, cal, defaultChain, in.Priority)
				out.Ticket = &t
			}
		case "":
			v.errf(p+".kind", "missing kind (reprioritize, leave, outage, change or urgent)")
		default:
			v.errf(p+".kind", "unknown kind %q (expected reprioritize, leave, outage, change or urgent)", in.Kind)
		}
		w.Interruptions = append(w.Interruptions, out)
	}
}

// interruptionFields lists, for each field an interruption reads only for
// some kinds (note and at are every kind's; delegate_limit is checked with
// the delegation limits), the kinds that read it.
var interruptionFields = []struct {
	name  string
	kinds []string
	set   func(in *fileInterruption) bool
}{
	{"task", []string{Reprioritize, Change}, func(in *fileInterruption) bool { return in.Task != "" }},
	{"member", []string{Leave}, func(in *fileInterruption) bool { return in.Member != "" }},
	{"delegate", []string{Leave}, func(in *fileInterruption) bool { return in.Delegate != "" }},
	{"queue", []string{Outage, Urgent}, func(in *fileInterruption) bool { return in.Queue != "" }},
	{"for", []string{Leave, Outage}, func(in *fileInterruption) bool { return in.For != "" }},
	{"value", []string{Reprioritize}, func(in *fileInterruption) bool { return in.Value != nil }},
	{"priority", []string{Reprioritize, Urgent}, func(in *fileInterruption) bool { return in.Priority != nil }},
	{"effort", []string{Change}, func(in *fileInterruption) bool { return in.Effort != "" }},
	{"ticket", []string{Urgent}, func(in *fileInterruption) bool { return in.Ticket != nil }},
}

// kindFields refuses a field that in's kind does not read (an outage's
// delegate, a leave's effort): the engine would ignore it, and whoever
// wrote it meant something by it.
func (v *validator) kindFields(p string, in fileInterruption) {
	for _, f := range interruptionFields {
		known := slices.Contains([]string{Reprioritize, Leave, Outage, Change, Urgent}, in.Kind)
		if !known || !f.set(&in) || slices.Contains(f.kinds, in.Kind) {
			continue
		}
		v.errf(p+"."+f.name, "%s does not read %s (read by %s): leave it out", in.Kind, f.name, strings.Join(f.kinds, " and "))
	}
}

func sortWeighted(ws []Weighted) {
	for i := 1; i < len(ws); i++ {
		for j := i; j > 0 && ws[j].Priority < ws[j-1].Priority; j-- {
			ws[j], ws[j-1] = ws[j-1], ws[j]
		}
	}
}
