package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// explainProbe runs at the end of a report page in headless Chromium and
// writes what the page shows as JSON into the DOM: every table by id (the
// text of its cells), the number of elements each selector matches, the
// text of a few sections, and every chart label drawn outside its chart.
const explainProbe = `<script>(function(){
var out={errors:window.__errors||[],tables:{},counts:{},texts:{},clipped:[]};
document.querySelectorAll("table[id]").forEach(function(t){
  var rows=[];
  t.querySelectorAll("tr").forEach(function(tr){
    var cells=[]; tr.querySelectorAll("th,td").forEach(function(c){cells.push(c.textContent.replace(/\s+/g," ").trim());});
    rows.push(cells);
  });
  out.tables[t.id]=rows;
});
SELECTORS.forEach(function(s){out.counts[s]=document.querySelectorAll(s).length;});
["header","fork","why-goals","why-tasks","interruptions","violations"].forEach(function(id){
  var e=document.getElementById(id); if(e){out.texts[id]=e.textContent.replace(/\s+/g," ").trim();}
});
document.querySelectorAll("section > .scroll > svg").forEach(function(svg){
  var W=svg.viewBox.baseVal.width;
  svg.querySelectorAll("text").forEach(function(t){
    if(t.hasAttribute("transform")){return;}
    var b=t.getBBox();
    if(b.x < -0.5 || b.x+b.width > W+0.5){out.clipped.push(svg.parentNode.parentNode.id+": "+t.textContent+" at x "+b.x.toFixed(1)+".."+(b.x+b.width).toFixed(1)+" of "+W);}
  });
});
var pre=document.createElement("pre");pre.id="explain-result";pre.textContent=JSON.stringify(out);document.body.appendChild(pre);
})();</script>`

type explainResult struct {
	Errors  []string              `json:"errors"`
	Tables  map[string][][]string `json:"tables"`
	Counts  map[string]int        `json:"counts"`
	Texts   map[string]string     `json:"texts"`
	Clipped []string              `json:"clipped"`
}

var explainRE = regexp.MustCompile(`(?s)<pre id="explain-result">(.*?)</pre>`)

// renderReport writes SESSION's report into the test's output folder,
// takes a screenshot of it in headless Chromium and returns what the
// rendered page shows (see explainProbe), counting the elements that match
// selectors.
func renderReport(t *testing.T, data, session, name string, selectors ...string) explainResult {
	t.Helper()
	browser := chromium(t)
	dir := artifactDir(t)
	page := filepath.Join(dir, name+".html")
	mustCLI(t, "report", session, "--data", data, "-o", page)
	src, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	checkSelfContained(t, src)
	sels, _ := json.Marshal(append([]string{}, selectors...))
	probed := strings.Replace(string(src), "<head>", "<head>"+probeHead, 1)
	probed = strings.Replace(probed, "</body>", strings.Replace(explainProbe, "SELECTORS", string(sels), 1)+"</body>", 1)
	probePath := filepath.Join(t.TempDir(), "probed.html")
	if err := os.WriteFile(probePath, []byte(probed), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := chromiumRun(t, browser, "--dump-dom", "file://"+probePath)
	m := explainRE.FindSubmatch(dom)
	if m == nil {
		t.Fatalf("the probe left no result in the DOM (did the page load?):\n%.2000s", dom)
	}
	unescaped := strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&", "&quot;", `"`, "&#39;", "'").Replace(string(m[1]))
	var res explainResult
	if err := json.Unmarshal([]byte(unescaped), &res); err != nil {
		t.Fatalf("probe result %.500q: %v", unescaped, err)
	}
	if len(res.Errors) > 0 {
		t.Errorf("script errors on the page: %q", res.Errors)
	}
	if len(res.Clipped) > 0 {
		t.Errorf("chart labels drawn outside their chart (clipped): %q", res.Clipped)
	}
	shot := filepath.Join(dir, name+".png")
	chromiumRun(t, browser, "--hide-scrollbars", "--window-size=1300,4000", "--screenshot="+shot, "file://"+page)
	if png, err := os.ReadFile(shot); err != nil || len(png) < 10_000 {
		t.Fatalf("screenshot %s: %d bytes, err %v", shot, len(png), err)
	}
	t.Logf("page %s, screenshot %s", page, shot)
	return res
}

// column returns the index of the header cell named name of a table.
func column(t *testing.T, rows [][]string, name string) int {
	t.Helper()
	if len(rows) == 0 {
		t.Fatalf("the table has no header row; want a column %q", name)
	}
	for i, h := range rows[0] {
		if h == name {
			return i
		}
	}
	t.Fatalf("the table's header %q has no column %q", rows[0], name)
	return -1
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("cell %q is not a number", s)
	}
	return n
}

// sumColumn adds up a numeric column of a table's data rows (rows with a
// single cell say the table is empty and add nothing).
func sumColumn(t *testing.T, rows [][]string, name string) int {
	t.Helper()
	c, n := column(t, rows, name), 0
	for _, r := range rows[1:] {
		if len(r) > c {
			n += atoi(t, r[c])
		}
	}
	return n
}

// countByActor counts a session's events of type typ per actor.
func countByActor(t *testing.T, data, session, typ string) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(mustCLI(t, "log", session, "--data", data, "--type", typ)), "\n") {
		if line == "" {
			continue
		}
		var ev struct {
			Actor string `json:"actor"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		n[ev.Actor]++
	}
	return n
}

