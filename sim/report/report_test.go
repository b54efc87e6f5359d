package report_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/analyze"
	"github.com/corpsim/corpsim/sim/report"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

func TestDownsample(t *testing.T) {
	ramp := func(n int) []report.Point {
		pts := make([]report.Point, n)
		for i := range pts {
			pts[i] = report.Point{X: float64(i), Y: float64(i % 97)}
		}
		return pts
	}
	spike := ramp(100_000)
	spike[54_321].Y = 1e6
	spike[77_777].Y = -5
	tests := []struct {
		name    string
		pts     []report.Point
		buckets int
	}{
		{"small series unchanged", ramp(10), 10},
		{"exactly at the bound", ramp(22), 10},
		{"long series", ramp(100_000), 300},
		{"spikes", spike, 50},
		{"one bucket", ramp(1000), 1},
		{"zero buckets means one", ramp(1000), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := report.Downsample(tc.pts, tc.buckets)
			if limit := 2*max(tc.buckets, 1) + 2; len(got) > limit {
				t.Fatalf("got %d points, want at most %d", len(got), limit)
			}
			if len(tc.pts) <= 2*max(tc.buckets, 1)+2 && !slices.Equal(got, tc.pts) {
				t.Fatalf("a small series changed: got %v, want %v", got, tc.pts)
			}
			if got[0] != tc.pts[0] || got[len(got)-1] != tc.pts[len(tc.pts)-1] {
				t.Fatalf("ends: got %v … %v, want %v … %v", got[0], got[len(got)-1], tc.pts[0], tc.pts[len(tc.pts)-1])
			}
			lo, hi := extremes(tc.pts)
			glo, ghi := extremes(got)
			if glo != lo || ghi != hi {
				t.Fatalf("extremes: got [%g, %g], want [%g, %g]", glo, ghi, lo, hi)
			}
			for i := 1; i < len(got); i++ {
				if got[i].X < got[i-1].X {
					t.Fatalf("not in X order at %d: %v after %v", i, got[i], got[i-1])
				}
			}
		})
	}
}

func extremes(pts []report.Point) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, p := range pts {
		lo, hi = math.Min(lo, p.Y), math.Max(hi, p.Y)
	}
	return lo, hi
}

