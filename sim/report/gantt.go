package report

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/sim/analyze"
)

// Bar is a run of a Gantt lane in pixels: intervals closer than a pixel are
// merged into one bar, which says how many it holds.
type Bar struct {
	X0, X1 int   // pixels from the timeline's left edge, X1 > X0
	Busy   int64 // working time within the intervals merged (Interval.Work), in milliseconds
	N      int   // intervals merged
	Labels []string
}

// GanttRow is one member's lanes.
type GanttRow struct {
	Member string
	Role   string
	Busy   [lanes]int64 // total simulated milliseconds per lane
	Bars   [lanes][]Bar
}

// Gantt is the chart of what each member held, worked on and was away for.
type Gantt struct {
	End   int64 // simulated milliseconds at the right edge
	Width int   // timeline width in pixels
	Rows  []GanttRow
	Gap   int    // bars less than Gap+1 pixels apart were merged (0: only touching ones)
	Ticks []Tick // of the time axis; nil: elapsed time (TimeTicks)
	Note  string // what was left out
	// Interruptions are marked as bands across every row.
	Interruptions []Interruption
	// DayLen is the calendar's working day, in milliseconds: the tooltips'
	// working times count days of it.
	DayLen int64
}

// maxBarLabels is how many task names a merged bar lists in its tooltip.
const maxBarLabels = 3

// Coalesce maps intervals of a timeline of end milliseconds drawn width
// pixels wide to bars, merging intervals that touch or overlap once drawn:
// a lane never has more than width bars, however many intervals it had.
func Coalesce(iv []Interval, end int64, width int) []Bar { return coalesce(iv, end, width, 0) }

// coalesce is Coalesce that also merges bars less than gap pixels apart.
func coalesce(iv []Interval, end int64, width, gap int) []Bar {
	if end <= 0 {
		end = 1
	}
	iv = slices.Clone(iv)
	sort.SliceStable(iv, func(i, j int) bool { return iv[i].From < iv[j].From })
	px := func(t int64) int { return int(float64(t) / float64(end) * float64(width)) }
	var out []Bar
	for _, x := range iv {
		x0 := min(px(x.From), width-1)
		x1 := max(px(x.To)+1, x0+1)
		x1 = min(x1, width)
		if n := len(out); n > 0 && x0 <= out[n-1].X1+gap {
			b := &out[n-1]
			b.X1 = max(b.X1, x1)
			b.Busy += x.Work
			b.N++
			if len(b.Labels) < maxBarLabels && !slices.Contains(b.Labels, x.Label) {
				b.Labels = append(b.Labels, x.Label)
			}
			continue
		}
		out = append(out, Bar{X0: x0, X1: x1, Busy: x.Work, N: 1, Labels: []string{x.Label}})
	}
	return out
}

func (b *Builder) gantt(end int64) Gantt {
	g := Gantt{End: end, Width: b.o.Width - ganttLabelW - 20, DayLen: int64(b.w.Calendar.DayLength())}
	g.Ticks = WallTicks(&b.w.Calendar)(0, float64(max(end, 1)))
	type cand struct {
		row   GanttRow
		total int64
		ivs   *[lanes][]Interval
	}
	var cands []cand
	for _, m := range b.st.Members {
		sp := b.spans[m.ID]
		if sp == nil {
			continue
		}
		c := cand{row: GanttRow{Member: m.ID, Role: m.Role}, ivs: sp}
		for l := range lanes {
			for _, x := range sp[l] {
				c.row.Busy[l] += x.Work
			}
		}
		// Relevance: work counts most, then holding, then leave.
		c.total = 4*c.row.Busy[LaneWork] + 2*c.row.Busy[LaneClaim] + c.row.Busy[LaneLeave]
		cands = append(cands, c)
	}
	active := len(cands)
	if len(cands) > b.o.MaxGanttRows {
		sort.SliceStable(cands, func(i, j int) bool { return cands[i].total > cands[j].total })
		cands = cands[:b.o.MaxGanttRows]
		sort.SliceStable(cands, func(i, j int) bool { return cands[i].row.Member < cands[j].row.Member })
		g.Note = fmt.Sprintf("%d of %d active members shown (those with the most work); %d omitted", len(cands), active, active-len(cands))
	}
	if idle := len(b.st.Members) - active; idle > 0 {
		if g.Note != "" {
			g.Note += "; "
		}
		if idle == 1 {
			g.Note += "1 member never held a task or went on leave"
		} else {
			g.Note += fmt.Sprintf("%d members never held a task or went on leave", idle)
		}
	}
	// Merge bars closer than a pixel; should the chart still have more than
	// MaxGanttBars bars, merge across ever wider gaps until it has not.
	for gap := 0; ; gap = 2*gap + 1 {
		g.Rows, g.Gap = g.Rows[:0], gap
		bars := 0
		for _, c := range cands {
			for l := range lanes {
				c.row.Bars[l] = coalesce(c.ivs[l], end, g.Width, gap)
				bars += len(c.row.Bars[l])
			}
			g.Rows = append(g.Rows, c.row)
		}
		if bars <= b.o.MaxGanttBars || gap > g.Width {
			break
		}
	}
	if g.Gap > 0 {
		if g.Note != "" {
			g.Note += "; "
		}
		g.Note += fmt.Sprintf("bars less than %dpx apart merged to keep the chart small", g.Gap+1)
	}
	return g
}

