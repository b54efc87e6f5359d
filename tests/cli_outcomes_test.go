package tests

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/cmd/corpsim/cli"
	"github.com/corpsim/corpsim/sim/analyze"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/sim/report"
)

// TestCLIOutcomes: on a greedy session of billing-support in a data folder,
// score --json has the per-step outcome cards; report --json and the page
// have the outcomes section; trace --case of a wrong outcome says what the
// member read in the CRM and what billing had; diagnose names the wrong
// outcomes as a cause; export's SFT lines carry the records a get or
// search returned (greedy reads the CRM first) and the member's outcome verdicts.
func TestCLIOutcomes(t *testing.T) {
	data := t.TempDir()
	out, errs, code := runCLI(t, "run", "--world", "billing-support", "--agents", "greedy", "--seed", "1", "--data", data)
	if code != cli.ExitOK {
		t.Fatalf("run exited %d: %s", code, errs)
	}
	session := regexp.MustCompile(`(?m)^session\s+(\S+)$`).FindStringSubmatch(out)[1]
	js, _, code := runCLI(t, "score", session, "--data", data, "--json")
	var res app.RunResult
	if code != cli.ExitOK || json.Unmarshal([]byte(js), &res) != nil {
		t.Fatalf("score --json exited %d with %s", code, js)
	}
	sc := res.Score
	// The first wrong refund: its invoice outcome is what greedy reads
	// from the CRM's stale copy.
	wrongCase, wrongTask := "", ""
	for _, oc := range sc.Outcomes {
		if oc.Wrong && oc.Step == "refund" && wrongCase == "" {
			wrongCase, wrongTask = oc.Case, oc.Task
		}
	}
	if len(sc.Outcomes) != int(sc.OutcomeMax) || sc.WrongOutcomes == 0 || wrongCase == "" {
		t.Fatalf("score --json: %d outcome cards, max %v, %d wrong; want a card per outcome and a wrong one", len(sc.Outcomes), sc.OutcomeMax, sc.WrongOutcomes)
	}

	js, errs, code = runCLI(t, "report", session, "--data", data, "--json")
	var rep report.JSON
	if code != cli.ExitOK || json.Unmarshal([]byte(js), &rep) != nil || rep.Outcomes == nil {
		t.Fatalf("report --json exited %d (%s) with %.500s", code, errs, js)
	}
	wrong, first := 0, report.WrongOutcome{}
	for _, row := range rep.Outcomes.Steps {
		wrong += row.Wrong
		if row.Step == "refund" && len(row.WrongCases) > 0 {
			first = row.WrongCases[0]
		}
	}
	if wrong != sc.WrongOutcomes || first.Case != wrongCase || first.Summary == "" {
		t.Errorf("report --json outcomes %+v; want rows adding up to %d wrong, the refund row's first %s with its summary", rep.Outcomes.Steps, sc.WrongOutcomes, wrongCase)
	}
	page, _, code := runCLI(t, "report", session, "--data", data, "-o", "-")
	if code != cli.ExitOK || !strings.Contains(page, `<h2>Outcomes</h2>`) || !strings.Contains(page, `data-case="`+wrongCase+`"`) {
		t.Errorf("report's page lacks the outcomes section or the wrong outcome of %s", wrongCase)
	}

	js, _, code = runCLI(t, "trace", session, "--data", data, "--case", wrongCase, "--json")
	var ct analyze.CaseTrace
	if code != cli.ExitOK || json.Unmarshal([]byte(js), &ct) != nil {
		t.Fatalf("trace --case %s --json exited %d", wrongCase, code)
	}
	var ot *analyze.OutcomeTrace
	for _, st := range ct.Steps {
		if st.Task == wrongTask {
			ot = st.Outcome
		}
	}
	if ot == nil || !ot.Wrong || len(ot.Read) == 0 || !strings.Contains(ot.Summary, "(authoritative) had") {
		t.Fatalf("trace --case %s: outcome %+v; want a wrong one with its reads and what billing had", wrongCase, ot)
	}
	text, _, _ := runCLI(t, "trace", session, "--data", data, "--case", wrongCase)
	for _, want := range []string{"WRONG OUTCOME", "read", "(copy of invoice)", "(authoritative) at completion", ot.Summary} {
		if !strings.Contains(text, want) {
			t.Errorf("trace --case %s lacks %q:\n%s", wrongCase, want, text)
		}
	}

	js, _, code = runCLI(t, "diagnose", session, "--data", data, "--json")
	var d analyze.Diagnosis
	if code != cli.ExitOK || json.Unmarshal([]byte(js), &d) != nil {
		t.Fatalf("diagnose --json exited %d with %s", code, js)
	}
	named := false
	for _, c := range d.Causes {
		named = named || c.Cause == analyze.CauseWrongOutcome && c.Points > 0
	}
	if !named {
		t.Errorf("diagnose does not name wrong outcomes: %s", js)
	}

	lines, errs, code := runCLI(t, "export", session, "--data", data)
	if code != cli.ExitOK {
		t.Fatalf("export exited %d: %s", code, errs)
	}
	records, verdicts := false, false
	for _, line := range strings.Split(strings.TrimSpace(lines), "\n") {
		var ep struct {
			Messages []struct {
				Role    string  `json:"role"`
				Content *string `json:"content"`
			} `json:"messages"`
			Outcomes []struct {
				Wrong bool `json:"wrong"`
			} `json:"outcomes"`
		}
		if err := json.Unmarshal([]byte(line), &ep); err != nil {
			t.Fatal(err)
		}
		for _, m := range ep.Messages {
			if m.Role == "tool" && m.Content != nil && strings.Contains(*m.Content, `"records":[{"system":"crm","record":"account"`) {
				records = true
			}
		}
		verdicts = verdicts || len(ep.Outcomes) > 0
	}
	if !records || !verdicts {
		t.Errorf("export: a tool message with the CRM accounts read %v, outcome verdicts %v; want both", records, verdicts)
	}
}
