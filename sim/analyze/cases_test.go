package analyze_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/analyze"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

// mustClaims plays the shipped claims world (cases, an inspector NPC,
// approvals by amount, a director on leave) with greedy agents and loads
// the log for analysis.
func mustClaims(tb testing.TB, seed uint64) *analyze.Session {
	tb.Helper()
	src, err := worlds.Source("claims")
	if err != nil {
		tb.Fatal(err)
	}
	w, err := worlds.Load("claims.yaml", src)
	if err != nil {
		tb.Fatal(err)
	}
	return playLoaded(tb, w, src, seed)
}

// playLoaded plays world w (from src) with seed and greedy agents and
// loads the log for analysis.
func playLoaded(tb testing.TB, w *worlds.World, src []byte, seed uint64) *analyze.Session {
	tb.Helper()
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: seed, Session: "s"})
	if err != nil {
		tb.Fatal(err)
	}
	e.Start()
	evs := simtest.Events(tb, e)
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

func stepOf(ct *analyze.CaseTrace, step string) *analyze.CaseStepTrace {
	for i := range ct.Steps {
		if ct.Steps[i].Step == step {
			return &ct.Steps[i]
		}
	}
	return nil
}

// TestCaseTraceTellsTheStory: trace --case of a case with an inspection
// shows the inspector's per-case answer (its attributes and the hidden fact
// drawn for it), the ask and who asked, the approvals of its decision and
// each step's doer; a case without one lists the inspection as skipped.
func TestCaseTraceTellsTheStory(t *testing.T) {
	s := mustClaims(t, 1)
	var inspected, skipped *org.Case
	for _, c := range s.State.Cases {
		if !c.Done() {
			continue
		}
		if inspected == nil && s.State.Task(org.StepTaskID(c.ID, "inspect")) != nil {
			inspected = c
		}
		if skipped == nil && len(c.Skipped) > 0 {
			skipped = c
		}
	}
	if inspected == nil || skipped == nil {
		t.Fatalf("claims seed 1: no done case with an inspection (%v) or without one (%v)", inspected, skipped)
	}
	ct, err := s.Case(inspected.ID)
	if err != nil {
		t.Fatal(err)
	}
	st := stepOf(ct, "inspect")
	if st == nil || st.NPC != "olga" || st.DoneBy != "olga" {
		t.Fatalf("inspect step = %+v, want one done by the NPC olga", st)
	}
	if len(st.Asks) == 0 || len(st.Answers) == 0 {
		t.Fatalf("inspect step: %d asks, %d answers; want both", len(st.Asks), len(st.Answers))
	}
	ans := st.Answers[0]
	if ans.From != "olga" || ans.To != st.Asks[0].From || ans.Text == "" {
		t.Errorf("answer = %+v, want olga's answer to %s", ans, st.Asks[0].From)
	}
	// The answer is per case: another inspected case got another one.
	for _, c := range s.State.Cases {
		if c == inspected || s.State.Task(org.StepTaskID(c.ID, "inspect")) == nil {
			continue
		}
		if o, err := s.Case(c.ID); err == nil {
			if a := stepOf(o, "inspect").Answers; len(a) > 0 && a[0].Text == ans.Text {
				t.Errorf("cases %s and %s got the same answer %q", inspected.ID, c.ID, ans.Text)
			}
			break
		}
	}
	if len(inspected.Facts) == 0 || fmt.Sprint(ct.HiddenFacts) != fmt.Sprint(inspected.Facts) {
		t.Errorf("hidden facts = %v, want the case's facts %v", ct.HiddenFacts, inspected.Facts)
	}
	var facts []string
	for _, k := range slices.Sorted(maps.Keys(inspected.Facts)) {
		facts = append(facts, fmt.Sprintf("%s=%v", k, inspected.Facts[k]))
	}
	if d := stepOf(ct, "decide"); d == nil || len(d.Approvals) == 0 || d.Approvals[0].Status != org.RequestApproved {
		t.Errorf("decide step = %+v, want an approved approval", d)
	}
	for _, step := range ct.Steps {
		if step.Done == nil || step.DoneBy != s.State.Task(step.Task).DoneBy {
			t.Errorf("step %s: done %v by %q, want the state's doer %q", step.Task, step.Done, step.DoneBy, s.State.Task(step.Task).DoneBy)
		}
	}
	var npcWait bool
	for _, d := range ct.Waits {
		if d.Kind == analyze.DelayDependency {
			t.Errorf("case waits list an in-case dependency: %+v", d)
		}
		npcWait = npcWait || (d.Kind == analyze.DelayNPC && d.Task == st.Task && d.Who == "olga")
	}
	if !npcWait {
		t.Errorf("waits %+v: none for olga's answer", ct.Waits)
	}
	var buf bytes.Buffer
	ct.WriteText(&buf)
	out := buf.String()
	for _, want := range []string{ans.Text, "hidden facts  " + strings.Join(facts, ", "), "asked", st.Asks[0].From, "approval " + stepOf(ct, "decide").Approvals[0].Request} {
		if !strings.Contains(out, want) {
			t.Errorf("trace text lacks %q:\n%s", want, out)
		}
	}

	ct, err = s.Case(skipped.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stepOf(ct, "inspect") != nil || len(ct.Skipped) != 1 || ct.Skipped[0] != "inspect" {
		t.Errorf("case %s: steps %v, skipped %v; want inspect skipped", skipped.ID, ct.Steps, ct.Skipped)
	}
	if _, err := s.Case("no-such-case"); err == nil {
		t.Error("Case(no-such-case) gave no error")
	}
}

// TestCasesSummary: the summary's counts and mean lead time are the
// rubric's, the p90 is at least the mean, and every breached case is
// listed (or counted) with where it waited.
func TestCasesSummary(t *testing.T) {
	s := mustClaims(t, 1)
	sc := policies.Score(s.State)
	sum := s.Cases(1000)
	if sum.Cases != sc.Cases || sum.Done != sc.CasesDone || sum.InSLA != sc.CasesInSLA {
		t.Errorf("summary %d/%d/%d, rubric %d/%d/%d (cases/done/in SLA)", sum.Cases, sum.Done, sum.InSLA, sc.Cases, sc.CasesDone, sc.CasesInSLA)
	}
	if len(sum.Templates) != len(sc.Templates) {
		t.Fatalf("templates %v, rubric's %v", sum.Templates, sc.Templates)
	}
	for i, tc := range sum.Templates {
		r := sc.Templates[i]
		if tc.Template != r.Template || tc.Done != r.Done || tc.Breached != r.Breached || tc.Mean.MS != r.LeadTime {
			t.Errorf("template %+v, rubric's %+v", tc, r)
		}
		if tc.Done > 0 && (tc.P90.MS < tc.Mean.MS || tc.Mean.MS == 0) {
			t.Errorf("template %s: mean %s, p90 %s", tc.Template, tc.Mean.Text, tc.P90.Text)
		}
	}
	cases := 0
	for _, p := range sum.ByPriority {
		cases += p.Cases
	}
	if cases != sum.Cases {
		t.Errorf("by priority %d cases, want %d", cases, sum.Cases)
	}
	listed := map[string]analyze.LateCase{}
	for _, l := range sum.Late {
		listed[l.Case] = l
	}
	breached := 0
	for _, c := range s.State.Cases {
		if !c.Breached {
			continue
		}
		breached++
		l, ok := listed[c.ID]
		if !ok {
			t.Errorf("breached case %s is not listed", c.ID)
			continue
		}
		if len(l.AtSLA)+len(l.Waits) == 0 {
			t.Errorf("breached case %s: no waits and nothing open at its SLA", c.ID)
		}
	}
	if breached == 0 {
		t.Fatal("claims seed 1 with greedy breached no case: the test shows nothing")
	}
	few := s.Cases(1)
	if len(few.Late) != 1 || few.LateOmitted != len(sum.Late)-1 {
		t.Errorf("Cases(1): %d listed, %d omitted; want 1 and %d", len(few.Late), few.LateOmitted, len(sum.Late)-1)
	}
	var buf bytes.Buffer
	sum.WriteText(&buf)
	if first := sum.Late[0]; !strings.Contains(buf.String(), "case "+first.Case) {
		t.Errorf("summary text lacks case %s:\n%s", first.Case, buf.String())
	}
}

// TestCaseTraceShowsSeparationRefusals: with cheaters, who try to decide
// or approve across the separation rules, the trace of a case names each
// refusal on its steps with its rule, as the log records it.
func TestCaseTraceShowsSeparationRefusals(t *testing.T) {
	src, err := worlds.Source("claims")
	if err != nil {
		t.Fatal(err)
	}
	w, err := worlds.Load("claims.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: 1, Session: "s"})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	cheaters := map[string]*agents.Cheater{}
	var evs []events.Event
	decide := func(turn sim.Turn) (sim.Answer, bool) {
		c := cheaters[turn.Member]
		if c == nil {
			c = &agents.Cheater{}
			cheaters[turn.Member] = c
		}
		acts, _ := c.Decide(context.Background(), turn.Observation)
		return sim.Answer{Member: turn.Member, Turn: turn.Observation.Turn, Actions: acts}, true
	}
	if err := sim.Play(e, func(b []events.Event) bool { evs = append(evs, b...); return true }, decide, 0); err != nil {
		t.Fatal(err)
	}
	s, err := analyze.Load(func(yield func(events.Event, error) bool) {
		for _, ev := range evs {
			if !yield(ev, nil) {
				return
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	// The separation refusals of the log, by case.
	want := map[string][]string{}
	for _, ev := range evs {
		if ev.Type != payload.EvActionRejected {
			continue
		}
		var p payload.ActionRejected
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(p.Rule, "separation/") {
			continue
		}
		task := p.Action.Task
		if r := s.State.Request(p.Action.Request); task == "" && r != nil {
			task = r.Task
		}
		if tk := s.State.Task(task); tk != nil && tk.Case != "" {
			want[tk.Case] = append(want[tk.Case], p.Rule+" "+p.Reason)
		}
	}
	if len(want) == 0 {
		t.Fatal("the cheaters on claims seed 1 met no separation rule: the test shows nothing")
	}
	for _, id := range slices.Sorted(maps.Keys(want)) {
		ct, err := s.Case(id)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, st := range ct.Steps {
			for _, r := range st.Refusals {
				if strings.HasPrefix(r.Rule, "separation/") {
					got = append(got, r.Rule+" "+r.Reason)
				}
			}
		}
		slices.Sort(got)
		w := slices.Clone(want[id])
		slices.Sort(w)
		if !slices.Equal(got, w) {
			t.Errorf("case %s: refusals %q, the log's %q", id, got, w)
		}
		var buf bytes.Buffer
		ct.WriteText(&buf)
		if !strings.Contains(buf.String(), "refused") || !strings.Contains(buf.String(), "separation/") {
			t.Errorf("case %s: the text names no separation refusal:\n%s", id, buf.String())
		}
	}
}

// mustClaimsEdited is mustClaims on the claims world with edit applied to
// its source.
func mustClaimsEdited(tb testing.TB, seed uint64, edit func(string) string) *analyze.Session {
	tb.Helper()
	src, err := worlds.Source("claims")
	if err != nil {
		tb.Fatal(err)
	}
	src = []byte(edit(string(src)))
	w, err := worlds.Load("claims.yaml", src)
	if err != nil {
		tb.Fatal(err)
	}
	return playLoaded(tb, w, src, seed)
}

// checkCasesAddUp fails unless d's lost value is the world's possible
// value (tasks, projects and cases) minus the team score, and its causes'
// points add up to it.
func checkCasesAddUp(t *testing.T, s *analyze.Session, d *analyze.Diagnosis) {
	t.Helper()
	possible := 0.0
	for _, tk := range s.State.AllTasks() {
		possible += tk.Value
	}
	for _, p := range s.World.Projects {
		possible += p.Value
	}
	for _, c := range s.State.Cases {
		possible += c.Value
	}
	if want := possible - policies.Score(s.State).TeamScore; d.Lost < 0 || math.Abs(d.Lost-want) > 1e-6 {
		t.Errorf("lost %v; want possible %v - team score = %v", d.Lost, possible, want)
	}
	sum := 0.0
	for _, c := range d.Causes {
		sum += c.Points
	}
	if math.Abs(sum-d.Lost) > 1e-5 {
		t.Errorf("causes add up to %v; want the lost %v (%+v)", sum, d.Lost, d.Causes)
	}
}

// TestDiagnoseCases: in the claims world the cases' lost value is
// diagnosed and adds up; the time inspections waited for the inspector,
// before and after she was asked, is put down to npc_not_asked and npc,
// naming her.
func TestDiagnoseCases(t *testing.T) {
	s := mustClaims(t, 1)
	d := s.Diagnose()
	checkCasesAddUp(t, s, d)
	for _, name := range []string{analyze.CauseNPC, analyze.CauseNotAsked} {
		c, ok := cause(d, name)
		if !ok || c.Hours <= 0 || len(c.Detail) == 0 || c.Detail[0].What != "olga" {
			t.Errorf("cause %s = %+v (%v); want hours on olga", name, c, ok)
		}
	}
}

// adjusterLine is a one-line member entry of the adjuster role.
var adjusterLine = regexp.MustCompile(`(?m)^  - \{id: \w+,[^}\n]*role: adjuster[,}].*\n`)

// TestDiagnoseSeparation: with one adjuster left, who assesses the claims
// and so may not decide them (a rule: the assessor does not decide), their
// decisions wait for no one: the diagnosis says so, naming the rule.
func TestDiagnoseSeparation(t *testing.T) {
	s := mustClaimsEdited(t, 1, func(src string) string {
		lines := adjusterLine.FindAllString(src, -1)
		if len(lines) < 2 {
			t.Fatalf("claims has %d one-line adjuster members; the test needs at least 2", len(lines))
		}
		for _, l := range lines[1:] {
			src = strings.Replace(src, l, "", 1)
		}
		return src
	})
	rule := ""
	for _, r := range s.World.Separation {
		if slices.Contains(r.Did, "assess") && slices.Contains(r.NotDo, "decide") {
			rule = r.ID
		}
	}
	if rule == "" {
		t.Fatal("claims has no rule barring an assessor from deciding")
	}
	d := s.Diagnose()
	checkCasesAddUp(t, s, d)
	c, ok := cause(d, analyze.CauseSeparation)
	if !ok || c.Points <= 0 || len(c.Detail) == 0 || !strings.Contains(c.Detail[0].What, "rule "+rule) {
		t.Errorf("cause separation = %+v (%v); want points on rule %s (%+v)", c, ok, rule, d.Causes)
	}
}

// A ticket that waited in a queue its simulated colleagues serve says who
// of them could take it and what they held meanwhile; it named no one
// ("its role serves no one on its queue") before colleagues counted. The
// desk is support-desk-bench's (20 colleagues, format 5: most tickets are
// served in the ticket.resolved of the one before).
func TestWaitNamesTheColleaguesWhoServeTheQueue(t *testing.T) {
	w, src := simtest.DeskWorld(t, 2000)
	s := playLoaded(t, w, src, 3)
	named := 0
	for _, task := range s.State.AllTasks() {
		tr, err := s.Task(task.ID)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(tr.Summary, "serves no one") {
			t.Fatalf("%s: %s", task.ID, tr.Summary)
		}
		if strings.Contains(tr.Summary, "members who could take it: s") {
			named++
		}
	}
	if named == 0 {
		t.Fatal("no waiting ticket named the colleagues who could take it")
	}
	t.Logf("%d of %d tickets name the colleagues who could take them", named, len(s.State.AllTasks()))
}

// TestCompareCountsCases: diff of two sessions of a world of cases shows
// their cases (done, within SLA, breached) and the outcome score beside
// the ticket and task rows, each side's as its scorecard has it. It
// showed none: two billing-support runs compared by their 0 tasks and
// tickets alone.
func TestCompareCountsCases(t *testing.T) {
	src := simtest.Source(t, "billing-support")
	w, err := worlds.Load("billing-support.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	a, b := playLoaded(t, w, src, 1), playLoaded(t, w, src, 2)
	d := analyze.Compare(a, b)
	for i, s := range []*analyze.Session{a, b} {
		sc, side := policies.Score(s.State), d.Sides[i]
		breached := 0
		for _, tpl := range sc.Templates {
			breached += tpl.Breached
		}
		if side.Cases == 0 || side.Cases != sc.Cases || side.CasesDone != sc.CasesDone || side.CasesInSLA != sc.CasesInSLA || side.CaseBreaches != breached {
			t.Errorf("side %d: cases %d, done %d, within SLA %d, breached %d; the scorecard's %d, %d, %d, %d",
				i, side.Cases, side.CasesDone, side.CasesInSLA, side.CaseBreaches, sc.Cases, sc.CasesDone, sc.CasesInSLA, breached)
		}
		if side.OutcomeMax == 0 || side.Outcome != sc.Outcome || side.OutcomeMax != sc.OutcomeMax || side.WrongOutcomes != sc.WrongOutcomes || side.Collateral != sc.Collateral {
			t.Errorf("side %d: outcome %g of %g, %d wrong, %d collateral; the scorecard's %g of %g, %d, %d",
				i, side.Outcome, side.OutcomeMax, side.WrongOutcomes, side.Collateral, sc.Outcome, sc.OutcomeMax, sc.WrongOutcomes, sc.Collateral)
		}
	}
	var text strings.Builder
	d.WriteText(&text)
	A, B := d.Sides[0], d.Sides[1]
	rows := map[string]string{}
	for _, line := range strings.Split(text.String(), "\n") {
		if name, vals, ok := strings.Cut(line, "  "); ok {
			rows[name] = strings.Join(strings.Fields(vals), " ")
		}
	}
	for name, want := range map[string]string{
		"cases done":        fmt.Sprintf("%d/%d %d/%d", A.CasesDone, A.Cases, B.CasesDone, B.Cases),
		"cases within SLA":  fmt.Sprintf("%d %d", A.CasesInSLA, B.CasesInSLA),
		"case SLA breaches": fmt.Sprintf("%d %d", A.CaseBreaches, B.CaseBreaches),
		"outcome score":     fmt.Sprintf("%.2f/%.0f %.2f/%.0f", A.Outcome, A.OutcomeMax, B.Outcome, B.OutcomeMax),
		"wrong outcomes":    fmt.Sprintf("%d %d", A.WrongOutcomes, B.WrongOutcomes),
		"collateral writes": fmt.Sprintf("%d %d", A.Collateral, B.Collateral),
	} {
		if rows[name] != want {
			t.Errorf("diff's row %q reads %q, want %q:\n%s", name, rows[name], want, text.String())
		}
	}
}

// Sessions of two worlds are said to be so: their first events differ,
// and a divergence "at seq 1" alone reads like two runs that parted at once.
func TestCompareOtherWorlds(t *testing.T) {
	a := mustClaims(t, 1)
	src := simtest.Source(t, "billing-support")
	w, err := worlds.Load("billing-support.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	analyze.Compare(a, playLoaded(t, w, src, 1)).WriteText(&text)
	if !strings.Contains(text.String(), "the sessions are of different worlds (claims and billing-support)") {
		t.Errorf("diff of claims and billing-support does not say they are of other worlds:\n%s", text.String())
	}
	text.Reset()
	analyze.Compare(a, mustClaims(t, 2)).WriteText(&text)
	if strings.Contains(text.String(), "different worlds") {
		t.Errorf("diff of two claims sessions says they are of different worlds:\n%s", text.String())
	}
}

// TestDiagnoseCountsCasesOnce: a case's steps are diagnosed with their
// case, so the items counted are the case (once) beside the tasks and
// tickets outside cases, as the items that lost value are: a claims run
// whose every failed item is a case or a project task is out of those.
func TestDiagnoseCountsCasesOnce(t *testing.T) {
	s := mustClaims(t, 1)
	d := s.Diagnose()
	want := len(s.State.Cases)
	for _, tk := range s.State.AllTasks() {
		if tk.Case == "" {
			want++
		}
	}
	if d.Items != want || d.Failed > d.Items || d.Failed == 0 {
		t.Errorf("diagnosis counts %d items, %d failed; want %d items (%d cases and the tasks outside them), and some but not more failed",
			d.Items, d.Failed, want, len(s.State.Cases))
	}
}
