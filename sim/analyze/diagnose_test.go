package analyze_test

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim/analyze"
	"github.com/corpsim/corpsim/worlds"
)

// diagWorldSrc: bob buys a licence that ann must approve (deadline 1d,
// value 20, bonus 10); cat and bob could both do the guide (value 6), which
// appears with the project and nobody claims while both are free.
const diagWorldSrc = `version: 1
name: diag-unit
start: 2026-01-05T09:00:00Z
horizon: 10d
roles: [{id: eng}, {id: lead}]
teams: [{id: t, budget: 100000}]
members:
  - {id: ann, role: lead, team: t}
  - {id: bob, role: eng, team: t}
  - {id: cat, role: eng, team: t}
queues: [{id: q, served_by: [eng, lead]}]
approvals:
  - id: buy
    steps:
      - {role: lead, above: 100}
projects:
  - id: p
    team: t
    queue: q
    deadline: 1d
    value: 10
    tasks:
      - {id: licence, role: eng, effort: 1h, purchase: 3000, value: 20}
      - {id: guide, role: eng, effort: 1h, value: 6}
interruptions:
  - {at: 1h30m, kind: leave, member: ann, for: 2d}
scoring:
  late_half_life: 1d
`

func newDiagLog(tb testing.TB) *logBuilder {
	tb.Helper()
	w, err := worlds.Load("diag-unit.yaml", []byte(diagWorldSrc))
	if err != nil {
		tb.Fatal(err)
	}
	b := &logBuilder{tb: tb, w: w}
	b.add(0, payload.EvSessionStarted, "", 0, payload.SessionStarted{Format: payload.LogFormat, World: w.Name, WorldFile: "diag-unit.yaml", WorldHash: w.Hash, Seed: 1, Load: 1, Source: diagWorldSrc})
	return b
}

// approverAwayLog: bob works the licence for 1h and asks at 1h06m; ann
// leaves at 1h30m for two days, comes back and approves; bob completes it
// 15m later, a day and more past the deadline. Nobody takes the guide.
type approverAwayLog struct {
	*logBuilder
	requestAt, leftAt, backAt, doneAt int64
}

func newApproverAwayLog(tb testing.TB) *approverAwayLog {
	b := &approverAwayLog{logBuilder: newDiagLog(tb)}
	b.do(0, "bob", 1, payload.EvTaskClaimed, payload.TaskClaimed{Task: "licence"})
	ws := b.do(0, "bob", 1, payload.EvWorkStarted, payload.WorkStarted{Task: "licence", Work: clock.Duration(hour), Until: clock.Time(hour)})
	wf := b.add(hour, payload.EvWorkFinished, "bob", ws, payload.WorkFinished{Task: "licence", Work: clock.Duration(hour)})
	b.requestAt = hour + 6*minute
	b.do(b.requestAt, "bob", wf, payload.EvApprovalRequested, payload.ApprovalRequested{Request: "r1", Task: "licence", Chain: "buy", Amount: 3000,
		Steps: []org.RequestStep{{Role: "lead", Approver: "ann"}}})
	b.leftAt = 90 * minute
	until := b.w.Calendar.AddWork(clock.Time(b.leftAt), 2*clock.Duration(b.w.Calendar.DayLength()))
	left := b.add(b.leftAt, payload.EvMemberLeft, "ann", 0, payload.MemberLeft{Until: until})
	b.backAt = int64(until)
	back := b.add(b.backAt, payload.EvMemberReturned, "ann", left, struct{}{})
	granted := b.do(b.backAt, "ann", back, payload.EvApprovalGranted, payload.ApprovalDecided{Request: "r1", Step: 0})
	b.doneAt = b.backAt + 15*minute
	b.do(b.doneAt, "bob", granted, payload.EvTaskCompleted, payload.TaskCompleted{Task: "licence"})
	return b
}

func hours(d clock.Duration) float64 { return float64(d) / float64(clock.Hour) }

func cause(d *analyze.Diagnosis, name string) (analyze.Cause, bool) {
	for _, c := range d.Causes {
		if c.Cause == name {
			return c, true
		}
	}
	return analyze.Cause{}, false
}

// checkAddsUp fails unless d's causes' points add up to its lost value,
// and that is the world's possible value minus the rubric's team score.
func checkAddsUp(t *testing.T, s *analyze.Session, d *analyze.Diagnosis) {
	t.Helper()
	possible := 0.0
	for _, tk := range s.State.AllTasks() {
		possible += tk.Value
	}
	for _, p := range s.World.Projects {
		possible += p.Value
	}
	if want := possible - policies.Score(s.State).TeamScore; math.Abs(d.Lost-want) > 1e-6 {
		t.Errorf("lost %v; want possible %v - team score = %v", d.Lost, possible, want)
	}
	sum := 0.0
	for _, c := range d.Causes {
		sum += c.Points
	}
	if math.Abs(sum-d.Lost) > 1e-5 {
		t.Errorf("causes add up to %v; want the lost %v (%+v)", sum, d.Lost, d.Causes)
	}
}

