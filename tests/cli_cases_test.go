package tests

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/cmd/corpsim/cli"
	"github.com/corpsim/corpsim/sim/analyze"
	"github.com/corpsim/corpsim/sim/app"
)

// TestCLICases: on a session of the claims world, run and score print the
// cases, a per-template table and SLA by priority counting cases; trace
// --case tells a case's story (an inspected one shows the inspector's
// answer, a breached one its breach and what it waited for); report has
// the cases section naming each breached case.
func TestCLICases(t *testing.T) {
	data := t.TempDir()
	out, errs, code := runCLI(t, "run", "--world", "claims", "--agents", "planner", "--seed", "1", "--data", data)
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
	if sc.Cases == 0 || len(sc.Templates) == 0 || len(sc.SLAByPriority) == 0 {
		t.Fatalf("the scorecard has no cases: %+v", sc)
	}
	text, _, _ := runCLI(t, "score", session, "--data", data)
	for _, txt := range []string{out, text} {
		if !regexp.MustCompile(`(?m)^cases\s+` + strconv.Itoa(sc.CasesDone) + ` done of ` + strconv.Itoa(sc.Cases) + ` opened, ` + strconv.Itoa(sc.CasesInSLA) + ` within SLA$`).MatchString(txt) {
			t.Errorf("no cases line for %d/%d/%d:\n%s", sc.CasesDone, sc.Cases, sc.CasesInSLA, txt)
		}
		tpl := sc.Templates[0]
		if !regexp.MustCompile(`(?m)^`+tpl.Template+`\s+`+strconv.Itoa(tpl.Cases)+`\s+`+strconv.Itoa(tpl.Done)+`\s+`+strconv.Itoa(tpl.InSLA)+`\s+`+strconv.Itoa(tpl.Breached)+`\s+\S+\s+[0-9.]+$`).MatchString(txt) ||
			!strings.Contains(txt, "CASE TEMPLATE  CASES  DONE  IN SLA  BREACHED  LEAD TIME  VALUE") {
			t.Errorf("no template row for %+v:\n%s", tpl, txt)
		}
		p := sc.SLAByPriority[0]
		if want := "priority " + strconv.Itoa(p.Priority) + ": " + strconv.Itoa(p.SLABreaches) + " of " + strconv.Itoa(p.Tickets+p.Cases) + " (" + strconv.Itoa(p.CasesInSLA) + " of " + strconv.Itoa(p.Cases) + " cases within SLA)"; !strings.Contains(txt, want) {
			t.Errorf("the SLA line lacks %q:\n%s", want, txt)
		}
	}

	// trace --case: every case of the session, as JSON; an inspected one's
	// text shows the answer, a breached one's its breach.
	opened, _, _ := runCLI(t, "log", session, "--data", data, "--type", "case.opened")
	var ids []string
	for _, line := range strings.Split(strings.TrimSpace(opened), "\n") {
		var ev struct {
			Payload struct {
				Case string `json:"case"`
			} `json:"payload"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, ev.Payload.Case)
	}
	if len(ids) != sc.Cases {
		t.Fatalf("the log opens %d cases, the scorecard counts %d", len(ids), sc.Cases)
	}
	var inspected, breached *analyze.CaseTrace
	for _, id := range ids {
		if inspected != nil && breached != nil {
			break
		}
		js, errs, code := runCLI(t, "trace", session, "--data", data, "--case", id, "--json")
		if code != cli.ExitOK {
			t.Fatalf("trace --case %s exited %d: %s", id, code, errs)
		}
		var ct analyze.CaseTrace
		if err := json.Unmarshal([]byte(js), &ct); err != nil {
			t.Fatal(err)
		}
		for _, st := range ct.Steps {
			if st.NPC != "" && len(st.Answers) > 0 && inspected == nil {
				inspected = &ct
			}
		}
		if ct.Breached != nil && breached == nil {
			breached = &ct
		}
	}
	if inspected == nil || breached == nil {
		t.Fatalf("no inspected (%v) or breached (%v) case among %d", inspected != nil, breached != nil, len(ids))
	}
	out, _, _ = runCLI(t, "trace", session, "--data", data, "--case", inspected.Case)
	for _, st := range inspected.Steps {
		for _, a := range st.Answers {
			if !strings.Contains(out, a.Text) {
				t.Errorf("trace --case %s lacks the answer %q:\n%s", inspected.Case, a.Text, out)
			}
		}
	}
	out, _, _ = runCLI(t, "trace", session, "--data", data, "--case", breached.Case)
	if !strings.Contains(out, "SLA breached") || !strings.Contains(out, "WAITED ON") {
		t.Errorf("trace --case %s does not show its breach and waits:\n%s", breached.Case, out)
	}
	if _, errs, code := runCLI(t, "trace", session, "--data", data, "--case", "nope"); code == cli.ExitOK || !strings.Contains(errs, "nope") {
		t.Errorf("trace --case nope exited %d: %s", code, errs)
	}

	page, errs, code := runCLI(t, "report", session, "--data", data, "-o", "-")
	if code != cli.ExitOK {
		t.Fatalf("report exited %d: %s", code, errs)
	}
	if !strings.Contains(page, `<h2>Cases</h2>`) || !strings.Contains(page, `data-case="`+breached.Case+`"`) {
		t.Errorf("the report has no cases section naming %s", breached.Case)
	}
	// Late or breached cases in all: those listed, or "N of M".
	m := regexp.MustCompile(`Late and breached cases \((\d+)(?: of (\d+))?\)`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("the cases section has no heading of late cases")
	}
	late, _ := strconv.Atoi(m[1])
	if m[2] != "" {
		late, _ = strconv.Atoi(m[2])
	}
	if late < 2 {
		t.Fatalf("the report has %d late cases; the test needs 2", late)
	}
	page, _, _ = runCLI(t, "report", session, "--data", data, "-o", "-", "--late-cases", "1")
	if n := strings.Count(page, `<div class="why case"`); n != 1 || !strings.Contains(page, strconv.Itoa(late-1)+" more late or breached cases not shown") {
		t.Errorf("report --late-cases 1 explains %d cases and does not count the other %d", n, late-1)
	}
}