// TestReportExplainsPortfolio: the portfolio world's many refused claims
// are races, counted apart from policy violations in a few rows grouped by
// rule, not 40 rows of reasons; every project that missed its bonus and
// the latest tasks say why, from trace's analysis; done-late and
// open-past-deadline tasks have colours of their own; members have roles.
func TestReportExplainsPortfolio(t *testing.T) {
	chromium(t)
	data := t.TempDir()
	res := cliResult(t, "run", "--world", "portfolio", "--seed", "2", "--data", data, "--json")
	got := renderReport(t, data, res.Session, "explains-portfolio",
		"#why-goals .why.goal", "#why-goals .why.goal li", "#why-tasks .why.task", "#why-tasks .why.task li",
		".dag g.node.done-late", ".dag g.node.overdue", ".dag g.node.late")

	// Refusals: every one in exactly one of three tables, races apart.
	pol, con, oth := got.Tables["policy-violations"], got.Tables["contention"], got.Tables["other-refusals"]
	total := sumColumn(t, pol, "count") + sumColumn(t, con, "count") + sumColumn(t, oth, "count")
	if total != res.Score.Rejections {
		t.Errorf("the refusal tables count %d refused actions, want the scorecard's %d", total, res.Score.Rejections)
	}
	if p := sumColumn(t, pol, "count"); p != res.Score.Violations {
		t.Errorf("the policy table counts %d, want the scorecard's %d policy violations", p, res.Score.Violations)
	}
	races := sumColumn(t, con, "count")
	if races < res.Score.Rejections/2 || len(con) > 10 {
		t.Errorf("contention: %d refusals in %d rows; want most of the %d refusals (claim races) in a few rows", races, len(con)-1, res.Score.Rejections)
	}
	rule := column(t, con, "rule")
	found := false
	for _, r := range con[1:] {
		found = found || r[rule] == "task ‹task› is already in_progress by ‹member›"
		if strings.Contains(r[rule], `"p`) || regexp.MustCompile(`m000\d\d`).MatchString(r[rule]) {
			t.Errorf("a contention rule names an item or member: %q", r[rule])
		}
	}
	if !found {
		t.Errorf("no contention row for claims of a task already in progress: %q", con)
	}
	for _, table := range [][][]string{pol, oth} {
		for _, r := range table[1:] {
			if strings.Contains(strings.Join(r, " "), "already in_progress") {
				t.Errorf("a claim race is filed outside contention: %q", r)
			}
		}
	}

	// Why: failed goals and late tasks, each with its reasons.
	failed := 0
	for _, p := range res.Score.Projects {
		if !p.Completed {
			failed++
		}
	}
	if failed == 0 {
		t.Fatal("the test needs a portfolio run where some project missed its bonus")
	}
	if n := got.Counts["#why-goals .why.goal"]; n != min(failed, 20) {
		t.Errorf("the why section explains %d projects, want %d of the %d that missed their bonus", n, min(failed, 20), failed)
	}
	if got.Counts["#why-goals .why.goal li"] == 0 || got.Counts["#why-tasks .why.task li"] == 0 {
		t.Errorf("the why section lists no waits: %v", got.Counts)
	}
	if n := got.Counts["#why-tasks .why.task"]; n == 0 || n > 30 {
		t.Errorf("the why section explains %d late tasks, want 1 to 30", n)
	}
	for _, want := range []string{"waited", "ready for", "before", "claimed it"} {
		if !strings.Contains(got.Texts["why-goals"]+got.Texts["why-tasks"], want) {
			t.Errorf("the why section never says %q (trace's sentences): %.500s", want, got.Texts["why-tasks"])
		}
	}
	// Late colours: done late apart from open past deadline.
	if got.Counts[".dag g.node.done-late"] == 0 {
		t.Errorf("no DAG node marked done late: %v", got.Counts)
	}
	if got.Counts[".dag g.node.late"] != got.Counts[".dag g.node.done-late"]+got.Counts[".dag g.node.overdue"] {
		t.Errorf("late nodes are not each done-late or overdue: %v", got.Counts)
	}
	// Members: a role each.
	mem := got.Tables["members"]
	role := column(t, mem, "role")
	for _, r := range mem[1:] {
		if r[role] == "" {
			t.Errorf("member %s has no role in the table", r[0])
		}
	}
}