func TestDiagnoseApproverOnLeave(t *testing.T) {
	b := newApproverAwayLog(t)
	s := b.load()
	d := s.Diagnose()
	checkAddsUp(t, s, d)
	if d.First() != analyze.CauseLeave {
		t.Fatalf("first cause %q; want leave (%+v)", d.First(), d.Causes)
	}
	leave, _ := cause(d, analyze.CauseLeave)
	if want := hours(b.work(b.leftAt, b.backAt)); math.Abs(leave.Hours-want) > 1e-6 {
		t.Errorf("leave %vh; want ann's leave during the request, %vh", leave.Hours, want)
	}
	if len(leave.Detail) == 0 || !strings.HasPrefix(leave.Detail[0].What, "ann") {
		t.Errorf("leave detail %+v does not name ann", leave.Detail)
	}
	appr, ok := cause(d, analyze.CauseApproval)
	if want := hours(b.work(b.requestAt, b.leftAt)); !ok || math.Abs(appr.Hours-want) > 1e-6 || appr.Detail[0].What != "ann" {
		t.Errorf("approval %+v; want %vh on ann's desk before she left", appr, want)
	}
	// The guide sat unclaimed with both who could take it idle, from the
	// start to the end of the log.
	un, ok := cause(d, analyze.CauseUnclaimed)
	if want := hours(b.work(0, b.doneAt)); !ok || math.Abs(un.Hours-want) > 1e-6 {
		t.Errorf("unclaimed %+v; want the guide's %vh", un, want)
	}
	var who []string
	for _, p := range un.Detail {
		who = append(who, p.What)
	}
	// bob held the licence while the guide waited; cat held nothing.
	if !slices.Contains(who, "cat idle") || !slices.Contains(who, "bob holding licence, not working on it") {
		t.Errorf("unclaimed detail %v; want cat idle and bob holding licence", who)
	}
	// The licence's own hour of work costs nothing: it waited on the rest.
	if w, _ := cause(d, analyze.CauseWork); w.Points != 0 || math.Abs(w.Hours-1) > 1e-6 {
		t.Errorf("work %+v; want 1h and no points", w)
	}

	// JSON is exactly lost and causes of cause, hours and points.
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	if keys := sortedKeys(top); !slices.Equal(keys, []string{"causes", "lost"}) {
		t.Fatalf("JSON keys %v; want causes, lost", keys)
	}
	var rows []map[string]json.RawMessage
	if err := json.Unmarshal(top["causes"], &rows); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if keys := sortedKeys(r); !slices.Equal(keys, []string{"cause", "hours", "points"}) {
			t.Fatalf("cause keys %v; want cause, hours, points", keys)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestDiagnoseNothingLost: with every task done on time there is nothing
// to explain.
func TestDiagnoseNothingLost(t *testing.T) {
	b := newDiagLog(t)
	b.do(0, "cat", 1, payload.EvTaskClaimed, payload.TaskClaimed{Task: "guide"})
	cs := b.do(0, "cat", 1, payload.EvWorkStarted, payload.WorkStarted{Task: "guide", Work: clock.Duration(hour), Until: clock.Time(hour)})
	b.do(0, "bob", 1, payload.EvTaskClaimed, payload.TaskClaimed{Task: "licence"})
	ws := b.do(0, "bob", 1, payload.EvWorkStarted, payload.WorkStarted{Task: "licence", Work: clock.Duration(hour), Until: clock.Time(hour)})
	cf := b.add(hour, payload.EvWorkFinished, "cat", cs, payload.WorkFinished{Task: "guide", Work: clock.Duration(hour)})
	b.do(hour, "cat", cf, payload.EvTaskCompleted, payload.TaskCompleted{Task: "guide"})
	wf := b.add(hour, payload.EvWorkFinished, "bob", ws, payload.WorkFinished{Task: "licence", Work: clock.Duration(hour)})
	b.do(hour, "bob", wf, payload.EvApprovalRequested, payload.ApprovalRequested{Request: "r1", Task: "licence", Chain: "buy", Amount: 3000,
		Steps: []org.RequestStep{{Role: "lead", Approver: "ann"}}})
	g := b.do(hour+10*minute, "ann", 0, payload.EvApprovalGranted, payload.ApprovalDecided{Request: "r1", Step: 0})
	b.do(hour+10*minute, "bob", g, payload.EvTaskCompleted, payload.TaskCompleted{Task: "licence"})
	s := b.load()
	d := s.Diagnose()
	checkAddsUp(t, s, d)
	if d.Lost != 0 || len(d.Causes) != 0 || d.Failed != 0 {
		t.Fatalf("got lost %v, causes %+v, %d failed; want nothing lost", d.Lost, d.Causes, d.Failed)
	}
}

func TestAggregateIsTheMean(t *testing.T) {
	a := &analyze.Diagnosis{Lost: 10, Sessions: 1, Causes: []analyze.Cause{{Cause: "capacity", Hours: 4, Points: 6}, {Cause: "outage", Hours: 2, Points: 4}}}
	b := &analyze.Diagnosis{Lost: 20, Sessions: 1, Causes: []analyze.Cause{{Cause: "capacity", Hours: 8, Points: 20}}}
	g := analyze.Aggregate([]*analyze.Diagnosis{a, b})
	want := []analyze.Cause{{Cause: "capacity", Hours: 6, Points: 13}, {Cause: "outage", Hours: 1, Points: 2}}
	if g.Lost != 15 || g.Sessions != 2 || !slices.EqualFunc(g.Causes, want, func(x, y analyze.Cause) bool {
		return x.Cause == y.Cause && x.Hours == y.Hours && x.Points == y.Points
	}) {
		t.Fatalf("got lost %v over %d, causes %+v; want 15 over 2, %+v", g.Lost, g.Sessions, g.Causes, want)
	}
	if sh := g.Share("capacity"); math.Abs(sh-13.0/15) > 1e-12 {
		t.Fatalf("capacity share %v; want 13/15", sh)
	}
}

// shiftWorldSrc: dee works days, nat nights; four 3h tickets with a 4h SLA
// arrive at 09:00, while only dee is on shift.
const shiftWorldSrc = `version: 2
name: shift-diag
start: 2026-06-01T00:00:00Z
horizon: 2d
calendar: {hours: "00:00-24:00", workdays: [mon, tue, wed, thu, fri, sat, sun], timezone: UTC}
roles: [{id: op}]
teams:
  - id: desk
    coverage: 24/7
    shifts:
      - {id: day, hours: "08:00-20:00", members: [dee]}
      - {id: night, hours: "20:00-08:00", members: [nat]}
members:
  - {id: dee, role: op, team: desk}
  - {id: nat, role: op, team: desk}
queues: [{id: q, served_by: [op]}]
arrivals:
  - id: t
    queue: q
    process: scheduled
    at: [9h, 9h, 9h, 9h]
    ticket: {title: Job, role: op, effort: 3h, value: 5, sla: 4h}
`

// TestDiagnoseOffShift: a ticket that waits while the only member free to
// take it is off shift waits for capacity (too few hands at that hour),
// not unclaimed with that member idle; the trace of its wait says who was
// on shift.
func TestDiagnoseOffShift(t *testing.T) {
	w, err := worlds.Load("shift.yaml", []byte(shiftWorldSrc))
	if err != nil {
		t.Fatal(err)
	}
	s := playLoaded(t, w, []byte(shiftWorldSrc), 1)
	d := s.Diagnose()
	if d.Lost <= 0 {
		t.Fatalf("nothing lost: %+v", d)
	}
	var capacity *analyze.Cause
	for i, c := range d.Causes {
		if c.Cause == analyze.CauseUnclaimed && c.Points > 0 {
			t.Errorf("unclaimed lost %.2f points (%v): nat was off shift, not idle", c.Points, c.Detail)
		}
		if c.Cause == analyze.CauseCapacity {
			capacity = &d.Causes[i]
		}
	}
	if capacity == nil || capacity.Points != d.Lost || len(capacity.Detail) == 0 || !strings.Contains(capacity.Detail[0].What, "nat off shift") {
		t.Errorf("capacity: %+v; want all %.2f points lost, nat off shift", capacity, d.Lost)
	}
	tr, err := s.Task("t-3")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tr.Summary, "nat held nothing and was off shift throughout") || !strings.Contains(tr.Summary, "dee held t-1") {
		t.Errorf("t-3's summary: %s; want nat off shift throughout and what dee held", tr.Summary)
	}
}

// TestTraceOfAChangeAfterDone: from format 9 a requirement change that
// lands on a task already done leaves it as delivered, and its trace
// puts no wait down to the change.
func TestTraceOfAChangeAfterDone(t *testing.T) {
	src := `version: 1
name: change-late
start: 2026-01-05T09:00:00Z
horizon: 5d
roles: [{id: eng}]
teams: [{id: t}]
members: [{id: bob, role: eng, team: t}]
queues: [{id: q, served_by: [eng]}]
projects:
  - {id: p, team: t, queue: q, deadline: 4d, tasks: [{id: spec, role: eng, effort: 2h}]}
interruptions:
  - {at: 2d, kind: change, task: spec, effort: +4h}
`
	w, err := worlds.Load("w.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := playLoaded(t, w, []byte(src), 1).Task("spec")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range tr.Delays {
		if d.Kind == analyze.DelayChange {
			t.Errorf("a change after spec was done is a delay: %s", d.Text)
		}
	}
	if tr.Outcome != "on_time" && tr.Outcome != "on time" {
		t.Errorf("spec's outcome %q; want on time", tr.Outcome)
	}
}
