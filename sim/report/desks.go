package report

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/sim/analyze"
)

// desk is what an approver had waiting on them over the session.
type desk struct {
	waiting   int
	series    step
	peak      int
	routed    int   // request steps that came to them
	decided   int   // of those, decided by them
	escalated int   // moved on to someone else
	work      int64 // working milliseconds requests waited on them
	longest   int64 // the longest single wait, working milliseconds
}

// DeskRow is one approver's desk: what came to it, what it decided and how
// long requests waited there (working time).
type DeskRow struct {
	Approver, Role      string
	Routed, Decided     int
	Escalated           int
	WaitingAtEnd, Peak  int
	Waited, Longest     string // working time, e.g. "2d3h"
	WaitedMS, LongestMS int64
}

func (b *Builder) deskFor(approver string) *desk {
	d := b.desks[approver]
	if d == nil {
		d = &desk{}
		d.series.set(0, 0)
		b.desks[approver] = d
	}
	return d
}

// toDesk puts pending request r on approver's desk at t.
func (b *Builder) toDesk(r, approver string, t int64) {
	if approver == "" {
		return
	}
	d := b.deskFor(approver)
	d.waiting++
	d.routed++
	d.peak = max(d.peak, d.waiting)
	d.series.set(t, float64(d.waiting))
	b.deskOf[r], b.since[r] = approver, t
}

// offDesk takes request r off the desk it waits on at t and returns that desk.
func (b *Builder) offDesk(r string, t int64) *desk {
	approver, ok := b.deskOf[r]
	if !ok {
		return nil
	}
	d := b.desks[approver]
	d.waiting--
	d.series.set(t, float64(d.waiting))
	w := int64(b.w.Calendar.WorkBetween(clock.Time(b.since[r]), clock.Time(t)))
	d.work += w
	d.longest = max(d.longest, w)
	delete(b.deskOf, r)
	delete(b.since, r)
	return d
}

func (b *Builder) deskDecided(r, by string, t int64) {
	if d := b.offDesk(r, t); d != nil && b.desks[by] == d {
		d.decided++
	}
}

func (b *Builder) deskEscalated(r string, t int64) {
	if d := b.offDesk(r, t); d != nil {
		d.escalated++
	}
}

// maxDeskSeries is how many approvers the approvals chart draws a line for.
const maxDeskSeries = 7

// deskRows closes the desks at end: requests still waiting count to then.
func (b *Builder) deskRows(end int64) []DeskRow {
	day := b.w.Calendar.DayLength()
	var rows []DeskRow
	for _, id := range sortedKeys(b.desks) {
		d := b.desks[id]
		work, longest := d.work, d.longest
		for _, r := range sortedKeys(b.deskOf) { // still waiting at the end
			if b.deskOf[r] == id {
				w := int64(b.w.Calendar.WorkBetween(clock.Time(b.since[r]), clock.Time(end)))
				work += w
				longest = max(longest, w)
			}
		}
		role := ""
		if m := b.st.Member(id); m != nil {
			role = m.Role
		}
		rows = append(rows, DeskRow{Approver: id, Role: role, Routed: d.routed, Decided: d.decided, Escalated: d.escalated,
			WaitingAtEnd: d.waiting, Peak: d.peak, WaitedMS: work, LongestMS: longest,
			Waited: analyze.FormatWork(clock.Duration(work), day), Longest: analyze.FormatWork(clock.Duration(longest), day)})
	}
	slices.SortStableFunc(rows, func(a, c DeskRow) int {
		return cmp.Or(cmp.Compare(c.WaitedMS, a.WaitedMS), cmp.Compare(c.Routed, a.Routed), cmp.Compare(a.Approver, c.Approver))
	})
	return rows
}

// approvalsChart draws the requests waiting in all and on the desks of the
// approvers they waited on longest.
func (b *Builder) approvalsChart(rows []DeskRow, end int64) (LineChart, string) {
	series := []Series{{Name: "all approvers", Points: b.series(&b.approvals, end)}}
	note := ""
	for i, r := range rows {
		if i == maxDeskSeries {
			note = fmt.Sprintf("the approvals chart draws the %d approvers requests waited on longest; %d more in the table", maxDeskSeries, len(rows)-maxDeskSeries)
			break
		}
		series = append(series, Series{Name: "on " + r.Approver + "'s desk", Points: b.series(&b.desks[r.Approver].series, end)})
	}
	c := b.timeChart("Approval requests waiting, by approver", "requests waiting", series)
	return c, note
}

// Interruption is an outage of a queue or a member's leave, as the time
// charts mark it: a band from From to To (simulated milliseconds).
type Interruption struct {
	Kind     string // "outage" or "leave"
	From, To int64
	Who      string // the queue or the member
	Label    string
}

// Interruption kinds.
const (
	InterruptOutage = "outage"
	InterruptLeave  = "leave"
)

func (b *Builder) outageStarted(t int64, p payload.QueueDown) {
	label := fmt.Sprintf("outage: queue %s down", p.Queue)
	if p.Note != "" {
		label += " (" + p.Note + ")"
	}
	b.downSince[p.Queue] = len(b.interruptions)
	b.interruptions = append(b.interruptions, Interruption{Kind: InterruptOutage, From: t, To: int64(p.Until), Who: p.Queue, Label: label})
}

func (b *Builder) leaveStarted(member string, t int64, p payload.MemberLeft) {
	label := "leave: " + member + " away"
	if p.Delegate != "" {
		label += ", " + p.Delegate + " stands in"
	}
	if p.Note != "" {
		label += " (" + p.Note + ")"
	}
	b.awaySince[member] = len(b.interruptions)
	b.interruptions = append(b.interruptions, Interruption{Kind: InterruptLeave, From: t, To: int64(p.Until), Who: member, Label: label})
}

func (b *Builder) interruptionEnded(open map[string]int, key string, t int64) {
	if i, ok := open[key]; ok {
		b.interruptions[i].To = t
		delete(open, key)
	}
}

// maxInterruptions bounds the bands a chart draws.
const maxInterruptions = 200

// interruptionMarks returns the interruptions to draw, those under way at
// end cut there, with a note when some were left out.
func (b *Builder) interruptionMarks(end int64) ([]Interruption, string) {
	out := slices.Clone(b.interruptions)
	for i := range out {
		out[i].To = min(max(out[i].To, out[i].From), end)
		out[i].Label += ", " + b.w.Calendar.Wall(clock.Time(out[i].From)).Format("Mon Jan 02 15:04") + " to " +
			b.w.Calendar.Wall(clock.Time(out[i].To)).Format("Mon Jan 02 15:04")
	}
	note := ""
	if len(out) > maxInterruptions {
		// Keep the longest, in time order.
		idx := make([]int, len(out))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, c int) int { return cmp.Compare(out[c].To-out[c].From, out[a].To-out[a].From) })
		idx = idx[:maxInterruptions]
		slices.Sort(idx)
		kept := make([]Interruption, 0, maxInterruptions)
		for _, i := range idx {
			kept = append(kept, out[i])
		}
		note = fmt.Sprintf("%d of %d interruptions marked on the time charts (the longest); %d omitted", maxInterruptions, len(out), len(out)-maxInterruptions)
		out = kept
	}
	return out, note
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m { // order: sorted below
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
