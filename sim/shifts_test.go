package sim_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

func mustWorldEngine(tb testing.TB, name string, src []byte, seed uint64) (*sim.Engine, *worlds.World) {
	tb.Helper()
	w, err := worlds.Load(name, src)
	if err != nil {
		tb.Fatal(err)
	}
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: seed, Session: "s"})
	if err != nil {
		tb.Fatal(err)
	}
	return e, w
}

func decode[T any](tb testing.TB, ev events.Event) T {
	tb.Helper()
	var p T
	if err := json.Unmarshal(ev.Payload, &p); err != nil {
		tb.Fatalf("seq %d %s: %v", ev.Seq, ev.Type, err)
	}
	return p
}

// A team in Warsaw works 09:00-17:00 there while the company works
// 09:00-17:00 UTC. The session starts on Friday 2026-03-27 at 08:00 UTC
// (09:00 CET); clocks go forward on Sunday the 29th, so on Monday the
// team's day starts at 07:00 UTC (09:00 CEST).
const warsawTeam = `version: 2
name: warsaw
start: 2026-03-27T08:00:00Z
horizon: 2w
roles:
  - {id: engineer}
teams:
  - id: eng
    calendar: {hours: "09:00-17:00", timezone: Europe/Warsaw}
members:
  - {id: eve, role: engineer, team: eng}
queues:
  - {id: fixes, served_by: [engineer]}
arrivals:
  - id: fix
    queue: fixes
    process: scheduled
    every: 1w
    count: 1
    ticket: {title: Fix, role: engineer, effort: 12h, sla: 2d}
`

func TestTeamCalendarAcrossDST(t *testing.T) {
	e, _ := mustWorldEngine(t, "warsaw.yaml", []byte(warsawTeam), 1)
	e.Start()
	evs := drive(t, e, greedy, false, 0)
	utc := func(d, h, m int) clock.Time {
		start := time.Date(2026, 3, 27, 8, 0, 0, 0, time.UTC)
		return clock.Time(time.Date(2026, 3, d, h, m, 0, 0, time.UTC).Sub(start).Milliseconds())
	}
	fridayEnd, mondayStart := utc(27, 16, 0), utc(30, 7, 0)
	var crossed, created bool
	var from clock.Time // when eve's latest action left her free
	for _, ev := range evs {
		switch ev.Type {
		case payload.EvTaskCreated:
			// The SLA is two of the team's days: Friday 08:00-16:00 UTC and
			// Monday 07:00-15:00 UTC.
			if got, want := decode[payload.TaskCreated](t, ev).Deadline, utc(30, 15, 0); got != want {
				t.Errorf("SLA deadline %d, want %d (Monday 15:00 UTC)", got, want)
			}
			created = true
		case payload.EvTurn:
			from = decode[payload.Turn](t, ev).BusyUntil // the turn's own minute
		case payload.EvTaskClaimed:
			from = decode[payload.TaskClaimed](t, ev).BusyUntil
		case payload.EvWorkStarted:
			p := decode[payload.WorkStarted](t, ev)
			s := from // work begins once the turn's other actions are done
			if s < fridayEnd && p.Until > fridayEnd {
				// The stint's work done on Friday, the rest from Monday 07:00 UTC.
				if want := mondayStart.Add(p.Work - fridayEnd.Sub(s)); p.Until != want {
					t.Errorf("stint from %d for %s ends at %d, want %d (Monday 07:00 UTC plus what Friday left)", s, p.Work, p.Until, want)
				}
				crossed = true
			}
			if at := clock.Time(ev.Time); at >= fridayEnd && at < mondayStart {
				t.Errorf("work started at %d, between Friday 16:00 UTC and Monday 07:00 UTC", at)
			}
		}
	}
	if !crossed || !created {
		t.Fatalf("no stint crossed Friday's end (%v) or no ticket arrived (%v)", crossed, created)
	}
	// Done, it retired at the next event (log format 4).
	if r := e.State().Retired(); r == nil || r.N != 1 || r.Resolved != 1 || len(e.State().Tasks()) != 0 {
		t.Errorf("the fix did not retire resolved: %+v, %d tasks live", r, len(e.State().Tasks()))
	}
}

