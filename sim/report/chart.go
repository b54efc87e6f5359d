package report

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/corpsim/corpsim/clock"
)

// Palette is the colours of a chart's series, in order (Tableau 10).
var Palette = []string{"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

// Tick is a labelled position on an axis.
type Tick struct {
	V     float64
	Label string
}

// LineChart is a chart of one or more series against a common X axis, with
// axes, ticks, axis labels and a legend. Each series is drawn as exactly one
// <polyline class="series">, so a reader (or a test) can count them.
type LineChart struct {
	Title          string
	XLabel, YLabel string
	Width, Height  int // whole chart in pixels; 0: 900 × 260
	Series         []Series
	// XTicks makes the X axis' ticks for the range [lo, hi]; nil: round numbers.
	XTicks func(lo, hi float64) []Tick
	// YFormat labels the Y ticks; nil: the number.
	YFormat func(v float64) string
	Step    bool // draw each series as a step function (value holds until the next point)
	Markers bool // draw a circle at every point
	// YMin and YMax fix the Y range when YMax > YMin; else it fits the data and includes 0.
	YMin, YMax float64
	// Note is written in the plot area (e.g. why it is empty).
	Note string
	// Interruptions are marked as bands across the plot (X in the same
	// units as the series: simulated milliseconds on the time charts).
	Interruptions []Interruption
}

const (
	padLeft   = 64
	padRight  = 16
	padTop    = 30
	padBottom = 44
)

// WriteSVG writes the chart as a standalone <svg> element (with its
// namespace, so the same bytes are a valid .svg file and inline HTML).
func (c LineChart) WriteSVG(w io.Writer) error {
	W, H := c.Width, c.Height
	if W <= 0 {
		W = 900
	}
	if H <= 0 {
		H = 260
	}
	legendH := 0
	if len(c.Series) > 1 {
		legendH = 18 * ((len(c.Series) + 3) / 4)
	}
	H += legendH
	pw, ph := float64(W-padLeft-padRight), float64(H-padTop-padBottom-legendH)

	xlo, xhi := math.Inf(1), math.Inf(-1)
	ylo, yhi := math.Inf(1), math.Inf(-1)
	has := false
	for _, s := range c.Series {
		for _, p := range s.Points {
			has = true
			xlo, xhi = math.Min(xlo, p.X), math.Max(xhi, p.X)
			ylo, yhi = math.Min(ylo, p.Y-p.Err), math.Max(yhi, p.Y+p.Err)
		}
	}
	if !has {
		xlo, xhi, ylo, yhi = 0, 1, 0, 1
	}
	if c.YMax > c.YMin {
		ylo, yhi = c.YMin, c.YMax
	} else {
		ylo, yhi = math.Min(ylo, 0), math.Max(yhi, 0)
		if yhi == ylo {
			yhi = ylo + 1
		}
		yhi += (yhi - ylo) * 0.05
	}
	if xhi == xlo {
		xlo, xhi = xlo-1, xhi+1
	}
	if c.Markers { // keep the end markers off the axes
		pad := (xhi - xlo) * 0.04
		xlo, xhi = xlo-pad, xhi+pad
	}
	X := func(x float64) float64 { return padLeft + (x-xlo)/(xhi-xlo)*pw }
	Y := func(y float64) float64 { return padTop + ph - (y-ylo)/(yhi-ylo)*ph }

	v := lineView{W: W, H: H, Title: c.Title, Left: padLeft,
		YAxis:   svgLine{padLeft, padTop, padLeft, padTop + ph},
		XAxis:   svgLine{padLeft, padTop + ph, padLeft + pw, padTop + ph},
		XLabel:  svgLabel{padLeft + pw/2, padTop + ph + 34, c.XLabel},
		YLabelY: padTop + ph/2, YLabel: c.YLabel}
	// Grid, ticks and axes.
	yf := c.YFormat
	if yf == nil {
		yf = fmtNum
	}
	for _, t := range niceTicks(ylo, yhi, 5) {
		y := Y(t)
		v.YTicks = append(v.YTicks, svgTick{svgLine{padLeft, y, padLeft + pw, y}, padLeft - 6, y, yf(t), "end"})
	}
	var xt []Tick
	if c.XTicks != nil {
		xt = c.XTicks(xlo, xhi)
	} else {
		for _, v := range niceTicks(xlo, xhi, 8) {
			xt = append(xt, Tick{V: v, Label: fmtNum(v)})
		}
	}
	for _, t := range xt {
		x := X(t.V)
		v.XTicks = append(v.XTicks, svgTick{svgLine{x, padTop + ph, x, padTop + ph + 4}, x, padTop + ph + 16, t.Label, tickAnchor(x, t.Label, 0, float64(W))})
	}
	v.Bands, v.BandLegend = interruptionBands(c.Interruptions, func(t int64) float64 { return X(float64(t)) }, padLeft, padLeft+pw, padTop, ph, float64(W-padRight))
	if c.Note != "" {
		v.Note = &svgLabel{padLeft + pw/2, padTop + ph/2, c.Note}
	}
	// Series.
	for i, s := range c.Series {
		ls := lineSeries{Name: s.Name, Color: Palette[i%len(Palette)], Dash: dash(i)}
		var pts strings.Builder
		for j, p := range s.Points {
			if c.Step && j > 0 {
				fmt.Fprintf(&pts, "%s,%s ", num(X(p.X)), num(Y(s.Points[j-1].Y)))
			}
			fmt.Fprintf(&pts, "%s,%s ", num(X(p.X)), num(Y(p.Y)))
		}
		ls.Points = strings.TrimSpace(pts.String())
		for _, p := range s.Points {
			if p.Err > 0 {
				ls.Errs = append(ls.Errs, svgLine{X(p.X), Y(p.Y - p.Err), X(p.X), Y(p.Y + p.Err)})
			}
			if c.Markers {
				ls.Marks = append(ls.Marks, svgMark{X(p.X), Y(p.Y), s.Name + ": " + yf(p.Y) + " at " + fmtNum(p.X)})
			}
		}
		v.Series = append(v.Series, ls)
	}
	// Legend.
	if len(c.Series) > 1 {
		for i, s := range c.Series {
			x := padLeft + float64(i%4)*pw/4
			y := float64(H - legendH + 18*(i/4) + 2)
			v.Legend = append(v.Legend, legendItem{svgLine{x, y + 6, x + 22, y + 6}, Palette[i%len(Palette)], dash(i), x + 28, y + 6, truncate(s.Name, 40)})
		}
	}
	return execSVG(w, "line", v)
}

// tickAnchor is the text-anchor of an axis label at x: centred, unless
// that would cut it at the chart's edges lo or hi.
func tickAnchor(x float64, label string, lo, hi float64) string {
	half := float64(len([]rune(label))) * 6.5 / 2 // about 6.5px a character at 11px
	switch {
	case x+half > hi:
		return "end"
	case x-half < lo:
		return "start"
	}
	return "middle"
}

// interruptionStyle is the colour of each kind of interruption's band.
var interruptionStyle = map[string]string{InterruptOutage: "#e15759", InterruptLeave: "#b07aa1"}

// interruptionBands lays out the interruptions as bands between the
// plot's left and right edges (x0, x1) from top, h tall, and a legend
// ending at legendRight for the kinds present.
func interruptionBands(ivs []Interruption, X func(int64) float64, x0, x1, top, h, legendRight float64) ([]svgBand, []svgBandLegend) {
	var bands []svgBand
	seen := map[string]bool{}
	for _, iv := range ivs {
		a, b := max(X(iv.From), x0), min(X(iv.To), x1)
		if b < a+2 {
			b = min(a+2, x1)
			a = b - 2
		}
		bands = append(bands, svgBand{Class: "interruption " + iv.Kind, X: a, Y: top, W: b - a, H: h, Fill: interruptionStyle[iv.Kind], Tip: iv.Label})
		seen[iv.Kind] = true
	}
	var legend []svgBandLegend
	x := legendRight
	for _, k := range []string{InterruptLeave, InterruptOutage} { // drawn right to left
		if !seen[k] {
			continue
		}
		x -= 70
		legend = append(legend, svgBandLegend{X: x, TX: x + 16, Fill: interruptionStyle[k], Label: k})
	}
	return bands, legend
}

// dash is the stroke-dasharray of series i ("": solid), so that lines
// lying on top of each other stay distinguishable.
func dash(i int) string {
	return [...]string{"", "7 3", "2 2", "9 3 2 3"}[i%4]
}

// niceTicks returns about n round values (1, 2 or 5 × 10^k apart) in [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	if !(hi > lo) || n < 1 {
		return []float64{lo}
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	decimals := max(0, int(-math.Floor(math.Log10(step))))
	var out []float64
	for i := math.Ceil(lo / step); i*step <= hi+step*1e-9; i++ {
		// Round away the binary noise of i*step (0.6000000000000001).
		v, _ := strconv.ParseFloat(strconv.FormatFloat(i*step, 'f', decimals, 64), 64)
		out = append(out, v)
	}
	return out
}

