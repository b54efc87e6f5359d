package report

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
)

// SLARow is the tickets of one priority, queue or arrival stream and how
// they fared against their SLA.
type SLARow struct {
	Key      string
	Tickets  int
	InSLA    int // resolved (and verified) by the deadline
	Late     int // resolved after the deadline
	Overdue  int // still open past the deadline at the end
	Open     int // still open, deadline not yet passed
	Breaches int // sla.breached: open when the deadline passed (Late ones included)
	// Unverified counts resolutions the rubric does not count.
	Unverified int
	Share      float64 // InSLA / Tickets
}

// SLA is the tickets' SLA outcomes broken down three ways.
type SLA struct {
	ByPriority, ByQueue, ByStream []SLARow
	Tickets                       int
}

// streamUrgent names the tickets an urgent interruption brought rather
// than an arrival stream.
const streamUrgent = "(urgent interruptions)"

// sla tallies the tickets of the final state.
func sla(st *org.State) SLA {
	var out SLA
	acc := map[string]map[string]*SLARow{"p": {}, "q": {}, "s": {}}
	row := func(dim, key string) *SLARow {
		r := acc[dim][key]
		if r == nil {
			r = &SLARow{Key: key}
			acc[dim][key] = r
		}
		return r
	}
	for _, t := range st.AllTasks() {
		if t.Kind != org.KindTicket {
			continue
		}
		out.Tickets++
		stream := t.Arrival
		if stream == "" {
			stream = streamUrgent
		}
		for _, r := range []*SLARow{row("p", strconv.Itoa(t.Priority)), row("q", t.Queue), row("s", stream)} {
			r.Tickets++
			if t.Breached {
				r.Breaches++
			}
			switch {
			case t.Status == org.StatusDone && policies.Verify(st, t) != "":
				r.Unverified++
			case t.Status == org.StatusDone && (t.Deadline == 0 || t.DoneAt <= t.Deadline):
				r.InSLA++
			case t.Status == org.StatusDone:
				r.Late++
			case t.Deadline > 0 && st.Now > t.Deadline:
				r.Overdue++
			default:
				r.Open++
			}
		}
	}
	rows := func(dim string, byNum bool) []SLARow {
		var rs []SLARow
		for _, r := range acc[dim] { // order: sorted below
			if r.Tickets > 0 {
				r.Share = float64(r.InSLA) / float64(r.Tickets)
			}
			rs = append(rs, *r)
		}
		slices.SortFunc(rs, func(a, b SLARow) int {
			if byNum { // highest priority first
				x, _ := strconv.Atoi(a.Key)
				y, _ := strconv.Atoi(b.Key)
				return cmp.Compare(y, x)
			}
			return cmp.Compare(a.Key, b.Key)
		})
		return rs
	}
	out.ByPriority, out.ByQueue, out.ByStream = rows("p", true), rows("q", false), rows("s", false)
	return out
}
