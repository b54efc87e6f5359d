package report

import (
	"bytes"
	"html/template"
	"io"
	"strings"
)

// The charts' SVG is written by html/template, which escapes every name,
// title and label by its context (text, RCDATA <title>, attribute): the
// chart code computes positions and strings, the templates lay them out.
// The output is valid inline HTML and, with its namespace, a standalone
// .svg file.

// svgLine is a line segment, in pixels.
type svgLine struct{ X1, Y1, X2, Y2 float64 }

// svgTick is a tick mark or grid line and its label.
type svgTick struct {
	svgLine
	TX, TY float64
	Label  string
	Anchor string // text-anchor: middle, start or end
}

// svgBand is an interruption's band across a plot.
type svgBand struct {
	Class      string
	X, Y, W, H float64
	Fill, Tip  string
}

// svgBandLegend is the legend entry of a kind of interruption.
type svgBandLegend struct {
	X, TX       float64
	Fill, Label string
}

// svgLabel is a text at a position.
type svgLabel struct {
	X, Y float64
	Text string
}

// svgMark is a point marker with its tooltip.
type svgMark struct {
	X, Y float64
	Tip  string
}

// lineSeries is a LineChart series as drawn.
type lineSeries struct {
	Name, Color, Dash string
	Points            string // the polyline's points attribute
	Errs              []svgLine
	Marks             []svgMark
}

// legendItem is an entry of a LineChart's legend.
type legendItem struct {
	svgLine
	Color, Dash string
	TX, TY      float64
	Text        string
}

// lineView is a LineChart as drawn.
type lineView struct {
	W, H           int
	Title          string
	Left           int
	YTicks, XTicks []svgTick
	YAxis, XAxis   svgLine
	XLabel         svgLabel
	YLabelY        float64 // the rotated Y label's centre
	YLabel         string
	Note           *svgLabel
	Series         []lineSeries
	Legend         []legendItem
	Bands          []svgBand
	BandLegend     []svgBandLegend
}

// ganttLane is a lane's style, for its legend and its bars.
type ganttLane struct {
	Name, Fill                 string
	Y, H                       int
	Opacity, Stroke, Dasharray string // "" when not set
}

// ganttLegend is a lane's entry in the legend.
type ganttLegend struct {
	X, Y, TX int
	Lane     ganttLane
}

// ganttBar is a bar as drawn.
type ganttBar struct {
	X, Y, W int
	Lane    ganttLane
	Tip     string
}

// ganttRowView is a member's row as drawn.
type ganttRowView struct {
	Y, LabelY  int
	Stripe     bool
	Label, Tip string
	Bars       []ganttBar
}

// ganttView is a Gantt chart as drawn.
type ganttView struct {
	W, H       int
	RowH       int
	Legend     []ganttLegend
	Ticks      []svgTick
	AxisLabel  svgLabel
	Empty      *svgLabel
	Rows       []ganttRowView
	Bands      []svgBand
	BandLegend []svgBandLegend
}

// dagLegend is an entry of the DAG's legend.
type dagLegend struct {
	X, TX                      int
	Fill, Stroke, Width, Label string
}

// dagBand is a project's band.
type dagBand struct {
	Y, H, LabelY int
	Stripe       bool
	Label        string
}

// dagEdge is a dependency as drawn: a cubic curve.
type dagEdge struct {
	X1, Y1, MX, X2, Y2 int
	Stroke, Width      string
}

// dagNodeView is a task as drawn.
type dagNodeView struct {
	Class, Tip                string
	X, Y, TX, TY              int
	Fill, Stroke, StrokeWidth string
	Label                     string
}

// dagView is the DAG as drawn.
type dagView struct {
	W, H         int
	NodeW, NodeH int
	Legend       []dagLegend
	Empty        *svgLabel
	Bands        []dagBand
	Edges        []dagEdge
	Nodes        []dagNodeView
}

