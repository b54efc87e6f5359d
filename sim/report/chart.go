package report

import (
	"bytes"
	"fmt"
	"html"
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

	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`, W, H, W, H)
	fmt.Fprintf(&b, `<title>%s</title>`, esc(c.Title))
	fmt.Fprintf(&b, `<text x="%d" y="18" font-size="13" font-weight="bold">%s</text>`, padLeft, esc(c.Title))
	// Grid, ticks and axes.
	yf := c.YFormat
	if yf == nil {
		yf = fmtNum
	}
	for _, t := range niceTicks(ylo, yhi, 5) {
		y := Y(t)
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#e5e5e5"/>`, num(padLeft), num(y), num(padLeft+pw), num(y))
		fmt.Fprintf(&b, `<text x="%d" y="%s" text-anchor="end" dominant-baseline="middle">%s</text>`, padLeft-6, num(y), esc(yf(t)))
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
		fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#555"/>`, num(x), num(padTop+ph), num(x), num(padTop+ph+4))
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`, num(x), num(padTop+ph+16), esc(t.Label))
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%s" stroke="#555"/>`, padLeft, padTop, padLeft, num(padTop+ph))
	fmt.Fprintf(&b, `<line x1="%d" y1="%s" x2="%s" y2="%s" stroke="#555"/>`, padLeft, num(padTop+ph), num(padLeft+pw), num(padTop+ph))
	fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`, num(padLeft+pw/2), num(padTop+ph+34), esc(c.XLabel))
	fmt.Fprintf(&b, `<text transform="translate(14 %s) rotate(-90)" text-anchor="middle">%s</text>`, num(padTop+ph/2), esc(c.YLabel))
	if c.Note != "" {
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle" fill="#888">%s</text>`, num(padLeft+pw/2), num(padTop+ph/2), esc(c.Note))
	}
	// Series.
	for i, s := range c.Series {
		col := Palette[i%len(Palette)]
		var pts strings.Builder
		for j, p := range s.Points {
			if c.Step && j > 0 {
				fmt.Fprintf(&pts, "%s,%s ", num(X(p.X)), num(Y(s.Points[j-1].Y)))
			}
			fmt.Fprintf(&pts, "%s,%s ", num(X(p.X)), num(Y(p.Y)))
		}
		fmt.Fprintf(&b, `<polyline class="series" data-series="%s" fill="none" stroke="%s" stroke-width="2"%s points="%s"><title>%s</title></polyline>`,
			esc(s.Name), col, dash(i), strings.TrimSpace(pts.String()), esc(s.Name))
		for _, p := range s.Points {
			if p.Err > 0 {
				fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-opacity="0.6"/>`, num(X(p.X)), num(Y(p.Y-p.Err)), num(X(p.X)), num(Y(p.Y+p.Err)), col)
			}
			if c.Markers {
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3.5" fill="%s"><title>%s: %s at %s</title></circle>`, num(X(p.X)), num(Y(p.Y)), col, esc(s.Name), esc(yf(p.Y)), esc(fmtNum(p.X)))
			}
		}
	}
	// Legend.
	if len(c.Series) > 1 {
		for i, s := range c.Series {
			x := padLeft + float64(i%4)*pw/4
			y := float64(H - legendH + 18*(i/4) + 2)
			fmt.Fprintf(&b, `<g class="legend"><line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="3"%s/><text x="%s" y="%s" dominant-baseline="middle">%s</text></g>`,
				num(x), num(y+6), num(x+22), num(y+6), Palette[i%len(Palette)], dash(i), num(x+28), num(y+6), esc(truncate(s.Name, 40)))
		}
	}
	b.WriteString(`</svg>`)
	_, err := w.Write(b.Bytes())
	return err
}

// dash is the stroke pattern of series i, so that lines lying on top of
// each other stay distinguishable.
func dash(i int) string {
	return [...]string{"", ` stroke-dasharray="7 3"`, ` stroke-dasharray="2 2"`, ` stroke-dasharray="9 3 2 3"`}[i%4]
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

// esc escapes text for HTML and XML alike (text and quoted attributes).
func esc(s string) string { return html.EscapeString(s) }

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