func TestCriticalPath(t *testing.T) {
	tests := []struct {
		name  string
		tasks []report.PathTask
		want  []string
	}{
		{"chain", []report.PathTask{{"a", 1, nil}, {"b", 1, []string{"a"}}, {"c", 1, []string{"b"}}}, []string{"a", "b", "c"}},
		{"heavier branch of a diamond", []report.PathTask{
			{"spec", 8, nil}, {"ux", 16, []string{"spec"}}, {"api", 24, []string{"spec"}}, {"ship", 4, []string{"ux", "api"}},
		}, []string{"spec", "api", "ship"}},
		{"one heavy task beats a long light chain", []report.PathTask{
			{"a", 1, nil}, {"b", 1, []string{"a"}}, {"c", 1, []string{"b"}}, {"big", 10, nil},
		}, []string{"big"}},
		{"tie goes to the earlier task", []report.PathTask{
			{"x", 5, nil}, {"y", 5, nil}, {"z", 1, []string{"y", "x"}},
		}, []string{"y", "z"}},
		{"unknown dependency ignored", []report.PathTask{{"a", 2, []string{"elsewhere"}}, {"b", 1, []string{"a"}}}, []string{"a", "b"}},
		{"cycle does not hang", []report.PathTask{{"a", 1, []string{"b"}}, {"b", 1, []string{"a"}}}, nil},
		{"empty", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := report.CriticalPath(tc.tasks)
			if tc.name == "cycle does not hang" {
				if len(got) == 0 || len(got) > 2 {
					t.Fatalf("got %v, want a path of one or two tasks", got)
				}
				return
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCoalesceBoundsBars(t *testing.T) {
	var iv []report.Interval
	var busy int64
	for i := range 10_000 {
		from := int64(i) * 1000
		iv = append(iv, report.Interval{From: from, To: from + 400, Label: "t", Work: 400})
		busy += 400
	}
	bars := report.Coalesce(iv, 10_000_000, 800)
	if len(bars) > 800 {
		t.Fatalf("got %d bars, want at most 800 (one per pixel)", len(bars))
	}
	var sum int64
	n := 0
	for i, b := range bars {
		if b.X1 <= b.X0 || b.X0 < 0 || b.X1 > 800 {
			t.Fatalf("bar %d spans [%d, %d)", i, b.X0, b.X1)
		}
		if i > 0 && b.X0 <= bars[i-1].X1 {
			t.Fatalf("bars %d and %d touch: they should have merged", i-1, i)
		}
		sum += b.Busy
		n += b.N
	}
	if sum != busy || n != len(iv) {
		t.Fatalf("bars cover %d ms in %d intervals, want %d ms in %d", sum, n, busy, len(iv))
	}
	// Far apart intervals stay apart.
	far := report.Coalesce([]report.Interval{{From: 0, To: 10, Label: "a"}, {From: 500, To: 510, Label: "b"}}, 1000, 100)
	if len(far) != 2 || far[0].Labels[0] != "a" || far[1].X0 != 50 {
		t.Fatalf("got %+v, want two bars, the second at x=50", far)
	}
}

func TestTimeTicks(t *testing.T) {
	const day = 86_400_000
	ticks := report.TimeTicks(0, 69*day)
	if len(ticks) < 3 || len(ticks) > 9 {
		t.Fatalf("got %d ticks, want 3 to 9: %v", len(ticks), ticks)
	}
	if ticks[0].Label != "0" || ticks[1].Label != "14d" {
		t.Fatalf("got %v, want 0, 14d, …", ticks)
	}
	for _, tc := range []struct {
		ms   int64
		want string
	}{{0, "0"}, {45_000, "45s"}, {90 * 60_000, "1h30m"}, {2*day + 12*3_600_000, "2d12h"}, {2*day + 5*60_000, "2d"}, {250, "250ms"}} {
		if got := report.FormatElapsed(tc.ms); got != tc.want {
			t.Errorf("FormatElapsed(%d) = %q, want %q", tc.ms, got, tc.want)
		}
	}
}

// mustWorld loads a shipped world, with edit applied to its source.
func mustWorld(tb testing.TB, name string, edit func(string) string) (*worlds.World, []byte) {
	tb.Helper()
	src, err := worlds.Source(name)
	if err != nil {
		tb.Fatal(err)
	}
	if edit != nil {
		src = []byte(edit(string(src)))
	}
	w, err := worlds.Load(name+".yaml", src)
	if err != nil {
		tb.Fatal(err)
	}
	return w, src
}

// drive runs a world to its end with greedy agents, like the driver but
// without I/O, and returns the events.
func drive(tb testing.TB, w *worlds.World, src []byte, seed uint64) []events.Event {
	tb.Helper()
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: seed, Session: "s"})
	if err != nil {
		tb.Fatal(err)
	}
	e.Start()
	return simtest.Events(tb, e)
}

func mustReport(tb testing.TB, w *worlds.World, evs []events.Event, o report.Options) (*report.Report, string) {
	tb.Helper()
	b := report.NewBuilder(w, o)
	for _, ev := range evs {
		if err := b.Add(ev); err != nil {
			tb.Fatal(err)
		}
	}
	r := b.Report()
	var buf bytes.Buffer
	if err := r.WriteHTML(&buf); err != nil {
		tb.Fatal(err)
	}
	return r, buf.String()
}

var svgRE = regexp.MustCompile(`(?s)<svg .*?</svg>`)

// mustSVGs returns every <svg> element of a page, each checked to be well-formed XML.
func mustSVGs(tb testing.TB, page string) []string {
	tb.Helper()
	svgs := svgRE.FindAllString(page, -1)
	for i, s := range svgs {
		d := xml.NewDecoder(strings.NewReader(s))
		for {
			_, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				tb.Fatalf("svg %d is not well-formed XML: %v\n%.300s", i, err, s)
			}
		}
	}
	return svgs
}

// TestReportEscapesNames puts markup in the world's free text (its
// description and a task's title) and checks that it reaches the page only
// as text: no raw tag, and every chart still well-formed XML.
func TestReportEscapesNames(t *testing.T) {
	const evil = `<script>alert("x")</script> & 'q'`
	w, src := mustWorld(t, "startup", func(s string) string {
		s = strings.Replace(s, "description: A small team ships an MVP; purchases over 500 need the lead, over 5000 finance too.",
			"description: '"+strings.ReplaceAll(evil, "'", "''")+"'", 1)
		return strings.Replace(s, "title: Write the product spec", "title: '"+strings.ReplaceAll(evil, "'", "''")+"'", 1)
	})
	if w.Description != evil {
		t.Fatalf("the test world's description is %q, want %q", w.Description, evil)
	}
	_, page := mustReport(t, w, drive(t, w, src, 3), report.Options{Session: "s<1>"})
	if strings.Contains(page, "<script") {
		t.Fatal("the page contains a raw <script tag")
	}
	if strings.Contains(page, "s<1>") {
		t.Fatal("the session name reached the page unescaped")
	}
	for _, want := range []string{"&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &#39;q&#39;", "spec: &lt;script&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not contain the escaped %q", want)
		}
	}
	if svgs := mustSVGs(t, page); len(svgs) != 5 {
		t.Fatalf("got %d charts, want 5", len(svgs))
	}
}