var svgTemplates = template.Must(template.New("svg").Funcs(template.FuncMap{"num": num}).Parse(strings.Join([]string{
	`{{define "line"}}`,
	`<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" font-family="sans-serif" font-size="11">`,
	`<title>{{.Title}}</title><text x="{{.Left}}" y="18" font-size="13" font-weight="bold">{{.Title}}</text>`,
	`{{range .YTicks}}<line x1="{{num .X1}}" y1="{{num .Y1}}" x2="{{num .X2}}" y2="{{num .Y2}}" stroke="#e5e5e5"/>`,
	`<text x="{{num .TX}}" y="{{num .TY}}" text-anchor="end" dominant-baseline="middle">{{.Label}}</text>{{end}}`,
	`{{range .XTicks}}<line x1="{{num .X1}}" y1="{{num .Y1}}" x2="{{num .X2}}" y2="{{num .Y2}}" stroke="#555"/>`,
	`<text x="{{num .TX}}" y="{{num .TY}}" text-anchor="{{.Anchor}}">{{.Label}}</text>{{end}}`,
	`{{template "bands" .}}`,
	`{{with .YAxis}}<line x1="{{num .X1}}" y1="{{num .Y1}}" x2="{{num .X2}}" y2="{{num .Y2}}" stroke="#555"/>{{end}}`,
	`{{with .XAxis}}<line x1="{{num .X1}}" y1="{{num .Y1}}" x2="{{num .X2}}" y2="{{num .Y2}}" stroke="#555"/>{{end}}`,
	`{{with .XLabel}}<text x="{{num .X}}" y="{{num .Y}}" text-anchor="middle">{{.Text}}</text>{{end}}`,
	`<text transform="translate(14 {{num .YLabelY}}) rotate(-90)" text-anchor="middle">{{.YLabel}}</text>`,
	`{{with .Note}}<text x="{{num .X}}" y="{{num .Y}}" text-anchor="middle" fill="#888">{{.Text}}</text>{{end}}`,
	`{{range .Series}}{{$s := .}}`,
	`<polyline class="series" data-series="{{.Name}}" fill="none" stroke="{{.Color}}" stroke-width="2"{{with .Dash}} stroke-dasharray="{{.}}"{{end}} points="{{.Points}}"><title>{{.Name}}</title></polyline>`,
	`{{range .Errs}}<line x1="{{num .X1}}" y1="{{num .Y1}}" x2="{{num .X2}}" y2="{{num .Y2}}" stroke="{{$s.Color}}" stroke-opacity="0.6"/>{{end}}`,
	`{{range .Marks}}<circle cx="{{num .X}}" cy="{{num .Y}}" r="3.5" fill="{{$s.Color}}"><title>{{.Tip}}</title></circle>{{end}}`,
	`{{end}}`,
	`{{range .Legend}}<g class="legend"><line x1="{{num .X1}}" y1="{{num .Y1}}" x2="{{num .X2}}" y2="{{num .Y2}}" stroke="{{.Color}}" stroke-width="3"{{with .Dash}} stroke-dasharray="{{.}}"{{end}}/>`,
	`<text x="{{num .TX}}" y="{{num .TY}}" dominant-baseline="middle">{{.Text}}</text></g>{{end}}`,
	`</svg>{{end}}`,

	`{{define "bands"}}{{range .Bands}}<rect class="{{.Class}}" x="{{num .X}}" y="{{num .Y}}" width="{{num .W}}" height="{{num .H}}" fill="{{.Fill}}" fill-opacity="0.18" stroke="{{.Fill}}" stroke-opacity="0.6" stroke-width="1"><title>{{.Tip}}</title></rect>{{end}}`,
	`{{range .BandLegend}}<g class="interruption-legend"><rect x="{{num .X}}" y="8" width="12" height="12" fill="{{.Fill}}" fill-opacity="0.35" stroke="{{.Fill}}"/><text x="{{num .TX}}" y="18">{{.Label}}</text></g>{{end}}{{end}}`,

	`{{define "lane"}}{{with .Opacity}} fill-opacity="{{.}}"{{end}}{{with .Stroke}} stroke="{{.}}"{{end}}{{with .Dasharray}} stroke-dasharray="{{.}}"{{end}}{{end}}`,

	`{{define "gantt"}}`,
	`<svg xmlns="http://www.w3.org/2000/svg" class="chart gantt" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" font-family="sans-serif" font-size="11">`,
	`<title>Work per member</title><text x="10" y="18" font-size="13" font-weight="bold">Work per member</text>`,
	`{{range .Legend}}<rect x="{{.X}}" y="{{.Y}}" width="14" height="{{.Lane.H}}" fill="{{.Lane.Fill}}"{{template "lane" .Lane}}/><text x="{{.TX}}" y="18">{{.Lane.Name}}</text>{{end}}`,
	`{{range .Ticks}}<line x1="{{num .X1}}" y1="{{num .Y1}}" x2="{{num .X2}}" y2="{{num .Y2}}" stroke="#eee"/>`,
	`<text x="{{num .TX}}" y="{{num .TY}}" text-anchor="{{.Anchor}}">{{.Label}}</text>{{end}}`,
	`{{with .AxisLabel}}<text x="{{num .X}}" y="{{num .Y}}" text-anchor="middle">{{.Text}}</text>{{end}}`,
	`{{with .Empty}}<text x="{{num .X}}" y="{{num .Y}}" fill="#888">{{.Text}}</text>{{end}}`,
	`{{range .Rows}}{{if .Stripe}}<rect x="0" y="{{.Y}}" width="{{$.W}}" height="{{$.RowH}}" fill="#f7f7f7"/>{{end}}`,
	`<text x="6" y="{{.LabelY}}" dominant-baseline="middle">{{.Label}}<title>{{.Tip}}</title></text>`,
	`{{range .Bars}}<rect x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.Lane.H}}" fill="{{.Lane.Fill}}"{{template "lane" .Lane}}><title>{{.Tip}}</title></rect>{{end}}`,
	`{{end}}{{template "bands" .}}</svg>{{end}}`,

	`{{define "dag"}}`,
	`<svg xmlns="http://www.w3.org/2000/svg" class="chart dag" width="{{.W}}" height="{{.H}}" viewBox="0 0 {{.W}} {{.H}}" font-family="sans-serif" font-size="11">`,
	`<title>Task dependencies</title><text x="10" y="18" font-size="13" font-weight="bold">Task dependencies</text>`,
	`{{range .Legend}}<rect x="{{.X}}" y="8" width="14" height="12" fill="{{.Fill}}" stroke="{{.Stroke}}" stroke-width="{{.Width}}"/><text x="{{.TX}}" y="18">{{.Label}}</text>{{end}}`,
	`{{with .Empty}}<text x="{{num .X}}" y="{{num .Y}}" fill="#888">{{.Text}}</text>{{end}}`,
	`{{range .Bands}}{{if .Stripe}}<rect x="0" y="{{.Y}}" width="{{$.W}}" height="{{.H}}" fill="#fafafa"/>{{end}}`,
	`<text x="10" y="{{.LabelY}}" font-weight="bold" fill="#555">{{.Label}}</text>{{end}}`,
	`{{range .Edges}}<path d="M{{.X1}} {{.Y1}} C{{.MX}} {{.Y1}} {{.MX}} {{.Y2}} {{.X2}} {{.Y2}}" fill="none" stroke="{{.Stroke}}" stroke-width="{{.Width}}"/>{{end}}`,
	`{{range .Nodes}}<g class="{{.Class}}"><title>{{.Tip}}</title>`,
	`<rect x="{{.X}}" y="{{.Y}}" width="{{$.NodeW}}" height="{{$.NodeH}}" rx="4" fill="{{.Fill}}" stroke="{{.Stroke}}" stroke-width="{{.StrokeWidth}}"/>`,
	`<text x="{{.TX}}" y="{{.TY}}">{{.Label}}</text></g>{{end}}`,
	`</svg>{{end}}`,
}, "")))

// execSVG executes the template name with v and writes the result to w in
// one Write.
func execSVG(w io.Writer, name string, v any) error {
	var b bytes.Buffer
	if err := svgTemplates.ExecuteTemplate(&b, name, v); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}