const (
	ganttLabelW = 150
	ganttRowH   = 20
	ganttTop    = 48
)

var laneStyle = [lanes]ganttLane{
	LaneClaim: {Name: "held", Y: 2, H: 16, Fill: "#c6dbef"},
	LaneWork:  {Name: "work", Y: 6, H: 8, Fill: "#2171b5"},
	LaneLeave: {Name: "leave", Y: 2, H: 16, Fill: "#bdbdbd", Opacity: "0.8", Stroke: "#737373", Dasharray: "2 2"},
}

// WriteSVG draws the Gantt chart as a standalone <svg> element.
func (g Gantt) WriteSVG(w io.Writer) error {
	W := ganttLabelW + g.Width + 20
	H := ganttTop + ganttRowH*max(len(g.Rows), 1) + 40
	v := ganttView{W: W, H: H, RowH: ganttRowH}
	for i, l := range laneStyle {
		x := 220 + i*90
		v.Legend = append(v.Legend, ganttLegend{X: x, Y: 8 + l.Y/2, TX: x + 18, Lane: l})
	}
	x0 := ganttLabelW
	bottom := ganttTop + ganttRowH*max(len(g.Rows), 1)
	ticks := g.Ticks
	if ticks == nil {
		ticks = TimeTicks(0, float64(max(g.End, 1)))
	}
	for _, t := range ticks {
		x := float64(x0) + t.V/float64(max(g.End, 1))*float64(g.Width)
		v.Ticks = append(v.Ticks, svgTick{svgLine{x, ganttTop - 4, x, float64(bottom)}, x, float64(bottom + 14), t.Label, tickAnchor(x, t.Label, 0, float64(W))})
	}
	X := func(t int64) float64 { return float64(x0) + float64(t)/float64(max(g.End, 1))*float64(g.Width) }
	v.Bands, v.BandLegend = interruptionBands(g.Interruptions, X, float64(x0), float64(x0+g.Width), ganttTop, float64(bottom-ganttTop), float64(W-10))
	v.AxisLabel = svgLabel{float64(x0) + float64(g.Width)/2, float64(bottom + 30), timeLabel}
	if len(g.Rows) == 0 {
		v.Empty = &svgLabel{float64(x0 + 10), ganttTop + 14, "nobody held a task or went on leave"}
	}
	for i, r := range g.Rows {
		y := ganttTop + i*ganttRowH
		rv := ganttRowView{Y: y, LabelY: y + ganttRowH/2, Stripe: i%2 == 1,
			Label: truncate(r.Member+" · "+r.Role, 24),
			Tip: fmt.Sprintf("%s (%s): work %s, held %s, leave %s", r.Member, r.Role,
				g.work(r.Busy[LaneWork]), g.work(r.Busy[LaneClaim]), g.work(r.Busy[LaneLeave]))}
		for l, bars := range r.Bars {
			st := laneStyle[l]
			for _, bar := range bars {
				rv.Bars = append(rv.Bars, ganttBar{X: x0 + bar.X0, Y: y + st.Y, W: bar.X1 - bar.X0, Lane: st, Tip: barTitle(r.Member, st.Name, bar, g.work)})
			}
		}
		v.Rows = append(v.Rows, rv)
	}
	return execSVG(w, "gantt", v)
}

func barTitle(member, lane string, bar Bar, work func(int64) string) string {
	s := member + " " + lane + ": " + strings.Join(bar.Labels, ", ")
	if bar.N > len(bar.Labels) {
		s += fmt.Sprintf(" (+%d more)", bar.N-len(bar.Labels))
	}
	return s + ", " + work(bar.Busy)
}

// work writes milliseconds of working time for people, in working days of
// g's calendar ("2d1h30m", "45m").
func (g *Gantt) work(ms int64) string {
	return analyze.FormatWork(clock.Duration(ms), clock.Duration(g.DayLen))
}