// TestReportOfProductLaunch checks the report's content against what the
// events say: leave shows in the Gantt chart, the critical path and late
// tasks in the DAG, the reward series ends at the scorecard's reward.
func TestReportOfProductLaunch(t *testing.T) {
	w, src := mustWorld(t, "product-launch", nil)
	evs := drive(t, w, src, 1)
	r, page := mustReport(t, w, evs, report.Options{Session: "s"})
	if r.Events != uint64(len(evs)) || !strings.Contains(r.Verified, "matches") {
		t.Fatalf("report of %d events (%q), want %d and a verified end", r.Events, r.Verified, len(evs))
	}
	var leave, work int
	for _, row := range r.Gantt.Rows {
		leave += len(row.Bars[report.LaneLeave])
		work += len(row.Bars[report.LaneWork])
	}
	left := 0
	for _, ev := range evs {
		if ev.Type == payload.EvMemberLeft {
			left++
		}
	}
	if left == 0 || leave < 1 || work == 0 {
		t.Fatalf("%d member.left events; Gantt has %d leave bars and %d work bars, want some of each", left, leave, work)
	}
	crit := 0
	for _, n := range r.DAG.Nodes {
		if n.Critical {
			crit++
		}
	}
	if len(r.DAG.Nodes) != r.DAG.Total || crit == 0 {
		t.Fatalf("DAG has %d of %d nodes, %d critical; want all and some critical", len(r.DAG.Nodes), r.DAG.Total, crit)
	}
	pts := r.Reward.Series[0].Points
	if got := pts[len(pts)-1].Y; math.Abs(got-r.Score.Reward) > 1e-6 {
		t.Fatalf("cumulative reward ends at %g, want the scorecard's %g", got, r.Score.Reward)
	}
	if !strings.Contains(page, `id="violations"`) || len(mustSVGs(t, page)) != 5 {
		t.Fatal("the page lacks its violations table or a chart")
	}
}

// TestReportCapsRows caps the Gantt chart and the DAG hard and checks the
// notes say what was left out.
func TestReportCapsRows(t *testing.T) {
	w, src := mustWorld(t, "product-launch", nil)
	r, page := mustReport(t, w, drive(t, w, src, 1), report.Options{MaxGanttRows: 2, MaxDAGNodes: 3, Buckets: 5})
	if len(r.Gantt.Rows) != 2 || !strings.Contains(r.Gantt.Note, "2 of ") {
		t.Fatalf("Gantt: %d rows, note %q; want 2 and a note", len(r.Gantt.Rows), r.Gantt.Note)
	}
	if len(r.Members) != 2 || !strings.Contains(r.MembersNote, "2 of 11 members") {
		t.Fatalf("members table: %d rows, note %q; want 2 of 11", len(r.Members), r.MembersNote)
	}
	minKept, maxOmitted := math.Inf(1), math.Inf(-1)
	kept := map[string]bool{}
	for _, m := range r.Members {
		kept[m.Member], minKept = true, math.Min(minKept, m.Delivered)
	}
	for _, m := range r.Score.Members {
		if !kept[m.Member] {
			maxOmitted = math.Max(maxOmitted, m.Delivered)
		}
	}
	if maxOmitted > minKept {
		t.Fatalf("the members table omits one who delivered %g but keeps one who delivered %g", maxOmitted, minKept)
	}
	if len(r.DAG.Nodes) != 3 || !strings.Contains(r.DAG.Note, "3 of 20 project tasks shown") {
		t.Fatalf("DAG: %d nodes, note %q; want 3 of 20", len(r.DAG.Nodes), r.DAG.Note)
	}
	for _, s := range r.Queues.Series {
		if len(s.Points) > 12 {
			t.Fatalf("queue %s has %d points, want at most 12", s.Name, len(s.Points))
		}
	}
	if !strings.Contains(page, r.Gantt.Note) || !strings.Contains(page, r.DAG.Note) || !strings.Contains(page, r.MembersNote) {
		t.Fatal("the page does not show the notes of what was omitted")
	}
}