// tickStep is a round span of simulated milliseconds that cuts span into at most 8 parts.
func tickStep(span float64) float64 {
	const s, m, h, d = 1000.0, 60 * 1000.0, 3600 * 1000.0, 24 * 3600 * 1000.0
	steps := []float64{s, 5 * s, 15 * s, 30 * s, m, 5 * m, 15 * m, 30 * m, h, 2 * h, 3 * h, 6 * h, 12 * h, d, 2 * d, 7 * d, 14 * d, 28 * d, 56 * d, 91 * d, 182 * d, 364 * d}
	step := steps[len(steps)-1]
	for _, st := range steps {
		if span/st <= 8 {
			step = st
			break
		}
	}
	for span/step > 8 {
		step *= 2
	}
	return step
}

// TimeTicks labels an X axis of simulated milliseconds with round spans of
// elapsed time since the session's start ("0", "6h", "2d", "2d12h").
func TimeTicks(lo, hi float64) []Tick {
	step := tickStep(hi - lo)
	var out []Tick
	for v := math.Ceil(lo/step) * step; v <= hi; v += step {
		out = append(out, Tick{V: v, Label: FormatElapsed(int64(v))})
	}
	return out
}

// WallTicks labels an X axis of simulated milliseconds with the world's
// wall clock: ticks at round times of day counted from midnight (in the
// calendar's location), labelled "Jan 02" (weeks apart), "Mon Jan 02"
// (days apart) or "Mon 15:04".
func WallTicks(cal *clock.Calendar) func(lo, hi float64) []Tick {
	return func(lo, hi float64) []Tick {
		step := tickStep(hi - lo)
		w := cal.Wall(clock.Time(lo))
		midnight := time.Date(w.Year(), w.Month(), w.Day(), 0, 0, 0, 0, w.Location())
		t0 := float64(midnight.Sub(cal.Start).Milliseconds())
		layout := "Mon 15:04"
		switch {
		case step >= 7*86_400_000:
			layout = "Jan 02"
		case step >= 86_400_000:
			layout = "Mon Jan 02"
		}
		var out []Tick
		for v := t0 + math.Ceil((lo-t0)/step)*step; v <= hi; v += step {
			out = append(out, Tick{V: v, Label: cal.Wall(clock.Time(v)).Format(layout)})
		}
		return out
	}
}