// TestReportExplainsSupportDesk: the SLA broken down by priority, queue and
// arrival stream adds up to the scorecard; the outage and the leave are
// marked on every time chart; the approvals are shown by approver and an
// approver's decisions count in the members table; working time is written
// for people.
func TestReportExplainsSupportDesk(t *testing.T) {
	chromium(t)
	data := t.TempDir()
	res := cliResult(t, "run", "--world", "support-desk", "--seed", "2", "--data", data, "--json")
	var sels []string
	for _, chart := range []string{"gantt", "queues", "reward", "approvals"} {
		for _, kind := range []string{"outage", "leave"} {
			sels = append(sels, fmt.Sprintf("#%s svg rect.interruption.%s", chart, kind))
		}
	}
	got := renderReport(t, data, res.Session, "explains-support-desk", sels...)

	for _, s := range sels {
		if got.Counts[s] != 1 {
			t.Errorf("%s: %d bands, want 1 (support-desk has one outage and one leave)", s, got.Counts[s])
		}
	}
	for _, id := range []string{"sla-priority", "sla-queue", "sla-stream"} {
		rows := got.Tables[id]
		if n := sumColumn(t, rows, "tickets"); n != res.Score.Tickets {
			t.Errorf("%s: %d tickets, want the scorecard's %d", id, n, res.Score.Tickets)
		}
		if n := sumColumn(t, rows, "within SLA"); n != res.Score.TicketsInSLA {
			t.Errorf("%s: %d within SLA, want the scorecard's %d", id, n, res.Score.TicketsInSLA)
		}
		if n := sumColumn(t, rows, "breaches"); n != res.Score.SLABreaches {
			t.Errorf("%s: %d breaches, want the scorecard's %d", id, n, res.Score.SLABreaches)
		}
	}
	var streams []string
	for _, r := range got.Tables["sla-stream"][1:] {
		streams = append(streams, r[0])
	}
	if want := "(urgent interruptions) billing general outage-report refund"; strings.Join(streams, " ") != want {
		t.Errorf("SLA streams %q, want %q", streams, want)
	}
	if len(got.Tables["sla-priority"]) < 3 {
		t.Errorf("SLA by priority has %d rows, want the world's priorities", len(got.Tables["sla-priority"])-1)
	}

	// Approvals by approver, and credit for deciding them.
	decided := countByActor(t, data, res.Session, "approval.granted")
	for m, n := range countByActor(t, data, res.Session, "approval.rejected") {
		decided[m] += n
	}
	if len(decided) == 0 {
		t.Fatal("the test needs a support-desk run with approvals")
	}
	desks := got.Tables["approvers"]
	mem := got.Tables["members"]
	dc, mc, del := column(t, desks, "decided by them"), column(t, mem, "approvals decided"), column(t, mem, "delivered")
	rows := map[string][]string{}
	for _, r := range mem[1:] {
		rows[r[0]] = r
	}
	approverWithoutDelivery := false
	for m, n := range decided {
		r := rows[m]
		if r == nil || atoi(t, r[mc]) != n {
			t.Errorf("member %s decided %d approval steps; the members table shows %q", m, n, r)
			continue
		}
		approverWithoutDelivery = approverWithoutDelivery || r[del] == "0.00"
		onDesk := false
		for _, d := range desks[1:] {
			if d[0] == m {
				onDesk = atoi(t, d[dc]) > 0
			}
		}
		if !onDesk {
			t.Errorf("approver %s is not in the approvers table with decisions: %q", m, desks)
		}
	}
	if !approverWithoutDelivery {
		t.Log("note: every approver also delivered work in this run")
	}
	// Working time for people: "2h18m", never "2.3h".
	bc := column(t, mem, "blocked others (working time)")
	for _, r := range mem[1:] {
		if !regexp.MustCompile(`^(\d+d)?(\d+h)?(\d+m)?$`).MatchString(r[bc]) || r[bc] == "" {
			t.Errorf("member %s blocked others %q; want working time like 2h18m", r[0], r[bc])
		}
	}
	// The same session gives the same bytes, analysis and all.
	if a, b := mustCLI(t, "report", res.Session, "--data", data, "-o", "-"), mustCLI(t, "report", res.Session, "--data", data, "-o", "-"); a != b || len(a) < 10_000 {
		t.Errorf("two reports of one session differ (%d and %d bytes)", len(a), len(b))
	}
	// Where the lost value went: corpsim diagnose's causes, row for row.
	var diag struct {
		Lost   float64 `json:"lost"`
		Causes []struct {
			Cause  string  `json:"cause"`
			Points float64 `json:"points"`
		} `json:"causes"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, "diagnose", res.Session, "--data", data, "--json")), &diag); err != nil {
		t.Fatal(err)
	}
	causes := got.Tables["causes"]
	if len(causes) != len(diag.Causes)+1 || len(diag.Causes) == 0 {
		t.Fatalf("the causes table %q; want diagnose's %d causes", causes, len(diag.Causes))
	}
	pc := column(t, causes, "points lost")
	for i, c := range diag.Causes {
		if r := causes[i+1]; r[0] != c.Cause || r[pc] != fmt.Sprintf("%.2f", c.Points) {
			t.Errorf("cause row %d is %q; diagnose says %s %.2f", i, r, c.Cause, c.Points)
		}
	}
	if !strings.Contains(got.Texts["interruptions"], "2 interruptions") {
		t.Errorf("the interruption note says %q", got.Texts["interruptions"])
	}
}

// TestReportOfAFork: a fork's header names its parent, its fork point and
// its own seed, not the root session's.
func TestReportOfAFork(t *testing.T) {
	chromium(t)
	data := t.TempDir()
	parent := cliResult(t, "run", "--world", "startup", "--seed", "1", "--data", data, "--json")
	fork := cliResult(t, "fork", parent.Session, "--at", "100", "--seed", "3", "--data", data, "--json")
	got := renderReport(t, data, fork.Session, "explains-fork")
	hdr, fk := got.Texts["header"], got.Texts["fork"]
	for _, want := range []string{"fork of " + parent.Session, "at event #100", "continued with seed 3", "recorded seed 1"} {
		if !strings.Contains(fk, want) {
			t.Errorf("the fork line %q lacks %q", fk, want)
		}
	}
	if !strings.Contains(hdr, "startup · seed 3 · load") || strings.Contains(hdr, "startup · seed 1") {
		t.Errorf("the header shows %q; want the fork's seed 3, not the parent's 1", hdr)
	}
	// The parent's own report says nothing of a fork.
	if p := renderReport(t, data, parent.Session, "explains-fork-parent"); p.Texts["fork"] != "" || !strings.Contains(p.Texts["header"], "startup · seed 1 ·") {
		t.Errorf("the parent's header: %q, fork line %q", p.Texts["header"], p.Texts["fork"])
	}
}

// TestReportCreditsApproversAndAnswers: on procurement, approvers who
// deliver nothing themselves show the approval steps they decided, and the
// colleagues who answer questions the answers they gave, as the log counts
// them.
func TestReportCreditsApproversAndAnswers(t *testing.T) {
	chromium(t)
	data := t.TempDir()
	res := cliResult(t, "run", "--world", "procurement", "--seed", "1", "--data", data, "--json")
	got := renderReport(t, data, res.Session, "explains-procurement")
	decided := countByActor(t, data, res.Session, "approval.granted")
	for m, n := range countByActor(t, data, res.Session, "approval.rejected") {
		decided[m] += n
	}
	answers := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(mustCLI(t, "log", res.Session, "--data", data, "--type", "message.sent")), "\n") {
		var ev struct {
			Actor   string `json:"actor"`
			Payload struct {
				ReplyTo string `json:"reply_to"`
				Topic   string `json:"topic"`
			} `json:"payload"`
		}
		if line == "" {
			continue
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Payload.ReplyTo != "" || ev.Payload.Topic != "" {
			answers[ev.Actor]++
		}
	}
	mem := got.Tables["members"]
	dc, ac, del := column(t, mem, "approvals decided"), column(t, mem, "answers given"), column(t, mem, "delivered")
	approverOnly, answerer := false, false
	for _, r := range mem[1:] {
		m := r[0]
		if d := atoi(t, r[dc]); d != decided[m] {
			t.Errorf("%s: the table shows %d approvals decided, the log %d", m, d, decided[m])
		}
		if a := atoi(t, r[ac]); a != answers[m] {
			t.Errorf("%s: the table shows %d answers given, the log %d", m, a, answers[m])
		}
		approverOnly = approverOnly || (r[del] == "0.00" && decided[m] > 0)
		answerer = answerer || answers[m] > 0
	}
	if !approverOnly || !answerer {
		t.Errorf("want an approver who delivered nothing (%v) and a member who answered (%v) in procurement: %q", approverOnly, answerer, mem)
	}
}