// TestReportIsDeterministic: the same events give the same bytes.
func TestReportIsDeterministic(t *testing.T) {
	w, src := mustWorld(t, "startup", nil)
	evs := drive(t, w, src, 5)
	_, a := mustReport(t, w, evs, report.Options{Session: "s"})
	_, b := mustReport(t, w, evs, report.Options{Session: "s"})
	if a != b {
		t.Fatal("two reports of the same events differ")
	}
}

func TestLineChartSVG(t *testing.T) {
	c := report.LineChart{Title: "t", XLabel: "x", YLabel: "y", Markers: true, YMin: 0, YMax: 1, Series: []report.Series{
		{Name: "a<b", Points: []report.Point{{X: 0.25, Y: 0.9, Err: 0.05}, {X: 1, Y: 0.5}}},
		{Name: "c", Points: []report.Point{{X: 0.25, Y: 0}, {X: 1, Y: 0}}},
	}}
	var b bytes.Buffer
	if err := c.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName   xml.Name `xml:"svg"`
		Polylines []struct {
			Class  string `xml:"class,attr"`
			Series string `xml:"data-series,attr"`
		} `xml:"polyline"`
		Legend []struct {
			Text string `xml:"text"`
		} `xml:"g"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("not XML: %v", err)
	}
	if len(doc.Polylines) != 2 || doc.Polylines[0].Series != "a<b" || doc.Polylines[1].Series != "c" {
		t.Fatalf("got polylines %+v, want one per series", doc.Polylines)
	}
	if len(doc.Legend) != 2 || doc.Legend[0].Text != "a<b" {
		t.Fatalf("got legend %+v, want a<b and c", doc.Legend)
	}
}

// TestGanttBarBudget: with a budget of bars smaller than the chart needs,
// bars merge across wider gaps until it fits, no interval is lost, and the
// note says so.
func TestGanttBarBudget(t *testing.T) {
	w, src := mustWorld(t, "support-desk", nil)
	evs := drive(t, w, src, 1)
	count := func(g report.Gantt) (bars, intervals, lanes int) {
		for _, r := range g.Rows {
			for _, l := range r.Bars {
				bars += len(l)
				if len(l) > 0 {
					lanes++
				}
				for _, b := range l {
					intervals += b.N
				}
			}
		}
		return
	}
	full, _ := mustReport(t, w, evs, report.Options{Width: 50_000}) // fine pixels: many bars
	bars, intervals, lanes := count(full.Gantt)
	if full.Gantt.Gap != 0 || bars < lanes+20 {
		t.Fatalf("default chart: gap %d, %d bars in %d lanes; want gap 0 and enough bars to merge", full.Gantt.Gap, bars, lanes)
	}
	budget := (bars + lanes) / 2
	small, page := mustReport(t, w, evs, report.Options{Width: 50_000, MaxGanttBars: budget})
	sbars, sintervals, _ := count(small.Gantt)
	if sbars > budget || sintervals != intervals || small.Gantt.Gap == 0 {
		t.Fatalf("budget %d: got %d bars holding %d intervals at gap %d; want at most %d bars holding all %d", budget, sbars, sintervals, small.Gantt.Gap, budget, intervals)
	}
	t.Logf("%d bars at gap 0; budget %d: %d bars at gap %d", bars, budget, sbars, small.Gantt.Gap)
	if !strings.Contains(page, "merged to keep the chart small") {
		t.Fatal("the page does not say bars were merged")
	}
}

func TestWallTicks(t *testing.T) {
	const day = 86_400_000
	cal := &clock.Calendar{Start: time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)} // a Monday, 09:00
	tests := []struct {
		name   string
		lo, hi float64
		first  string
	}{
		{"weeks", 0, 69 * day, "Jan 19"}, // midnight Jan 05 is before the start
		{"days", 0, 5 * day, "Tue Jan 06"},
		{"hours", 0, 8 * 3_600_000, "Mon 09:00"},
		{"from the middle", 3 * day, 3*day + 12*3_600_000, "Thu 10:00"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ticks := report.WallTicks(cal)(tc.lo, tc.hi)
			if len(ticks) < 3 || len(ticks) > 9 {
				t.Fatalf("got %d ticks, want 3 to 9: %v", len(ticks), ticks)
			}
			if ticks[0].Label != tc.first {
				t.Fatalf("first tick %q, want %q (all: %v)", ticks[0].Label, tc.first, ticks)
			}
			for i, tk := range ticks {
				if tk.V < tc.lo || tk.V > tc.hi {
					t.Fatalf("tick %v outside [%g, %g]", tk, tc.lo, tc.hi)
				}
				if i > 0 && tk.V-ticks[i-1].V != ticks[1].V-ticks[0].V {
					t.Fatalf("ticks not evenly spaced: %v", ticks)
				}
			}
		})
	}
}

// TestChartEscapesByContext gives a chart markup in every text it draws
// (its title, the <title> of a series, an attribute, a label): the SVG
// stays well-formed XML, with no raw tag, and reads back the same text.
func TestChartEscapesByContext(t *testing.T) {
	const evil = `</title><script>x</script>" onload="y`
	c := report.LineChart{Title: evil, XLabel: evil, YLabel: evil, Note: evil, Markers: true,
		Series: []report.Series{{Name: evil, Points: []report.Point{{X: 0, Y: 1}}}, {Name: "b", Points: []report.Point{{X: 1, Y: 2}}}},
		XTicks: func(lo, hi float64) []report.Tick { return []report.Tick{{V: lo, Label: evil}} }}
	var b bytes.Buffer
	if err := c.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "<script") || strings.Contains(b.String(), `" onload=`) {
		t.Fatalf("raw markup in the chart: %s", b.String())
	}
	var doc struct {
		Title     string `xml:"title"`
		Polylines []struct {
			Series string `xml:"data-series,attr"`
			Title  string `xml:"title"`
		} `xml:"polyline"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("not XML: %v", err)
	}
	if doc.Title != evil || len(doc.Polylines) != 2 || doc.Polylines[0].Series != evil || doc.Polylines[0].Title != evil {
		t.Fatalf("read back %+v, want the text %q in each place", doc, evil)
	}
}

// mustAnalysis loads events for analysis, as corpsim trace does.
func mustAnalysis(tb testing.TB, evs []events.Event) *analyze.Session {
	tb.Helper()
	s, err := analyze.Load(func(yield func(events.Event, error) bool) {
		for _, ev := range evs {
			if !yield(ev, nil) {
				return
			}
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// TestReportWhyIsTraces: the why section is trace's analysis, not another:
// each late item's summary and waits are analyze's, the latest first, and
// each project that missed its bonus is explained; with the analysis the
// page is still the same bytes every time.
func TestReportWhyIsTraces(t *testing.T) {
	w, src := mustWorld(t, "product-launch", nil)
	evs := drive(t, w, src, 1)
	s := mustAnalysis(t, evs)
	r, page := mustReport(t, w, evs, report.Options{Session: "s", Explain: s})
	if r.Why.LateItems == 0 || len(r.Why.Tasks) == 0 {
		t.Fatalf("why: %d late items, %d explained; want some (product-launch runs late)", r.Why.LateItems, len(r.Why.Tasks))
	}
	for _, tw := range r.Why.Tasks {
		tr, err := s.Task(tw.Task)
		if err != nil {
			t.Fatal(err)
		}
		if tw.Summary != tr.Summary || tw.Outcome != tr.Outcome || (tw.Outcome != "late" && tw.Outcome != "overdue") {
			t.Errorf("%s: why says %q (%s), trace says %q (%s)", tw.Task, tw.Summary, tw.Outcome, tr.Summary, tr.Outcome)
		}
		if len(tw.Reasons) > 0 && tw.Reasons[0].Text != tr.Delays[0].Text {
			t.Errorf("%s: first reason %q, want trace's longest wait %q", tw.Task, tw.Reasons[0].Text, tr.Delays[0].Text)
		}
		if !strings.Contains(page, `data-task="`+tw.Task+`"`) {
			t.Errorf("the page does not explain %s", tw.Task)
		}
	}
	failed := 0
	for _, p := range r.Score.Projects {
		if !p.Completed {
			failed++
		}
	}
	if len(r.Why.Goals) != failed || r.Why.FailedGoal != failed {
		t.Errorf("why explains %d of %d failed projects (counted %d)", len(r.Why.Goals), failed, r.Why.FailedGoal)
	}
	d := s.Diagnose()
	if c := r.Why.Causes; c == nil || len(c.Rows) != len(d.Causes) || c.Lost != d.Lost {
		t.Errorf("causes %+v, want diagnose's %d causes of %g lost", r.Why.Causes, len(d.Causes), d.Lost)
	} else {
		for i, row := range c.Rows {
			if row.Cause != d.Causes[i].Cause || row.Points != d.Causes[i].Points {
				t.Errorf("cause %d: %s %g, diagnose says %s %g", i, row.Cause, row.Points, d.Causes[i].Cause, d.Causes[i].Points)
			}
		}
	}
	_, again := mustReport(t, w, evs, report.Options{Session: "s", Explain: mustAnalysis(t, evs)})
	if again != page {
		t.Fatal("two reports of the same events with their analysis differ")
	}
	// Without an analysis the section says so.
	r0, _ := mustReport(t, w, evs, report.Options{Session: "s"})
	if r0.Why.Note == "" || len(r0.Why.Tasks) != 0 || r0.Why.LateItems != r.Why.LateItems {
		t.Errorf("without analysis: note %q, %d explained, %d late", r0.Why.Note, len(r0.Why.Tasks), r0.Why.LateItems)
	}
}

// TestReportRejectionsAndSLA: on support-desk every refusal is in exactly
// one group, races apart, with the names taken out of the rules; the SLA
// rows add up to the scorecard's tickets, in-SLA and breaches, each way.
func TestReportRejectionsAndSLA(t *testing.T) {
	w, src := mustWorld(t, "support-desk", nil)
	evs := drive(t, w, src, 2)
	r, page := mustReport(t, w, evs, report.Options{Session: "s"})
	rj := r.Rejections
	if got := rj.ContentionN + rj.PolicyN + rj.OtherN; got != r.Score.Rejections || rj.PolicyN != r.Score.Violations {
		t.Fatalf("groups count %d refusals (%d policy), want %d (%d)", got, rj.PolicyN, r.Score.Rejections, r.Score.Violations)
	}
	if rj.ContentionN == 0 {
		t.Fatal("no races on support-desk with six greedy agents; want some")
	}
	for _, g := range append(append([]report.RejectionGroup{}, rj.Contention...), rj.Other...) {
		if strings.Contains(g.Rule, `"`) || regexp.MustCompile(`\b(ana|ben|cho|dev|eli|general-\d+)\b`).MatchString(g.Rule) {
			t.Errorf("rule %q still names an item or a member", g.Rule)
		}
	}
	for _, g := range rj.Other {
		if strings.Contains(g.Rule, "already in_progress by") {
			t.Errorf("a lost claim race is filed as another refusal: %+v", g)
		}
	}
	for name, rows := range map[string][]report.SLARow{"priority": r.SLA.ByPriority, "queue": r.SLA.ByQueue, "stream": r.SLA.ByStream} {
		var n, in, br int
		for _, x := range rows {
			n, in, br = n+x.Tickets, in+x.InSLA, br+x.Breaches
			if x.InSLA+x.Late+x.Overdue+x.Open+x.Unverified != x.Tickets {
				t.Errorf("SLA by %s, %s: %+v does not add up", name, x.Key, x)
			}
		}
		if n != r.Score.Tickets || in != r.Score.TicketsInSLA || br != r.Score.SLABreaches {
			t.Errorf("SLA by %s: %d tickets, %d within, %d breaches; scorecard %d, %d, %d", name, n, in, br, r.Score.Tickets, r.Score.TicketsInSLA, r.Score.SLABreaches)
		}
	}
	if len(r.Interruptions) != 2 || r.Interruptions[0].Kind != report.InterruptOutage || r.Interruptions[1].Kind != report.InterruptLeave {
		t.Fatalf("interruptions %+v, want the outage then the leave", r.Interruptions)
	}
	if n := strings.Count(page, `class="interruption outage"`); n != 4 {
		t.Errorf("the outage is marked %d times, want on the 4 time charts", n)
	}
	if strings.Contains(page, ".0h<") || regexp.MustCompile(`>\d+\.\dh<`).MatchString(page) {
		t.Error("the page writes a duration as decimal hours")
	}
}

