package sim

import (
	"fmt"
	"strings"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// This file holds what the engine does with calendars per team and shift
// rotas (world format version 2). Every member works by its own schedule
// (its shift, its team's calendar, or the company's: see
// worlds.World.MemberSchedule); a ticket's deadline and its arrivals follow
// the schedule of its team. In a version 1 world every schedule is the
// company calendar, so these are the calendar calls the engine always made.
//
// A member on a shift is asked to decide only within its shift: a wake-up
// off shift waits for the shift to begin (wakeAt). In a team whose
// handover is required, a member still holding a claimed or in-progress
// item when its working period ends commits a policy violation (rule
// worlds.RuleHandover), recorded as an action.rejected of kind policy at
// that instant; the timers that watch for it are pushed while applying the
// events that make a member hold work, so replay rebuilds them.

// calendars are the teams' schedules the engine asks (only those that are
// not the company calendar) and its watch over handovers; a member's own
// schedule is in its colleague record.
type calendars struct {
	handover map[string]bool // agent seats of teams whose handover is required
	team     map[string]clock.Schedule
	armed    map[string]clock.Time // member -> the period end a timer watches (not state)
	charged  map[string]clock.Time // member -> the period end its last handover violation was at
}

// colleague is what the engine keeps of one member of the world, looked
// up once instead of by its ID at every decision.
type colleague struct {
	npc    *worlds.NPC    // its behaviour as a simulated colleague; nil for an agent seat
	serves []int          // the numbers (org.State.QueueNum) of the queues npc serves, in its order
	sched  clock.Schedule // the schedule it works by (see worlds.World.MemberSchedule)
	shift  bool           // on a shift: asked to decide only within it
}

func newCalendars(w *worlds.World) calendars {
	c := calendars{handover: map[string]bool{}, team: map[string]clock.Schedule{}, armed: map[string]clock.Time{}, charged: map[string]clock.Time{}}
	required := map[string]bool{}
	for i := range w.Teams {
		t := &w.Teams[i]
		if t.Schedule != nil {
			c.team[t.ID] = t.Schedule
		}
		required[t.ID] = t.Handover == worlds.HandoverRequired
	}
	for i := range w.Members {
		if m := &w.Members[i]; required[m.Team] && m.NPC == nil {
			c.handover[m.ID] = true
		}
	}
	return c
}

// newColleagues makes the engine's record of each member of st, by
// org.Member.Num.
func newColleagues(w *worlds.World, st *org.State) []colleague {
	cols := make([]colleague, len(st.Members))
	for _, sm := range st.Members {
		c := &cols[sm.Num()]
		c.sched = &w.Calendar
		if m, ok := w.Member(sm.ID); ok {
			c.npc = m.NPC
			if m.NPC != nil {
				for _, q := range m.NPC.Serves {
					if qi, ok := st.QueueNum(q); ok { // a loaded world's are all queues
						c.serves = append(c.serves, qi)
					}
				}
			}
			if m.Schedule != nil {
				c.sched, c.shift = m.Schedule, m.OnShift
			}
		}
	}
	return cols
}

// col is the engine's record of member m.
func (e *Engine) col(m *org.Member) *colleague { return &e.cols[m.Num()] }

// schedule is the schedule member id works by.
func (e *Engine) schedule(id string) clock.Schedule {
	if m := e.st.Member(id); m != nil {
		return e.col(m).sched
	}
	return &e.cfg.World.Calendar
}

// teamSchedule is the schedule a team's tickets' arrivals and deadlines follow.
func (e *Engine) teamSchedule(team string) clock.Schedule {
	if s, ok := e.cals.team[team]; ok {
		return s
	}
	return &e.cfg.World.Calendar
}

// wakeAt is when pending member m may be asked next: once it is free and,
// for a member on a shift, within its shift.
func (e *Engine) wakeAt(m *org.Member) clock.Time {
	if c := e.col(m); c.shift {
		return c.sched.NextWorking(max(m.BusyUntil, e.now))
	}
	return m.BusyUntil
}

// watchShifts arms the handover check of the members an applied event
// makes hold work (or charged at a period's end, for the next period).
func (e *Engine) watchShifts(ev *events.Event, typed any) {
	var id string
	switch ev.Type {
	case payload.EvTaskClaimed, payload.EvTicketServed:
		id = ev.Actor
	case payload.EvTicketResolved: // with the next ticket served (format 5)
		if p, _ := payload.As[payload.TicketResolved](ev, typed); p.Next == "" {
			return
		}
		id = ev.Actor
	case payload.EvTaskHandedOff:
		p, _ := payload.As[payload.TaskHandedOff](ev, typed)
		id = p.To
	case payload.EvActionRejected:
		p, _ := payload.As[payload.ActionRejected](ev, typed)
		if p.Rule != worlds.RuleHandover || p.Index != -1 {
			return
		}
		id = ev.Actor
		e.cals.charged[id] = e.now
	default:
		return
	}
	if !e.cals.handover[id] {
		return
	}
	at := e.schedule(id).PeriodEnd(e.now)
	if at == clock.Time(1<<63-1) || e.cals.armed[id] == at {
		return
	}
	e.cals.armed[id] = at
	e.setTimer(at, timer{kind: timerShiftEnd, id: id})
}

// heldAtShiftEnd returns what member id holds undone, if a shift-end
// timer at at has a violation to record.
func (e *Engine) heldAtShiftEnd(id string, at clock.Time) []*org.Task {
	if e.cals.charged[id] == at && at != 0 {
		return nil
	}
	return e.st.Held(id)
}

// shiftEnded records the handover violation of a member still holding work
// at the end of its working period.
func (e *Engine) shiftEnded(id string) {
	held := e.heldAtShiftEnd(id, e.now)
	if len(held) == 0 {
		return
	}
	ids := make([]string, len(held))
	for i, t := range held {
		ids[i] = t.ID
	}
	wall := e.cfg.World.Calendar.Wall(e.now).Format("2006-01-02 15:04 MST")
	e.emit(payload.EvActionRejected, id, 0, payload.ActionRejected{Index: -1,
		Action: org.Action{Type: org.ActHandoff, Task: held[0].ID}, Kind: org.KindPolicy, Rule: worlds.RuleHandover,
		Reason: fmt.Sprintf("%s still holds %s at the end of its shift (%s); its team requires handing work over before then",
			id, strings.Join(ids, ", "), wall)})
}
