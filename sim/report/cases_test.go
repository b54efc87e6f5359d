package report_test

import (
	"html"
	"regexp"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim/report"
)

// TestReportCases: a session of the claims world gets a cases section with
// the lead time per template (as the analysis computes it), SLA by
// priority, and for every breached case the step it waited at, named in
// its entry; a version 1 world's report has no such section.
func TestReportCases(t *testing.T) {
	w, src := mustWorld(t, "claims", nil)
	evs := drive(t, w, src, 1)
	s := mustAnalysis(t, evs)
	// Room for every late case: each breached one must have its entry.
	r, page := mustReport(t, w, evs, report.Options{Session: "s", Explain: s, MaxLateCases: 1000})
	if r.Cases == nil {
		t.Fatal("the report of a claims session has no cases section")
	}
	for _, sr := range r.Queues.Series {
		for _, pt := range sr.Points {
			if pt.Y < 0 {
				t.Fatalf("queue %s has %g open items at %g: its cases' steps are not counted", sr.Name, pt.Y, pt.X)
			}
		}
	}
	sum := s.Cases(20)
	for _, want := range []string{`<h2>Cases</h2>`, `id="case-templates"`, `id="case-priority"`,
		`<td>claim</td>`, `<td class="n">` + sum.Templates[0].Mean.Text + `</td>`, `<td class="n">` + sum.Templates[0].P90.Text + `</td>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	breached := 0
	for _, c := range s.State.Cases {
		if !c.Breached {
			continue
		}
		breached++
		m := regexp.MustCompile(`(?s)<div class="why case" data-case="` + regexp.QuoteMeta(c.ID) + `">(.*?)</div>\n`).FindStringSubmatch(page)
		if m == nil {
			t.Errorf("breached case %s has no entry", c.ID)
			continue
		}
		ct, err := s.Case(c.ID)
		if err != nil {
			t.Fatal(err)
		}
		entry := html.UnescapeString(m[1])
		step := ""
		if len(ct.AtSLA) > 0 {
			step = ct.AtSLA[0].Task
		} else if len(ct.Waits) > 0 {
			step = ct.Waits[0].Task
		}
		if step == "" || !strings.Contains(entry, step) {
			t.Errorf("case %s's entry does not name the step it waited at (%q):\n%s", c.ID, step, entry)
		}
	}
	if breached == 0 {
		t.Fatal("claims seed 1 breached no case: the test shows nothing")
	}
	if !strings.Contains(page, "tickets and cases still open when their SLA passed: case ") {
		t.Error("the penalties table does not name the breached cases")
	}

	w, src = mustWorld(t, "product-launch", nil)
	evs = drive(t, w, src, 1)
	r, page = mustReport(t, w, evs, report.Options{Session: "s", Explain: mustAnalysis(t, evs)})
	if r.Cases != nil || strings.Contains(page, `id="cases"`) {
		t.Error("a version 1 world's report has a cases section")
	}
}

// TestQueueChartCountsReopenedSteps: a case its requester reopens gives its
// queue new tasks (the unmet steps, redone), which the open-items chart
// counts as a case's first steps are counted, so a queue's series never
// drops below zero and ends at the tasks of the queue nobody held.
func TestQueueChartCountsReopenedSteps(t *testing.T) {
	w, src := mustWorld(t, "billing-support", nil)
	evs := drive(t, w, src, 1)
	reopened := 0
	for _, ev := range evs {
		if ev.Type == payload.EvCaseReopened {
			reopened++
		}
	}
	if reopened == 0 {
		t.Fatal("no case was reopened; the test needs a session that reopens one")
	}
	r, _ := mustReport(t, w, evs, report.Options{Session: "s"})
	st := mustAnalysis(t, evs).State
	want := map[string]int{}
	for _, tk := range st.AllTasks() {
		if tk.Status == org.StatusOpen {
			want[tk.Queue]++
		}
	}
	if len(r.Queues.Series) == 0 {
		t.Fatal("the queue chart has no series")
	}
	for _, s := range r.Queues.Series {
		for _, p := range s.Points {
			if p.Y < 0 {
				t.Errorf("queue %s: %v open items at %v; want none below zero", s.Name, p.Y, p.X)
				break
			}
		}
		if got := s.Points[len(s.Points)-1].Y; got != float64(want[s.Name]) {
			t.Errorf("queue %s ends at %v open items; want %d, its tasks nobody held at the end (%d cases reopened)", s.Name, got, want[s.Name], reopened)
		}
	}
}