// TestReportForkHeader: a fork's page names its parent and fork point and
// shows its own seed.
func TestReportForkHeader(t *testing.T) {
	w, src := mustWorld(t, "startup", nil)
	evs := drive(t, w, src, 1)
	_, page := mustReport(t, w, evs, report.Options{Session: "f", Parent: "p1", ForkSeq: 100, Seed: 3})
	for _, want := range []string{"fork of p1 at event #100", "startup · seed 3 · load", "session.started recorded seed 1"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	_, plain := mustReport(t, w, evs, report.Options{Session: "s", Seed: 3})
	if strings.Contains(plain, `id="fork"`) || !strings.Contains(plain, "startup · seed 1 · load") {
		t.Error("a session that is not a fork shows a fork line or another seed")
	}
}

// TestGanttLastTickInside: a tick at the right edge is anchored at its end,
// so its label stays inside the chart; one at the left edge at its start.
func TestGanttLastTickInside(t *testing.T) {
	const day = 86_400_000
	g := report.Gantt{End: 10 * day, Width: 900, Ticks: []report.Tick{{V: 0, Label: "Mon Jan 05"}, {V: 5 * day, Label: "Sat Jan 10"}, {V: 10 * day, Label: "Thu Jan 15"}},
		Rows: []report.GanttRow{{Member: "a", Role: "r"}}}
	var b bytes.Buffer
	if err := g.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	for label, anchor := range map[string]string{"Mon Jan 05": "middle", "Sat Jan 10": "middle", "Thu Jan 15": "end"} {
		m := regexp.MustCompile(`text-anchor="(\w+)">` + label + `<`).FindStringSubmatch(b.String())
		if m == nil || m[1] != anchor {
			t.Errorf("tick %s: anchor %v, want %s", label, m, anchor)
		}
	}
	c := report.LineChart{Width: 400, Series: []report.Series{{Name: "x", Points: []report.Point{{X: 0, Y: 1}, {X: 10, Y: 2}}}},
		XTicks: func(lo, hi float64) []report.Tick {
			return []report.Tick{{V: lo, Label: "a much longer first label of this axis"}, {V: hi, Label: "a long last label"}}
		}}
	b.Reset()
	if err := c.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `text-anchor="start">a much longer first label of this axis<`) || !strings.Contains(b.String(), `text-anchor="end">a long last label<`) {
		t.Errorf("line chart edge ticks not anchored inside:\n%s", b.String())
	}
}

// TestGanttTooltipsCountWorkingTime: a leave of two working days from a
// Friday spans a weekend; the Gantt's tooltip says 2d (working days, as
// every duration of the report), not the 4d of the calendar it spans.
func TestGanttTooltipsCountWorkingTime(t *testing.T) {
	src := []byte(`version: 1
name: leave-weekend
start: 2026-01-09T09:00:00Z
horizon: 10d
roles: [{id: eng}]
teams: [{id: t}]
members: [{id: bob, role: eng, team: t}, {id: ann, role: eng, team: t}]
queues: [{id: q, served_by: [eng]}]
projects:
  - {id: p, team: t, queue: q, deadline: 8d, tasks: [{id: a, role: eng, effort: 1h}]}
interruptions:
  - {at: 1h, kind: leave, member: ann, for: 2d}
`)
	w, err := worlds.Load("w.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	_, page := mustReport(t, w, drive(t, w, src, 1), report.Options{Session: "s"})
	if !strings.Contains(page, ", leave 2d</title>") {
		i := strings.Index(page, "ann (eng)")
		t.Errorf("ann's Gantt tooltip does not say leave 2d (working days): %.200s", page[max(i, 0):])
	}
}