// FormatElapsed writes simulated milliseconds as a short span: "0", "45s",
// "30m", "6h", "1h30m", "2d", "2d12h".
func FormatElapsed(ms int64) string {
	if ms == 0 {
		return "0"
	}
	neg := ms < 0
	if neg {
		ms = -ms
	}
	d, rest := ms/86400000, ms%86400000
	hh, rest := rest/3600000, rest%3600000
	mm, rest := rest/60000, rest%60000
	ss := rest / 1000
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	parts := 0
	for _, u := range []struct {
		n    int64
		unit string
	}{{d, "d"}, {hh, "h"}, {mm, "m"}, {ss, "s"}} {
		if u.n > 0 && parts < 2 {
			b.WriteString(strconv.FormatInt(u.n, 10) + u.unit)
			parts++
		} else if parts > 0 {
			parts = 2 // only adjacent units
		}
	}
	if b.Len() == 0 || (neg && b.Len() == 1) {
		return strconv.FormatInt(ms, 10) + "ms"
	}
	return b.String()
}

// num formats a coordinate with one decimal at most.
func num(x float64) string {
	s := strconv.FormatFloat(x, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0")
}

// fmtNum formats a value for a label: integers plainly, others with up to 3 significant decimals.
func fmtNum(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// truncate shortens s to at most n runes, marking the cut with "…".
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
