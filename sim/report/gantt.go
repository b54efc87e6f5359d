package report

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Bar is a run of a Gantt lane in pixels: intervals closer than a pixel are
// merged into one bar, which says how many it holds.
type Bar struct {
	X0, X1 int   // pixels from the timeline's left edge, X1 > X0
	Busy   int64 // simulated milliseconds covered by the intervals merged
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
	iv = append([]Interval(nil), iv...)
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
			b.Busy += x.To - x.From
			b.N++
			if len(b.Labels) < maxBarLabels && !contains(b.Labels, x.Label) {
				b.Labels = append(b.Labels, x.Label)
			}
			continue
		}
		out = append(out, Bar{X0: x0, X1: x1, Busy: x.To - x.From, N: 1, Labels: []string{x.Label}})
	}
	return out
}

func (b *Builder) gantt(end int64) Gantt {
	g := Gantt{End: end, Width: b.o.Width - ganttLabelW - 20}
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
				c.row.Busy[l] += x.To - x.From
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
		g.Note += fmt.Sprintf("%d members never held a task or went on leave", idle)
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

var laneStyle = [lanes]struct {
	name       string
	y, h       int
	fill, more string
}{
	LaneClaim: {"held", 2, 16, "#c6dbef", ""},
	LaneWork:  {"work", 6, 8, "#2171b5", ""},
	LaneLeave: {"leave", 2, 16, "#bdbdbd", ` fill-opacity="0.8" stroke="#737373" stroke-dasharray="2 2"`},
}

// WriteSVG draws the Gantt chart as a standalone <svg> element.
func (g Gantt) WriteSVG(w io.Writer) error {
	W := ganttLabelW + g.Width + 20
	H := ganttTop + ganttRowH*max(len(g.Rows), 1) + 40
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart gantt" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`, W, H, W, H)
	b.WriteString(`<title>Work per member</title><text x="10" y="18" font-size="13" font-weight="bold">Work per member</text>`)
	for i, l := range laneStyle {
		x := 220 + i*90
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="%d" fill="%s"%s/><text x="%d" y="18">%s</text>`, x, 8+l.y/2, l.h, l.fill, l.more, x+18, l.name)
	}
	x0 := ganttLabelW
	bottom := ganttTop + ganttRowH*max(len(g.Rows), 1)
	ticks := g.Ticks
	if ticks == nil {
		ticks = TimeTicks(0, float64(max(g.End, 1)))
	}
	for _, t := range ticks {
		x := float64(x0) + t.V/float64(max(g.End, 1))*float64(g.Width)
		fmt.Fprintf(&b, `<line x1="%s" y1="%d" x2="%s" y2="%d" stroke="#eee"/>`, num(x), ganttTop-4, num(x), bottom)
		fmt.Fprintf(&b, `<text x="%s" y="%d" text-anchor="middle">%s</text>`, num(x), bottom+14, esc(t.Label))
	}
	fmt.Fprintf(&b, `<text x="%s" y="%d" text-anchor="middle">%s</text>`, num(float64(x0)+float64(g.Width)/2), bottom+30, esc(timeLabel))
	if len(g.Rows) == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#888">nobody held a task or went on leave</text>`, x0+10, ganttTop+14)
	}
	for i, r := range g.Rows {
		y := ganttTop + i*ganttRowH
		if i%2 == 1 {
			fmt.Fprintf(&b, `<rect x="0" y="%d" width="%d" height="%d" fill="#f7f7f7"/>`, y, W, ganttRowH)
		}
		fmt.Fprintf(&b, `<text x="6" y="%d" dominant-baseline="middle">%s<title>%s (%s): work %s, held %s, leave %s</title></text>`,
			y+ganttRowH/2, esc(truncate(r.Member+" · "+r.Role, 24)), esc(r.Member), esc(r.Role),
			FormatElapsed(r.Busy[LaneWork]), FormatElapsed(r.Busy[LaneClaim]), FormatElapsed(r.Busy[LaneLeave]))
		for l, bars := range r.Bars {
			st := laneStyle[l]
			for _, bar := range bars {
				fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"%s><title>%s</title></rect>`,
					x0+bar.X0, y+st.y, bar.X1-bar.X0, st.h, st.fill, st.more, esc(barTitle(r.Member, st.name, bar)))
			}
		}
	}
	b.WriteString(`</svg>`)
	_, err := w.Write(b.Bytes())
	return err
}

func barTitle(member, lane string, bar Bar) string {
	s := member + " " + lane + ": " + strings.Join(bar.Labels, ", ")
	if bar.N > len(bar.Labels) {
		s += fmt.Sprintf(" (+%d more)", bar.N-len(bar.Labels))
	}
	return s + ", " + FormatElapsed(bar.Busy)
}
