package agents

import (
	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/org"
)

// What the baselines do at the end of a shift, in a world whose team
// requires handing held work over (org.ShiftView.Handover): they stop
// taking work handoverReserve before the shift ends, hand what they hold to
// the colleague of the next shift who may take it, and keep each work
// stint inside the shift, so that a turn comes before it ends. Where the
// observation shows no such shift, nothing here changes what they do.

// handoverReserve is how long before its shift ends a member hands its
// work over (within a shift, working time is wall time).
const handoverReserve = 30 * clock.Minute

// defaultStint is the engine's work span for a work action without "for".
const defaultStint = 2 * clock.Hour

// handingOver reports whether o's shift ends so soon that its member hands
// its work over now.
func handingOver(o org.Observation) bool {
	s := o.Shift
	return s != nil && s.Handover && s.Ends.Sub(o.Time) <= handoverReserve
}

// handoffs returns the hand-offs of every item o's member holds to the
// first colleague of the next shift whose role may take it and whose own
// working period ends after this one (in a team of one calendar there is
// none: everyone's day ends together, and the work stays). A step of a
// case in which another step is done goes back to its queue instead: a
// separation-of-duties rule may bar the colleague (one who did that other
// step), which the observation does not show, and the queue offers the
// step only to members the rules allow.
func handoffs(o org.Observation) []org.Action {
	var acts []org.Action
	for _, t := range o.Assigned {
		if caseUnderway(o, t) {
			acts = append(acts, org.Action{Type: org.ActHandoff, Task: t.ID})
			continue
		}
		for _, m := range o.Shift.Next {
			if m.Role == t.Role && m.Until > o.Shift.Ends {
				acts = append(acts, org.Action{Type: org.ActHandoff, Task: t.ID, To: m.ID})
				break
			}
		}
	}
	return acts
}

// handOver is the end of the turn of a member whose shift ends so soon that
// it hands its work over (handingOver): acts, the hand-offs, and a wait.
// Work that nobody may take over stays with the member (a violation at
// the end of the shift), who then looks again when the shift has ended, to
// go on with it in the next: a wait without an end would last until
// something else changed, and nothing may (the member's next shift
// beginning does not wake it).
func handOver(o org.Observation, acts []org.Action) []org.Action {
	moves := handoffs(o)
	wait := org.Action{Type: org.ActWait}
	if len(moves) < len(o.Assigned) {
		wait.Until = int64(o.Shift.Ends)
	}
	return append(append(acts, moves...), wait)
}

// caseUnderway reports whether t is a case step and another step of its
// case is done.
func caseUnderway(o org.Observation, t org.TaskView) bool {
	if t.Case == "" {
		return false
	}
	for _, c := range o.Cases {
		if c.ID != t.Case {
			continue
		}
		for _, d := range c.Done {
			if d != t.ID {
				return true
			}
		}
	}
	return false
}

// approvalWindow is how long before the handover reserve a member stops
// asking for approvals: a request still pending when the work is handed
// over was made by someone other than who completes the task, and the
// rubric counts a purchase only when its requester completed it.
const approvalWindow = clock.Hour

// approvalFits reports whether o's member may ask for an approval now and
// expect it decided before it hands its work over (always, where the
// observation shows no shift with handover).
func approvalFits(o org.Observation) bool {
	s := o.Shift
	return s == nil || !s.Handover || s.Ends.Sub(o.Time) > handoverReserve+approvalWindow
}

// shiftStint caps a work stint of want ("" for the engine's default) so
// that it ends inside the handover reserve of o's shift.
func shiftStint(o org.Observation, want string) string {
	s := o.Shift
	if s == nil || !s.Handover {
		return want
	}
	d := defaultStint
	if want != "" {
		if w, err := clock.ParseDuration(want, 8*clock.Hour); err == nil {
			d = w
		}
	}
	if left := s.Ends.Sub(o.Time) - handoverReserve; left < d {
		return left.String()
	}
	return want
}

// shiftPoll is how long a member holding work it cannot move sleeps at
// most before it looks again, in a team whose handover is required: a
// wait with an end is a sleep that nothing cuts short (an approval granted
// meanwhile included), and the member must also wake in time to hand its
// work over.
const shiftPoll = 15 * clock.Minute

// shiftWait is the wait that ends a turn of a member holding work it
// cannot move now: for at most shiftPoll, and never past the start of the
// handover reserve, so that it sees what it waits for soon and hands the
// work over in time; else until (0: until something changes).
func shiftWait(o org.Observation, until clock.Time) org.Action {
	s := o.Shift
	if s == nil || !s.Handover || len(o.Assigned) == 0 {
		return org.Action{Type: org.ActWait, Until: int64(until)}
	}
	by := min(s.Ends-clock.Time(handoverReserve), o.Time+clock.Time(shiftPoll))
	if until == 0 || by < until {
		until = by
	}
	if until <= o.Time {
		until = 0
	}
	return org.Action{Type: org.ActWait, Until: int64(until)}
}
