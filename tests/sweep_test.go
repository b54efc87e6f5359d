package tests

import (
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/cmd/corpsim/cli"
	"github.com/corpsim/corpsim/sim/app"
)

// TestSweep runs the support-desk world over three loads, two agents and
// two seeds, and checks the CSV, the JSON and the SVG against each other,
// against eval and run of the same cells, and against what load does to a
// greedy team: its completion falls as load rises.
func TestSweep(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	out := mustCLI(t, "sweep", "--world", "support-desk", "--loads", "0.25,1,2", "--agents", "idle,greedy", "--seeds", "2", "-o", dir, "--json")
	var res app.SweepResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("sweep --json: %v\n%s", err, out)
	}

	// The CSV: a header and one row per (load, agents), in order.
	f, err := os.Open(filepath.Join(dir, "sweep.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	wantHeader := "world,load,agents,seeds,completion_mean,completion_sd,on_time_mean,on_time_sd,score_mean,score_sd"
	if len(rows) != 7 || strings.Join(rows[0], ",") != wantHeader {
		t.Fatalf("got %d CSV rows with header %v, want 7 with %s", len(rows), rows[0], wantHeader)
	}
	type cell struct{ completion, onTime, score float64 }
	cells := map[string]cell{}
	var order []string
	for _, r := range rows[1:] {
		key := r[1] + "/" + r[2]
		order = append(order, key)
		if r[0] != "support-desk" || r[3] != "2" {
			t.Errorf("row %v: want world support-desk and 2 seeds", r)
		}
		cells[key] = cell{sweepFloat(t, r[4]), sweepFloat(t, r[6]), sweepFloat(t, r[8])}
	}
	if got, want := strings.Join(order, " "), "0.25/idle 0.25/greedy 1/idle 1/greedy 2/idle 2/greedy"; got != want {
		t.Fatalf("CSV rows are %s, want %s", got, want)
	}
	if len(res.Points) != 6 {
		t.Fatalf("JSON has %d points, want 6", len(res.Points))
	}
	for _, p := range res.Points {
		c := cells[strconv.FormatFloat(p.Load, 'g', -1, 64)+"/"+p.Agents]
		if !sweepNear(c.completion, p.Completion) || !sweepNear(c.score, p.Score) || !sweepNear(c.onTime, p.OnTime) {
			t.Errorf("CSV %+v and JSON %+v disagree", c, p)
		}
	}

	// Greedy's completion falls as load rises; idle does nothing at any load.
	g25, g1, g2 := cells["0.25/greedy"], cells["1/greedy"], cells["2/greedy"]
	if !(g25.completion > g1.completion && g1.completion > g2.completion) {
		t.Errorf("greedy completion %.3f, %.3f, %.3f at loads 0.25, 1, 2: want it falling", g25.completion, g1.completion, g2.completion)
	}
	for _, l := range []string{"0.25", "1", "2"} {
		if c := cells[l+"/idle"]; c.completion != 0 || c.onTime != 0 {
			t.Errorf("idle at load %s: completion %g, on time %g; want 0", l, c.completion, c.onTime)
		}
	}

	// The same cells through eval and run.
	for _, tc := range []struct{ load, agents string }{{"2", "greedy"}} {
		var ev app.EvalResult
		if err := json.Unmarshal([]byte(mustCLI(t, "eval", "--world", "support-desk", "--load", tc.load, "--agents", tc.agents, "--seeds", "2", "--json")), &ev); err != nil {
			t.Fatal(err)
		}
		c := cells[tc.load+"/"+tc.agents]
		if !sweepNear(ev.Mean, c.score) || !sweepNear(ev.Completion, c.completion) {
			t.Errorf("load %s %s: eval says score %g, completion %g; sweep says %g, %g", tc.load, tc.agents, ev.Mean, ev.Completion, c.score, c.completion)
		}
	}
	run := cliResult(t, "run", "--world", "support-desk", "--load", "2", "--agents", "greedy", "--seed", "2", "--ephemeral")
	var p2 app.SweepPoint
	for _, p := range res.Points {
		if p.Load == 2 && p.Agents == "greedy" {
			p2 = p
		}
	}
	if len(p2.Scores) != 2 || !sweepNear(p2.Scores[1], run.Score.TeamScore) {
		t.Errorf("run of load 2, seed 2 scores %g; the sweep's seed scores are %v", run.Score.TeamScore, p2.Scores)
	}

	// The SVG: well-formed, one line per agent, with axes and a legend.
	svg, err := os.ReadFile(filepath.Join(dir, "sweep.svg"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName   xml.Name `xml:"http://www.w3.org/2000/svg svg"`
		Polylines []struct {
			Class  string `xml:"class,attr"`
			Series string `xml:"data-series,attr"`
			Points string `xml:"points,attr"`
		} `xml:"polyline"`
		Lines  []struct{} `xml:"line"`
		Texts  []string   `xml:"text"`
		Legend []struct {
			Text string `xml:"text"`
		} `xml:"g"`
	}
	if err := xml.Unmarshal(svg, &doc); err != nil {
		t.Fatalf("sweep.svg is not XML: %v", err)
	}
	if len(doc.Polylines) != 2 || doc.Polylines[0].Series != "idle" || doc.Polylines[1].Series != "greedy" {
		t.Fatalf("sweep.svg has polylines %+v, want one for idle and one for greedy", doc.Polylines)
	}
	for _, pl := range doc.Polylines {
		if n := len(strings.Fields(pl.Points)); n != 3 {
			t.Errorf("the %s line has %d points, want one per load (3)", pl.Series, n)
		}
	}
	texts := strings.Join(doc.Texts, "|")
	for _, want := range []string{"load factor", "completion", "0%", "100%"} {
		if !strings.Contains(texts, want) {
			t.Errorf("sweep.svg lacks the label %q (texts: %s)", want, texts)
		}
	}
	if len(doc.Legend) != 2 || len(doc.Lines) < 8 {
		t.Errorf("sweep.svg has %d legend entries and %d lines, want 2 and axes with ticks", len(doc.Legend), len(doc.Lines))
	}
}

func TestSweepErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad load", []string{"sweep", "--loads", "1,x"}, `--loads: "x" is not a positive number`},
		{"zero load", []string{"sweep", "--loads", "0"}, "is not a positive number"},
		{"unknown agent", []string{"sweep", "--agents", "genius", "--loads", "1"}, `unknown agent "genius"`},
		{"no seeds", []string{"sweep", "--seeds", "0"}, "--seeds must be at least 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, errs, code := runCLI(t, tc.args...)
			if code != cli.ExitUsage || !strings.Contains(errs, tc.want) {
				t.Fatalf("got exit %d, stderr %q; want %d and %q", code, errs, cli.ExitUsage, tc.want)
			}
		})
	}
}

func sweepFloat(tb testing.TB, s string) float64 {
	tb.Helper()
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		tb.Fatal(err)
	}
	return x
}

// near compares a value with its 6-decimal CSV form.
func sweepNear(a, b float64) bool { return math.Abs(a-b) < 2e-6*math.Max(1, math.Abs(a)) }
