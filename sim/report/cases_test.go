package report_test

import (
	"html"
	"regexp"
	"strings"
	"testing"

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