func mustRotaSource(tb testing.TB) []byte {
	tb.Helper()
	src, err := os.ReadFile("../worlds/testdata/rota.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	return src
}

// shiftOf is each rota member's shift in Warsaw minutes of the day.
var shiftOf = map[string][2]int{"ann": {6 * 60, 14 * 60}, "ben": {14 * 60, 22 * 60}, "cat": {22 * 60, 6 * 60}}

func onShift(w *worlds.World, member string, at clock.Time) bool {
	wall := w.Calendar.Wall(at) // the company calendar is in Europe/Warsaw too
	m := wall.Hour()*60 + wall.Minute()
	s := shiftOf[member]
	if s[0] < s[1] {
		return s[0] <= m && m < s[1]
	}
	return m >= s[0] || m < s[1]
}

// holder claims a ticket, works on it an hour and then holds it forever:
// it never hands anything over.
func holder(o org.Observation) sim.Answer {
	a := sim.Answer{Member: o.Member, Turn: o.Turn, Actions: []org.Action{{Type: org.ActWait}}}
	if len(o.Assigned) == 0 && len(o.Available) > 0 {
		id := o.Available[0].ID
		a.Actions = []org.Action{{Type: org.ActClaim, Task: id}, {Type: org.ActWork, Task: id, For: "1h"}}
	}
	return a
}

func handoverViolations(tb testing.TB, evs []events.Event) []events.Event {
	var out []events.Event
	for _, ev := range evs {
		if ev.Type == payload.EvActionRejected && decode[payload.ActionRejected](tb, ev).Rule == worlds.RuleHandover {
			out = append(out, ev)
		}
	}
	return out
}

func mustReplayLive(tb testing.TB, e *sim.Engine, evs []events.Event) {
	tb.Helper()
	r, err := sim.Rebuild(seqOf(evs), "s", sim.Config{})
	if err != nil {
		tb.Fatalf("Rebuild: %v", err)
	}
	if got, want := r.StateHash(), e.StateHash(); got != want {
		tb.Fatalf("replayed state hash %s, live %s", got, want)
	}
	if evs[len(evs)-1].Type != payload.EvSessionEnded {
		tb.Fatalf("the log ends with %s, not session.ended", evs[len(evs)-1].Type)
	}
}

// TestShiftTurnsAndHandover plays the 24/7 desk with greedy agents: each
// operator is asked only within its shift, hands its tickets over to the
// next shift before its own ends, and commits no handover violation; a
// replay of the session reproduces its state.
func TestShiftTurnsAndHandover(t *testing.T) {
	e, w := mustWorldEngine(t, "rota.yaml", mustRotaSource(t), 3)
	e.Start()
	evs := drive(t, e, greedy, false, 0)
	turns := map[string]int{}
	handed := 0
	for _, ev := range evs {
		switch ev.Type {
		case payload.EvTurn:
			if _, ok := shiftOf[ev.Actor]; !ok {
				continue
			}
			turns[ev.Actor]++
			if !onShift(w, ev.Actor, clock.Time(ev.Time)) {
				t.Errorf("%s took a turn at %s, outside its shift", ev.Actor, w.Calendar.Wall(clock.Time(ev.Time)))
			}
		case payload.EvTaskHandedOff:
			p := decode[payload.TaskHandedOff](t, ev)
			handed++
			if !onShift(w, ev.Actor, clock.Time(ev.Time)) || onShift(w, p.To, clock.Time(ev.Time)) {
				t.Errorf("%s handed %s to %s at %s: want it on shift and the receiver not yet", ev.Actor, p.Task, p.To, w.Calendar.Wall(clock.Time(ev.Time)))
			}
		}
	}
	for m := range shiftOf {
		if turns[m] == 0 {
			t.Errorf("%s took no turn", m)
		}
	}
	if handed == 0 {
		t.Errorf("nobody handed work over")
	}
	if v := handoverViolations(t, evs); len(v) > 0 || e.State().Violations > 0 {
		t.Errorf("greedy committed %d handover violations (%d in all), want none", len(v), e.State().Violations)
	}
	done := 0
	for _, task := range e.State().Tasks() {
		if task.Status == org.StatusDone {
			done++
		}
	}
	if r := e.State().Retired(); done != len(e.State().Tasks()) || r.N == 0 {
		t.Errorf("%d of %d live tickets done and %d retired, want all done and some retired", done, len(e.State().Tasks()), r.N)
	}
	mustReplayLive(t, e, evs)
}

// TestHandoverViolation plays the desk with members that hold their work:
// each holding at its shift's end is a policy violation at that instant,
// counted in the state, and a replay reproduces the state.
func TestHandoverViolation(t *testing.T) {
	e, w := mustWorldEngine(t, "rota.yaml", mustRotaSource(t), 3)
	e.Start()
	evs := drive(t, e, holder, false, 0)
	v := handoverViolations(t, evs)
	if len(v) == 0 {
		t.Fatal("no handover violation recorded")
	}
	for _, ev := range v {
		p := decode[payload.ActionRejected](t, ev)
		wall := w.Calendar.Wall(clock.Time(ev.Time))
		end := shiftOf[ev.Actor][1]
		if p.Kind != org.KindPolicy || p.Index != -1 || wall.Hour()*60+wall.Minute() != end || wall.Second() != 0 {
			t.Fatalf("violation %+v by %s at %s: want kind policy, index -1, at its shift's end", p, ev.Actor, wall)
		}
	}
	if got := e.State().Violations; got != len(v) {
		t.Errorf("state counts %d violations, the log %d", got, len(v))
	}
	mustReplayLive(t, e, evs)
}

// TestShiftSnapshotRestore restores the desk from snapshots taken along a
// session of holders (the handover timers armed and firing) and of greedy
// agents (hand-offs), and checks that each restored engine continues with
// the uninterrupted run's log.
func TestShiftSnapshotRestore(t *testing.T) {
	for name, decide := range map[string]decider{"holder": holder, "greedy": greedy} { // order: each case is independent
		t.Run(name, func(t *testing.T) {
			full, _ := mustWorldEngine(t, "rota.yaml", mustRotaSource(t), 5)
			full.Start()
			want := drive(t, full, decide, false, 0)
			live, w := mustWorldEngine(t, "rota.yaml", mustRotaSource(t), 5)
			live.Start()
			boundaries := checkRestores(t, live, sim.Config{World: w, Seed: 5, Session: "s"}, 9, want, func([]events.Event) decider { return decide })
			restores := (boundaries + 8) / 9
			if restores < 10 {
				t.Errorf("only %d restores", restores)
			}
		})
	}
}

// TestPlannerHandsOver plays the desk with planners: like greedy, they
// hand their tickets to the next shift and commit no handover violation.
func TestPlannerHandsOver(t *testing.T) {
	e, _ := mustWorldEngine(t, "rota.yaml", mustRotaSource(t), 3)
	e.Start()
	planners := map[string]*agents.Planner{}
	evs := drive(t, e, func(o org.Observation) sim.Answer {
		p := planners[o.Member]
		if p == nil {
			p = agents.NewPlanner(o.Member)
			planners[o.Member] = p
		}
		acts, _ := p.Decide(context.Background(), o)
		return sim.Answer{Member: o.Member, Turn: o.Turn, Actions: acts}
	}, false, 0)
	handed := 0
	for _, ev := range evs {
		if ev.Type == payload.EvTaskHandedOff {
			handed++
		}
	}
	if v := handoverViolations(t, evs); len(v) > 0 || handed == 0 {
		t.Errorf("planners: %d handover violations and %d hand-offs, want none and some", len(v), handed)
	}
	for _, task := range e.State().Tasks() {
		if task.Status != org.StatusDone {
			t.Errorf("ticket %s is %s, want done", task.ID, task.Status)
		}
	}
	mustReplayLive(t, e, evs)
}

// An NPC in a team working 10:00-18:00 in Tokyo answers after 3h of its
// own working time: asked on Friday at 08:00 UTC (17:00 in Tokyo), it
// replies on Monday at 03:00 UTC (one hour on Friday, two from 10:00 on
// Monday in Tokyo), not on Friday at 12:00 UTC as the company calendar
// (09:00-17:00 UTC) would have it.
const tokyoNPC = `version: 2
name: tokyo
start: 2026-03-27T08:00:00Z
horizon: 2w
roles:
  - {id: engineer}
  - {id: expert}
teams:
  - {id: eng}
  - id: jp
    calendar: {hours: "10:00-18:00", timezone: Asia/Tokyo}
members:
  - {id: eve, role: engineer, team: eng}
  - id: kai
    role: expert
    team: jp
    npc:
      reply: {min: 3h, max: 3h}
      knows: {deploy: "Deploys are on Tuesdays."}
queues:
  - {id: fixes, served_by: [engineer]}
projects:
  - id: p
    team: eng
    queue: fixes
    deadline: 2w
    tasks:
      - {id: t, role: engineer, effort: 1h}
`

func TestNPCRepliesOnItsTeamsCalendar(t *testing.T) {
	e, _ := mustWorldEngine(t, "tokyo.yaml", []byte(tokyoNPC), 1)
	e.Start()
	asked := false
	evs := drive(t, e, func(o org.Observation) sim.Answer {
		a := sim.Answer{Member: o.Member, Turn: o.Turn, Actions: []org.Action{{Type: org.ActWait}}}
		if !asked {
			asked = true
			a.Actions = []org.Action{{Type: org.ActMessage, To: "kai", Text: "When is the next deploy?"}}
		}
		return a
	}, false, 0)
	monday := clock.Time(67 * clock.Hour) // 2026-03-30 03:00 UTC
	for _, ev := range evs {
		if ev.Type == payload.EvMessageSent && ev.Actor == "kai" {
			if clock.Time(ev.Time) != monday {
				t.Errorf("kai replied at %d, want %d (Monday 03:00 UTC)", ev.Time, monday)
			}
			return
		}
	}
	t.Fatal("kai never replied")
}

// TestWeeklyRotation plays the desk with its shift lists rotating weekly,
// at ten times the load (alerts for two weeks and more): each operator
// takes its turns only within the shift its list works that week, and
// greedy still hands over without a violation.
func TestWeeklyRotation(t *testing.T) {
	src := []byte(strings.Replace(string(mustRotaSource(t)), "handover: required", "handover: required\n    rotate: weekly", 1))
	w, err := worlds.Load("rota.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: 2, Session: "s", Load: 10})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	evs := drive(t, e, greedy, false, 0)
	list := map[string]int{"ann": 0, "ben": 1, "cat": 2} // the shift each is listed on: early, late, night
	monday := time.Date(2026, 3, 23, 0, 0, 0, 0, time.UTC)
	onRotatedShift := func(member string, at clock.Time) bool {
		wall := w.Calendar.Wall(at) // Europe/Warsaw, the desk's clock
		y, mo, d := wall.Date()
		day := int(time.Date(y, mo, d, 0, 0, 0, 0, time.UTC).Sub(monday).Hours() / 24)
		m := wall.Hour()*60 + wall.Minute()
		shift, startDay := 0, day
		switch {
		case m >= 22*60:
			shift = 2
		case m < 6*60:
			shift, startDay = 2, day-1 // the night began the day before
		case m >= 14*60:
			shift = 1
		}
		return (list[member]+startDay/7)%3 == shift
	}
	weeks := map[int]bool{}
	for _, ev := range evs {
		if _, ok := list[ev.Actor]; !ok || ev.Type != payload.EvTurn {
			continue
		}
		weeks[int(ev.Time/int64(7*24*clock.Hour))] = true
		if !onRotatedShift(ev.Actor, clock.Time(ev.Time)) {
			t.Errorf("%s took a turn at %s, outside its shift that week", ev.Actor, w.Calendar.Wall(clock.Time(ev.Time)))
		}
	}
	if len(weeks) < 3 {
		t.Errorf("turns in %d weeks, want at least 3", len(weeks))
	}
	if v := handoverViolations(t, evs); len(v) > 0 {
		t.Errorf("greedy committed %d handover violations, want none", len(v))
	}
	mustReplayLive(t, e, evs)
}

// roundTheClock is a desk whose one operator's shift is the whole day,
// every day: her shift never ends, so midnight is no handover.
const roundTheClock = `version: 2
name: round-the-clock
start: 2026-01-05T20:00:00Z
horizon: 2026-01-08T00:00:00Z
calendar: {hours: "00:00-24:00", workdays: [mon, tue, wed, thu, fri, sat, sun]}
roles: [{id: op}]
teams:
  - id: desk
    handover: required
    shifts:
      - {id: all, hours: "00:00-24:00", members: [ann]}
members:
  - {id: ann, role: op, team: desk}
queues: [{id: q, served_by: [op]}]
arrivals:
  - id: a
    queue: q
    process: scheduled
    at: ["2026-01-05T21:00:00Z"]
    ticket: {title: Alarm, role: op, effort: 8h, value: 1}
`

// TestWholeDayShiftHasNoMidnightHandover plays an operator on a shift of
// 00:00-24:00 every day with greedy: she works through midnight, finishes
// the ticket and commits no handover violation. (Her shift was taken to
// end at every midnight: greedy stopped working half an hour before it,
// and she was charged a violation each midnight while the ticket stood.)
func TestWholeDayShiftHasNoMidnightHandover(t *testing.T) {
	e, w := mustWorldEngine(t, "round-the-clock.yaml", []byte(roundTheClock), 1)
	e.Start()
	evs := drive(t, e, greedy, false, 0)
	if v := handoverViolations(t, evs); len(v) > 0 {
		t.Errorf("%d handover violations, the first at %s, want none", len(v), w.Calendar.Wall(clock.Time(v[0].Time)))
	}
	done := false
	for _, ev := range evs {
		done = done || ev.Type == payload.EvTaskCompleted
	}
	if !done {
		t.Errorf("the ticket was not completed")
	}
	mustReplayLive(t, e, evs)
}

// officeHandover is a team of one calendar that requires handing work
// over: at 17:00 everyone's day ends together, so held work has nobody to
// go to and stays, at the cost of a violation.
const officeHandover = `version: 2
name: office-handover
start: 2026-01-05T09:00:00Z
horizon: 5d
teams:
  - {id: desk, handover: required}
roles: [{id: op}]
members:
  - {id: ann, role: op, team: desk}
queues: [{id: q, served_by: [op]}]
arrivals:
  - id: a
    queue: q
    process: scheduled
    at: [1h]
    ticket: {title: Migration, role: op, effort: 12h, value: 1}
`

// TestHeldWorkGoesOnNextDay plays a ticket of a day and a half in a team
// whose handover is required and who has nobody to hand it to, with greedy
// and planner: the work stays over the night (one violation) and goes on
// the next morning. (They waited without an end when the handover reserve
// began, and nothing woke them: the ticket stood, a violation a day.)
func TestHeldWorkGoesOnNextDay(t *testing.T) {
	planners := map[string]*agents.Planner{}
	for name, decide := range map[string]decider{"greedy": greedy, "planner": func(o org.Observation) sim.Answer { // order: each case is independent
		p := planners[o.Member]
		if p == nil {
			p = agents.NewPlanner(o.Member)
			planners[o.Member] = p
		}
		acts, _ := p.Decide(context.Background(), o)
		return sim.Answer{Member: o.Member, Turn: o.Turn, Actions: acts}
	}} {
		t.Run(name, func(t *testing.T) {
			e, w := mustWorldEngine(t, "office-handover.yaml", []byte(officeHandover), 1)
			e.Start()
			evs := drive(t, e, decide, false, 0)
			done := false
			for _, ev := range evs {
				done = done || ev.Type == payload.EvTaskCompleted
			}
			if v := handoverViolations(t, evs); !done || len(v) != 1 {
				t.Errorf("ticket completed: %v, with %d handover violations; want completed with 1 (monday 17:00)", done, len(v))
				for _, ev := range v {
					t.Logf("violation at %s", w.Calendar.Wall(clock.Time(ev.Time)))
				}
			}
			mustReplayLive(t, e, evs)
		})
	}
}

// deskOutage is a 24/7 desk in a company that works 09:00-17:00: its
// queue goes down on a Friday at 16:00 for four hours.
const deskOutage = `version: 2
name: desk-outage
start: 2026-01-09T09:00:00Z
horizon: 2026-01-13T17:00:00Z
roles: [{id: op}]
teams:
  - id: desk
    coverage: 24/7
    shifts:
      - {id: day, hours: "08:00-20:00", members: [ann]}
      - {id: night, hours: "20:00-08:00", members: [ben]}
members:
  - {id: ann, role: op, team: desk}
  - {id: ben, role: op, team: desk}
queues: [{id: q, served_by: [op]}]
interruptions:
  - {at: "2026-01-09T16:00:00Z", kind: outage, queue: q, for: 4h}
`

// TestOutageLastsOnItsTeamsSchedule checks that a queue's outage lasts its
// working time on the schedule of the queue's team, as its tickets' SLAs
// do: the 24/7 desk's four hours end on Friday at 20:00. (They were the
// company's four hours, until Monday noon: the desk was down all weekend,
// past the SLA of any ticket it had.)
func TestOutageLastsOnItsTeamsSchedule(t *testing.T) {
	e, w := mustWorldEngine(t, "desk-outage.yaml", []byte(deskOutage), 1)
	e.Start()
	evs := drive(t, e, greedy, false, 0)
	want := clock.Time(11 * clock.Hour) // Friday 20:00
	found := false
	for _, ev := range evs {
		if ev.Type != payload.EvQueueDown {
			continue
		}
		found = true
		if got := decode[payload.QueueDown](t, ev).Until; got != want {
			t.Errorf("the outage lasts until %s, want %s", w.Calendar.Wall(got), w.Calendar.Wall(want))
		}
	}
	if !found {
		t.Fatal("no queue.down event")
	}
	mustReplayLive(t, e, evs)
}
