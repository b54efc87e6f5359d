package sim_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

// caseSrc is a small claims office: claims arrive every hour for 4h;
// inspections by olga (an NPC, 1h to answer) for amounts above 3000,
// which are priority 2 (SLA 4h; others 1d); home claims are assessed by a
// senior; payouts above 1000 approved by a senior, by someone other than
// the assessor; the payout charges the amount; max (sales) may open one
// claim of at most 5000.
const caseSrc = `version: 2
name: casetest
start: 2026-01-05T09:00:00Z
horizon: 3d
roles: [{id: handler}, {id: senior}, {id: inspector}, {id: sales}]
teams: [{id: t, budget: 1000000}]
members:
  - {id: hana, role: handler, team: t}
  - {id: ivan, role: handler, team: t}
  - {id: sara, role: senior, team: t}
  - {id: tom, role: senior, team: t}
  - {id: max, role: sales, team: t}
  - {id: olga, role: inspector, team: t, npc: {reply: {min: 1h, max: 1h}}}
queues: [{id: q, served_by: [handler, senior]}]
approvals:
  - {id: payouts, attribute: amount, steps: [{role: senior, above: 1000}]}
cases:
  - id: claim
    title: "Claim {{.ref}}"
    queue: q
    value: 10
    deadline: 2d
    sla: {1: 1d, 2: 4h}
    priority: "amount > 3000 ? 2 : 1"
    attributes:
      amount: {amount: {min: 100, max: 6000}}
      line: {one_of: {motor: 1, home: 1}}
      ref: {text: "C-{{.case}}"}
    facts:
      damage: {one_of: [found, none]}
    open: {roles: [sales], quota: 1, bounds: {amount: {min: 100, max: 5000}}}
    steps:
      - {id: intake, role: handler, effort: 1h}
      - {id: inspect, npc: olga, when: amount > 3000, deps: [intake], answer: "Inspection of {{.ref}}: damage {{.damage}}, amount {{.amount}}"}
      - {id: assess, role: handler, role_by: {attribute: line, map: {home: senior}}, effort: 1h, deps: [intake, inspect]}
      - {id: decide, role: handler, effort: 30m, deps: [assess], approval: payouts}
      - {id: pay, role: handler, effort: 15m, deps: [decide], charge: amount}
separation:
  - {id: assessor, template: claim, did: [assess], not_do: [decide], not_approve: [decide]}
  - {id: four-eyes, template: claim, distinct: [intake, pay]}
arrivals:
  - {id: a, case: claim, process: scheduled, at: [0s, 1h, 2h, 3h, 4h, 5h, 6h, 7h]}
`

func caseWorld(tb testing.TB, edits ...string) (*worlds.World, []byte) {
	tb.Helper()
	src := caseSrc
	for i := 0; i+1 < len(edits); i += 2 {
		if strings.Count(src, edits[i]) != 1 {
			tb.Fatalf("edit %q does not occur once", edits[i])
		}
		src = strings.Replace(src, edits[i], edits[i+1], 1)
	}
	w, err := worlds.Load("casetest.yaml", []byte(src))
	if err != nil {
		tb.Fatal(err)
	}
	return w, []byte(src)
}

func caseEngine(tb testing.TB, seed uint64, edits ...string) *sim.Engine {
	tb.Helper()
	w, src := caseWorld(tb, edits...)
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: seed, Session: "s"})
	if err != nil {
		tb.Fatal(err)
	}
	e.Start()
	return e
}

func idle(o org.Observation) sim.Answer {
	return sim.Answer{Member: o.Member, Turn: o.Turn, Actions: []org.Action{}}
}

// openedCases decodes the log's case.opened events.
func openedCases(tb testing.TB, evs []events.Event) []payload.CaseOpened {
	tb.Helper()
	var out []payload.CaseOpened
	for _, ev := range evs {
		if ev.Type == payload.EvCaseOpened {
			var p payload.CaseOpened
			mustJSON(tb, ev.Payload, &p)
			out = append(out, p)
		}
	}
	return out
}

// TestCaseAttributesDeterministic: a case's attributes and facts are drawn
// from the seed: the same seed opens the same cases byte for byte, another
// seed other ones.
func TestCaseAttributesDeterministic(t *testing.T) {
	opened := func(seed uint64) []string {
		var out []string
		for _, ev := range drive(t, caseEngine(t, seed), idle, false, 0) {
			if ev.Type == payload.EvCaseOpened {
				out = append(out, string(ev.Payload))
			}
		}
		return out
	}
	a, b, c := opened(1), opened(1), opened(2)
	if len(a) != 8 {
		t.Fatalf("got %d cases, want 8 (one per scheduled arrival)", len(a))
	}
	if !slices.Equal(a, b) {
		t.Errorf("seed 1 twice: the case.opened events differ:\n%s\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	if slices.Equal(a, c) {
		t.Errorf("seeds 1 and 2 open the same cases:\n%s", strings.Join(a, "\n"))
	}
}

// TestCaseOpenedFollowsTheTemplate: over a few seeds, every case has the
// inspection step iff its amount is above 3000 (and assess depends on it
// only then), home claims are assessed by a senior, the priority is the
// expression's and the SLA that priority's, the approval reads the amount
// without charging it and the payout charges it.
func TestCaseOpenedFollowsTheTemplate(t *testing.T) {
	w, _ := caseWorld(t)
	seen := map[string]int{}
	for seed := uint64(1); seed <= 4; seed++ {
		evs := drive(t, caseEngine(t, seed), idle, false, 0)
		mustReplay(t, evs)
		byCase := map[string]events.Event{}
		for _, ev := range evs {
			if ev.Type == payload.EvCaseOpened {
				var p payload.CaseOpened
				mustJSON(t, ev.Payload, &p)
				byCase[p.Case] = ev
			}
		}
		for _, p := range openedCases(t, evs) {
			at := clock.Time(byCase[p.Case].Time)
			amount, _ := p.Attributes.Int("amount")
			line, _ := p.Attributes["line"].(string)
			if amount < 100 || amount > 6000 || (line != "motor" && line != "home") {
				t.Errorf("%s: attributes %v out of their distributions", p.Case, p.Attributes)
			}
			if d, _ := p.Facts["damage"].(string); d != "found" && d != "none" {
				t.Errorf("%s: fact damage %q, want found or none", p.Case, d)
			}
			if got, want := p.Title, "Claim C-"+p.Case; got != want {
				t.Errorf("%s: title %q, want %q", p.Case, got, want)
			}
			steps := map[string]payload.TaskSpec{}
			for _, st := range p.Steps {
				steps[st.Step] = st
			}
			_, inspected := steps["inspect"]
			if big := amount > 3000; inspected != big {
				t.Errorf("%s (amount %d): inspect present %v, want %v", p.Case, amount, inspected, big)
			}
			wantDeps := []string{p.Case + ".intake"}
			if inspected {
				wantDeps = append(wantDeps, p.Case+".inspect")
				seen["inspected"]++
				if ins := steps["inspect"]; ins.NPC != "olga" || ins.Role != "inspector" || ins.Effort != 0 {
					t.Errorf("%s: inspect %+v, want olga's, as inspector, without effort", p.Case, ins)
				}
			} else {
				seen["skipped"]++
				if !slices.Equal(p.Skipped, []string{"inspect"}) {
					t.Errorf("%s: skipped %v, want [inspect]", p.Case, p.Skipped)
				}
			}
			if got := steps["assess"].Deps; !slices.Equal(got, wantDeps) {
				t.Errorf("%s: assess deps %v, want %v", p.Case, got, wantDeps)
			}
			wantRole := map[string]string{"motor": "handler", "home": "senior"}[line]
			if got := steps["assess"].Role; got != wantRole {
				t.Errorf("%s (%s): assess role %s, want %s", p.Case, line, got, wantRole)
			}
			seen[line]++
			wantPriority, wantSLA := 1, 8*clock.Hour
			if amount > 3000 {
				wantPriority, wantSLA = 2, 4*clock.Hour
			}
			if p.Priority != wantPriority {
				t.Errorf("%s (amount %d): priority %d, want %d", p.Case, amount, p.Priority, wantPriority)
			}
			if got := w.Calendar.WorkBetween(at, p.Due); got != wantSLA {
				t.Errorf("%s: due after %s of work, want %s (priority %d)", p.Case, got, wantSLA, p.Priority)
			}
			if got := w.Calendar.WorkBetween(at, p.Deadline); got != 16*clock.Hour {
				t.Errorf("%s: deadline after %s of work, want 2d", p.Case, got)
			}
			if d := steps["decide"]; d.Amount != amount || d.Purchase != 0 || d.Chain != "payouts" {
				t.Errorf("%s: decide amount %d purchase %d chain %q, want the amount %d read, nothing charged, payouts", p.Case, d.Amount, d.Purchase, d.Chain, amount)
			}
			if pay := steps["pay"]; pay.Purchase != amount || pay.Chain != "" {
				t.Errorf("%s: pay purchase %d chain %q, want %d and no chain", p.Case, pay.Purchase, pay.Chain, amount)
			}
		}
	}
	for _, k := range []string{"inspected", "skipped", "motor", "home"} {
		if seen[k] == 0 {
			t.Errorf("no case %s over 4 seeds (%v): the test does not cover both branches", k, seen)
		}
	}
}

// scripted plays one claim a-1 (amount 4000, so inspected; line as
// given) to its end by a script: hana does intake (first asking olga to
// inspect too early) and, for a motor claim, assess, then tries decide
// (barred: she assessed) and pay (barred: four eyes with intake); ivan
// tries to claim the inspection (not his role), decides, asks for the
// approval and pays; for a home claim sara assesses. Approvers approve
// what waits for them. It returns the log and the engine.
func scripted(t *testing.T, line string) ([]events.Event, *sim.Engine) {
	t.Helper()
	e := caseEngine(t, 1,
		"      amount: {amount: {min: 100, max: 6000}}\n", "      amount: {amount: 4000}\n",
		"line: {one_of: {motor: 1, home: 1}}", map[string]string{"motor": "line: {one_of: {motor: 1, home: 0}}", "home": "line: {one_of: {motor: 0, home: 1}}"}[line],
		"at: [0s, 1h, 2h, 3h, 4h, 5h, 6h, 7h]", "at: [0s]")
	st := e.State()
	task := func(step string) *org.Task { return st.Task("a-1." + step) }
	done := func(step string) bool { tk := task(step); return tk != nil && tk.Status == org.StatusDone }
	tried := map[string]bool{}
	once := func(key string) bool {
		if tried[key] {
			return false
		}
		tried[key] = true
		return true
	}
	// do takes step to completion for member: claim and work, then
	// complete (asking for its approval first when it needs one).
	do := func(member, step string) []org.Action {
		tk := task(step)
		switch {
		case tk == nil || tk.Status == org.StatusDone:
			return nil
		case tk.Assignee != member:
			return []org.Action{{Type: org.ActClaim, Task: tk.ID}, {Type: org.ActWork, Task: tk.ID}}
		case tk.Spec.Chain != "" && tk.Request == "":
			return []org.Action{{Type: org.ActRequestApproval, Task: tk.ID}}
		case tk.Spec.Chain != "" && st.Request(tk.Request).Status != org.RequestApproved:
			return nil
		}
		return []org.Action{{Type: org.ActComplete, Task: tk.ID}}
	}
	assessor := "hana"
	if line == "home" {
		assessor = "sara"
	}
	decide := func(o org.Observation) []org.Action {
		var acts []org.Action
		if task("intake") == nil {
			return nil
		}
		switch o.Member {
		case "hana":
			if once("ask early") {
				acts = append(acts, org.Action{Type: org.ActMessage, To: "olga", Task: "a-1.inspect", Text: "please inspect"})
			}
			if !done("intake") {
				return append(acts, do("hana", "intake")...)
			}
			if task("inspect").Status != org.StatusDone && once("ask") {
				acts = append(acts, org.Action{Type: org.ActMessage, To: "olga", Task: "a-1.inspect", Text: "please inspect a-1"})
			}
			if assessor == "hana" && done("inspect") && !done("assess") {
				more := do("hana", "assess")
				acts = append(acts, more...)
				// Right after completing assess, in the same turn.
				if len(more) == 1 && more[0].Type == org.ActComplete && once("decide") {
					acts = append(acts, org.Action{Type: org.ActClaim, Task: "a-1.decide"})
				}
			}
			if done("decide") && once("pay") {
				acts = append(acts, org.Action{Type: org.ActClaim, Task: "a-1.pay"})
			}
		case "ivan":
			if once("claim inspect") {
				acts = append(acts, org.Action{Type: org.ActClaim, Task: "a-1.inspect"})
			}
			// ivan decides once hana has tried to (for a motor claim).
			if done("assess") && (tried["decide"] || assessor != "hana") {
				if !done("decide") {
					acts = append(acts, do("ivan", "decide")...)
				} else if tried["pay"] {
					acts = append(acts, do("ivan", "pay")...)
				}
			}
		case "sara", "tom":
			if o.Member == assessor && done("inspect") && !done("assess") {
				acts = append(acts, do(o.Member, "assess")...)
			}
			for _, r := range o.Approvals {
				acts = append(acts, org.Action{Type: org.ActApprove, Request: r.ID})
			}
			if o.Member == "sara" && assessor == "sara" && len(st.Requests) > 0 && once("approve across") {
				acts = append(acts, org.Action{Type: org.ActApprove, Request: st.Requests[0].ID})
			}
		}
		return acts
	}
	evs := drive(t, e, func(o org.Observation) sim.Answer {
		return sim.Answer{Member: o.Member, Turn: o.Turn, Actions: append([]org.Action{}, decide(o)...)}
	}, false, 0)
	// Once assess is done, a separation rule hides the decision from whom it bars.
	at := stateAt(t, st.World, evs, completedEvent("a-1.assess"))
	for _, m := range []string{"hana", "ivan"} {
		offered := slices.ContainsFunc(at.View(m).Available, func(v org.TaskView) bool { return v.ID == "a-1.decide" })
		if want := m != assessor; offered != want {
			t.Errorf("after assess by %s, %s is offered the decision: %v, want %v", assessor, m, offered, want)
		}
	}
	return evs, e
}

// rejections lists the log's refusals as "member action task/request: rule: reason".
func rejections(tb testing.TB, evs []events.Event) []string {
	tb.Helper()
	var out []string
	for _, ev := range evs {
		if ev.Type == payload.EvActionRejected {
			var p payload.ActionRejected
			mustJSON(tb, ev.Payload, &p)
			out = append(out, fmt.Sprintf("%s %s %s%s: %s: %s", ev.Actor, p.Action.Type, p.Action.Task, p.Action.Request, p.Rule, p.Reason))
		}
	}
	return out
}

// stateAt applies evs to a new state of w up to and including the first
// event for which stop is true.
func stateAt(tb testing.TB, w *worlds.World, evs []events.Event, stop func(events.Event) bool) *org.State {
	tb.Helper()
	st := org.New(w)
	for _, ev := range evs {
		if err := st.Apply(ev); err != nil {
			tb.Fatalf("apply %s: %v", ev.Type, err)
		}
		if stop(ev) {
			return st
		}
	}
	tb.Fatal("stateAt: no event to stop at")
	return nil
}

func completedEvent(task string) func(events.Event) bool {
	return func(ev events.Event) bool {
		return ev.Type == payload.EvTaskCompleted && strings.Contains(string(ev.Payload), `"task":"`+task+`"`)
	}
}

// TestCaseStepsScripted plays a motor claim by script: the refusals name
// the right rules and steps, olga performs the inspection an hour after
// she is asked and answers with the case's facts, the decision charges
// nothing and the payout the amount, the case is done with its last step,
// its SLA breach is recorded, and the log replays to the same state.
func TestCaseStepsScripted(t *testing.T) {
	evs, e := scripted(t, "motor")
	mustReplayLive(t, e, evs)
	w := e.State().World
	wantRefusals := []string{
		`hana message a-1.inspect: : step "a-1.inspect" waits on a-1.intake`,
		`ivan claim a-1.inspect: : step "a-1.inspect" is performed by olga when asked: send it a message naming the task`,
		`hana claim a-1.decide: separation/assessor: separation rule assessor: hana did step assess of case a-1, so may not do step decide`,
		`hana claim a-1.pay: separation/four-eyes: separation rule four-eyes (four eyes): hana did step intake of case a-1, so may not do step pay`,
	}
	if got := rejections(t, evs); !slices.Equal(got, wantRefusals) {
		t.Errorf("refusals:\ngot  %s\nwant %s", strings.Join(got, "\n     "), strings.Join(wantRefusals, "\n     "))
	}
	st := e.State()
	c := st.Case("a-1")
	// The NPC: asked by m1, it performs the step after its reply latency
	// (1h) and answers with the case's attributes and its drawn fact.
	var asked, performed clock.Time
	var answer payload.MessageSent
	for _, ev := range evs {
		switch {
		case ev.Type == payload.EvMessageSent && ev.Actor == "hana":
			var p payload.MessageSent
			mustJSON(t, ev.Payload, &p)
			if p.Task == "a-1.inspect" {
				asked = clock.Time(ev.Time)
			}
		case ev.Type == payload.EvMessageSent && ev.Actor == "olga":
			mustJSON(t, ev.Payload, &answer)
		case completedEvent("a-1.inspect")(ev):
			if ev.Actor != "olga" {
				t.Errorf("a-1.inspect completed by %s, want olga", ev.Actor)
			}
			performed = clock.Time(ev.Time)
		}
	}
	if asked == 0 || performed != w.Calendar.AddWork(asked, clock.Hour) {
		t.Errorf("olga asked at %d, performed at %d; want an hour of work later", asked, performed)
	}
	want := fmt.Sprintf("Inspection of C-a-1: damage %s, amount 4000", c.Facts["damage"])
	if answer.To != "hana" || answer.ReplyTo != "m1" || answer.Text != want {
		t.Errorf("olga's answer: got %+v, want %q to hana in reply to m1", answer, want)
	}
	// Money: the decision reads the amount and charges nothing; the payout charges it.
	if got := stateAt(t, w, evs, completedEvent("a-1.decide")).Budget("t").Spent; got != 0 {
		t.Errorf("after the decision, spent %d, want 0", got)
	}
	beforePay := stateAt(t, w, evs, completedEvent("a-1.decide"))
	if beforePay.Case("a-1").Done() {
		t.Error("the case is done before its last step")
	}
	if r := st.Request(st.Task("a-1.decide").Request); r == nil || r.Amount != 4000 || r.Chain != "payouts" || r.Status != org.RequestApproved {
		t.Errorf("the decision's request %+v: want payouts approving the claim's 4000", r)
	}
	if got := st.Budget("t").Spent; got != 4000 {
		t.Errorf("after the payout, spent %d, want 4000", got)
	}
	if pay := st.Task("a-1.pay"); !c.Done() || c.DoneAt != pay.DoneAt {
		t.Errorf("case done at %d, its last step at %d", c.DoneAt, pay.DoneAt)
	}
	// Priority 2 (4000 > 3000): due after 4h, long before this case is done.
	breaches := 0
	for _, ev := range evs {
		if ev.Type == payload.EvSLABreached {
			var p payload.SLABreached
			mustJSON(t, ev.Payload, &p)
			if p.Case != "a-1" || clock.Time(ev.Time) != c.Due+1 {
				t.Errorf("breach %+v at %d, want case a-1 at %d", p, ev.Time, c.Due+1)
			}
			breaches++
		}
	}
	if breaches != 1 || !c.Breached {
		t.Errorf("breaches: %d, case breached %v; want 1, true", breaches, c.Breached)
	}
	// The scorecard: the case is done (its value earned) but not within its SLA.
	sc := policies.Score(st)
	wantSLA := []policies.PrioritySLA{{Priority: 2, Cases: 1, SLABreaches: 1}}
	ts := sc.Templates
	if sc.CasesDone != 1 || sc.CasesInSLA != 0 || !slices.Equal(sc.SLAByPriority, wantSLA) ||
		len(ts) != 1 || ts[0].Done != 1 || ts[0].Breached != 1 || ts[0].InSLA != 0 || ts[0].Value != 10 {
		t.Errorf("scorecard: done %d in SLA %d by priority %+v templates %+v; want the case done, breached, by priority %+v, worth 10",
			sc.CasesDone, sc.CasesInSLA, sc.SLAByPriority, ts, wantSLA)
	}
}

// TestCaseSeparationRoutesAround: a senior who assessed a home claim is
// passed over when its payout decision is routed for approval, and the
// separation rule would refuse her approving it.
func TestCaseSeparationRoutesAround(t *testing.T) {
	evs, e := scripted(t, "home")
	mustReplayLive(t, e, evs)
	st := e.State()
	if by := st.Task("a-1.assess").DoneBy; by != "sara" {
		t.Fatalf("assess done by %s, want sara", by)
	}
	r := st.Request(st.Task("a-1.decide").Request)
	if r == nil || r.Steps[0].Approver != "tom" {
		t.Fatalf("decide's request %+v: want it routed to tom, sara being barred", r)
	}
	rej := policies.Default().Check(st, "sara", &org.Action{Type: org.ActApprove, Request: r.ID})
	want := "separation rule assessor: sara did step assess of case a-1, so may not approve step decide"
	if rej == nil || rej.Rule != "separation/assessor" || rej.Reason != want {
		t.Errorf("sara approving %s: got %+v, want separation/assessor: %s", r.ID, rej, want)
	}
	if rej := policies.Default().Check(st, "tom", &org.Action{Type: org.ActApprove, Request: r.ID}); rej != nil && strings.HasPrefix(rej.Rule, "separation") {
		t.Errorf("tom approving: refused by %s", rej.Rule)
	}
}

// TestOpenCase: max (sales) may open one claim with attributes within
// their bounds; an unknown template, amounts out of bounds, a second claim
// (the quota is 1) and a handler opening one are refused, the policy ones
// by rule open-case.
func TestOpenCase(t *testing.T) {
	e := caseEngine(t, 1, "at: [0s, 1h, 2h, 3h, 4h, 5h, 6h, 7h]", "at: [1d]")
	attrs := func(a payload.Attrs) payload.ActionAttrs { return payload.NewActionAttrs(a) }
	evs := drive(t, e, func(o org.Observation) sim.Answer {
		ans := sim.Answer{Member: o.Member, Turn: o.Turn, Actions: []org.Action{}}
		if o.Turn != 1 {
			return ans
		}
		switch o.Member {
		case "max":
			if len(o.Open) != 1 || o.Open[0].Template != "claim" || o.Open[0].Left != 1 {
				t.Errorf("max may open %+v, want one claim", o.Open)
			}
			ans.Actions = []org.Action{
				{Type: org.ActOpenCase, Template: "claims"},
				{Type: org.ActOpenCase, Template: "claim", Attributes: attrs(payload.Attrs{"amount": int64(9000)})},
				{Type: org.ActOpenCase, Template: "claim", Attributes: attrs(payload.Attrs{"line": "boat"})},
				{Type: org.ActOpenCase, Template: "claim", Attributes: attrs(payload.Attrs{"damage": "found"})},
				{Type: org.ActOpenCase, Template: "claim", Attributes: attrs(payload.Attrs{"amount": int64(2500), "line": "home"})},
				{Type: org.ActOpenCase, Template: "claim"},
			}
		case "hana":
			if len(o.Open) != 0 {
				t.Errorf("hana may open %+v, want nothing", o.Open)
			}
			ans.Actions = []org.Action{{Type: org.ActOpenCase, Template: "claim"}}
		}
		return ans
	}, false, 0)
	mustReplayLive(t, e, evs)
	want := []string{
		`hana open_case : open-case: hana (handler) may not open claim cases`,
		`max open_case : : no case template "claims"`,
		`max open_case : open-case: attribute amount = 9000 is outside its bounds [100, 5000]`,
		`max open_case : open-case: attribute line = boat is not one of its values`,
		`max open_case : : template claim has no attribute "damage"`,
		`max open_case : open-case: max has opened 1 claim cases, its quota`,
	}
	if got := rejections(t, evs); !slices.Equal(got, want) {
		t.Errorf("refusals:\ngot  %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
	var cases []payload.CaseOpened
	for _, p := range openedCases(t, evs) {
		if p.Arrival == "" {
			cases = append(cases, p)
		}
	}
	if len(cases) != 1 {
		t.Fatalf("got %d cases opened by members, want 1: %+v", len(cases), cases)
	}
	p := cases[0]
	if amount, _ := p.Attributes.Int("amount"); p.Case != "claim-max-1" || p.OpenedBy != "max" || amount != 2500 ||
		p.Attributes["line"] != "home" || p.Attributes["ref"] != "C-claim-max-1" || p.Arrival != "" {
		t.Errorf("opened %+v, want claim-max-1 by max with amount 2500, line home, ref drawn", p)
	}
	// Opened cases are worked like any other: the home claim's assessment is a senior's.
	if got := e.State().Task("claim-max-1.assess").Spec.Role; got != "senior" {
		t.Errorf("claim-max-1.assess role %s, want senior", got)
	}
}

// TestOpenCaseDrawsWithinBounds: the amounts a member does not give are
// drawn within the template's open bounds (here [100, 200], narrower
// than the distribution's [100, 6000]).
func TestOpenCaseDrawsWithinBounds(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		e := caseEngine(t, seed, "max: 5000}", "max: 200}", "quota: 1", "quota: 0")
		var n int
		for _, p := range openedCases(t, drive(t, e, greedy, false, 400)) {
			if p.OpenedBy == "" {
				continue
			}
			n++
			if amount, _ := p.Attributes.Int("amount"); amount < 100 || amount > 200 {
				t.Errorf("seed %d: %s opened with amount %d, outside [100, 200]", seed, p.Case, amount)
			}
		}
		if n == 0 {
			t.Errorf("seed %d: max opened no case", seed)
		}
	}
}

func claimsEngine(tb testing.TB, seed uint64) *sim.Engine {
	tb.Helper()
	src, err := worlds.Source("claims")
	if err != nil {
		tb.Fatal(err)
	}
	e, _ := mustWorldEngine(tb, "claims.yaml", src, seed)
	e.Start()
	return e
}

// TestClaimsReplayAndRestore: a greedy claims session replays to its
// state hash, and engines restored from snapshots taken along it (with
// their cases) play on to the same log.
func TestClaimsReplayAndRestore(t *testing.T) {
	full := claimsEngine(t, 3)
	want := drive(t, full, greedy, false, 0)
	mustReplayLive(t, full, want)
	if n := len(full.State().Cases); n < 20 {
		t.Fatalf("claims opened %d cases, want a session full of them", n)
	}
	// A snapshot in the middle keeps the cases, their steps and what is done of them.
	mid := claimsEngine(t, 3)
	drive(t, mid, greedy, false, len(want)/2)
	r, err := org.Restore(mid.State().World, mid.State().Snapshot())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(r.Cases), len(mid.State().Cases); got != want || got == 0 {
		t.Fatalf("restored %d cases, want %d", got, want)
	}
	for i, c := range mid.State().Cases {
		rc := r.Case(c.ID)
		if rc == nil || !slices.Equal(rc.Steps, c.Steps) || rc.DoneAt != c.DoneAt || rc.Breached != c.Breached || r.Cases[i].ID != c.ID {
			t.Fatalf("case %s restored as %+v, want %+v", c.ID, rc, c)
		}
		for _, id := range c.Steps {
			if r.CaseOf(r.Task(id)) != rc {
				t.Fatalf("step %s restored without its case", id)
			}
		}
	}
	live := claimsEngine(t, 3)
	checkRestores(t, live, sim.Config{World: live.State().World, Seed: 3, Session: "s"}, 97, want, greedyAgents)
}

// TestCaseQueueBy: a template's queue_by sends home claims to queue q2
// and every other claim to its queue.
func TestCaseQueueBy(t *testing.T) {
	e := caseEngine(t, 1, "queues: [{id: q, served_by: [handler, senior]}]", "queues: [{id: q, served_by: [handler, senior]}, {id: q2, served_by: [handler, senior]}]",
		"    queue: q\n", "    queue: q\n    queue_by: {attribute: line, map: {home: q2}}\n")
	evs := drive(t, e, idle, false, 0)
	n := map[string]int{}
	for _, p := range openedCases(t, evs) {
		want := map[string]string{"home": "q2", "motor": "q"}[p.Attributes["line"].(string)]
		if p.Queue != want {
			t.Errorf("%s (%s): queue %s, want %s", p.Case, p.Attributes["line"], p.Queue, want)
		}
		if tk := e.State().Task(p.Steps[0].ID); tk.Queue != want {
			t.Errorf("%s: its step is in queue %s, want %s", p.Case, tk.Queue, want)
		}
		n[p.Queue]++
	}
	if n["q"] == 0 || n["q2"] == 0 {
		t.Errorf("cases by queue %v: want both queues used", n)
	}
}

// TestCaseArrivalsFollowTheirTeamsCalendar: cases of a template whose
// queue belongs to the Tokyo team arrive in Tokyo's working hours
// (09:00-17:00 JST, 00:00-08:00 UTC), not the first team's (09:00-17:00 UTC).
func TestCaseArrivalsFollowTheirTeamsCalendar(t *testing.T) {
	src := []byte(`version: 2
name: tokyo
start: 2026-01-05T09:00:00Z
horizon: 3d
roles: [{id: eng}, {id: ops}]
teams:
  - {id: home, budget: 100}
  - {id: tokyo, budget: 100, calendar: {hours: "09:00-17:00", timezone: Asia/Tokyo}}
members:
  - {id: alice, role: eng, team: home}
  - {id: kenji, role: ops, team: tokyo}
queues: [{id: q, served_by: [ops]}]
cases:
  - id: job
    queue: q
    steps: [{id: do, role: ops, effort: 1h}]
arrivals:
  - {id: a, case: job, process: scheduled, every: 3h}
`)
	e, w := mustWorldEngine(t, "tokyo.yaml", src, 1)
	e.Start()
	evs := drive(t, e, idle, false, 0)
	n := 0
	for _, ev := range evs {
		if ev.Type != payload.EvCaseOpened {
			continue
		}
		n++
		if h := w.Calendar.Wall(clock.Time(ev.Time)).UTC().Hour(); h >= 8 {
			t.Errorf("a case opened at %s, outside Tokyo's working hours", w.Calendar.Wall(clock.Time(ev.Time)).UTC().Format("Mon 15:04 UTC"))
		}
	}
	if n < 4 {
		t.Errorf("%d cases opened, want several", n)
	}
}

// TestOpenCaseUnderATightMessageLimit: a session whose message limit (8
// bytes) is shorter than a drawn text attribute ("C-claim-max-1") still
// opens a member's case (the engine panicked: the case.opened it emitted
// was refused by its own apply), while a text the member gives is held to
// the limit.
func TestOpenCaseUnderATightMessageLimit(t *testing.T) {
	w, src := caseWorld(t)
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: 1, Session: "s", Limits: org.Limits{MessageBytes: 8}})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	evs := drive(t, e, func(o org.Observation) sim.Answer {
		ans := sim.Answer{Member: o.Member, Turn: o.Turn, Actions: []org.Action{}}
		if o.Member == "max" && o.Turn == 1 {
			ans.Actions = []org.Action{
				{Type: org.ActOpenCase, Template: "claim", Attributes: payload.NewActionAttrs(payload.Attrs{"ref": "a reference too long"})},
				{Type: org.ActOpenCase, Template: "claim"},
			}
		}
		return ans
	}, false, 0)
	mustReplayLive(t, e, evs)
	want := []string{`max open_case : : attribute ref is 20 bytes; the limit is 8`}
	if got := rejections(t, evs); !slices.Equal(got, want) {
		t.Errorf("refusals %q, want %q", got, want)
	}
	if c := e.State().Case("claim-max-1"); c == nil || c.Attributes["ref"] != "C-claim-max-1" {
		t.Errorf("max's case: %+v, want claim-max-1 with ref C-claim-max-1", c)
	}
}

// TestNPCStepIsTheNPCs: a member holding the NPC's role (ines, an
// inspector serving the queue) is never offered an inspection, is refused
// claiming one, and one she did anyway does not verify; every inspection
// is olga's. She used to take them and complete them at once (they have no
// effort), skipping the external inspection, and the rubric counted them.
func TestNPCStepIsTheNPCs(t *testing.T) {
	e := caseEngine(t, 1, "  - {id: max, role: sales, team: t}\n", "  - {id: max, role: sales, team: t}\n  - {id: ines, role: inspector, team: t}\n",
		"queues: [{id: q, served_by: [handler, senior]}]", "queues: [{id: q, served_by: [handler, senior, inspector]}]")
	tried := false
	evs := drive(t, e, func(o org.Observation) sim.Answer {
		if o.Member != "ines" {
			return greedy(o)
		}
		ans := sim.Answer{Member: o.Member, Turn: o.Turn, Actions: []org.Action{}}
		for _, v := range append(slices.Clone(o.Available), o.Upcoming...) {
			if v.NPC != "" {
				t.Errorf("ines is offered %s, olga's step", v.ID)
			}
		}
		if tk := e.State().Task("a-2.inspect"); !tried && tk != nil && e.State().DepsDone(tk) {
			tried = true
			ans.Actions = []org.Action{{Type: org.ActClaim, Task: tk.ID}}
		}
		return ans
	}, false, 0)
	mustReplayLive(t, e, evs)
	want := []string{`ines claim a-2.inspect: : step "a-2.inspect" is performed by olga when asked: send it a message naming the task`}
	var got []string
	for _, r := range rejections(t, evs) {
		if strings.HasPrefix(r, "ines ") {
			got = append(got, r)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("ines's refusals %q, want %q", got, want)
	}
	st := e.State()
	n := 0
	for _, tk := range st.Tasks() {
		if tk.Spec.Step == "inspect" && tk.Status == org.StatusDone {
			n++
			if tk.DoneBy != "olga" {
				t.Errorf("%s done by %s, want olga", tk.ID, tk.DoneBy)
			}
			if why := policies.Verify(st, tk); why != "" {
				t.Errorf("%s: %s", tk.ID, why)
			}
			// Had ines done it, it would not count.
			tk.DoneBy = "ines"
			if why, want := policies.Verify(st, tk), "completed by ines; the step is olga's to perform"; why != want {
				t.Errorf("%s done by ines: Verify says %q, want %q", tk.ID, why, want)
			}
			tk.DoneBy = "olga"
		}
	}
	if n == 0 {
		t.Error("no inspection done")
	}
}

// TestNPCStepAfterAnNPCStep: a second inspection that depends only on
// the first (both olga's) is asked for by whoever asked for the first, and
// done; it was offered to nobody (the one to ask was whoever did a step it
// depends on: here an NPC), and its cases stalled.
func TestNPCStepAfterAnNPCStep(t *testing.T) {
	e := caseEngine(t, 1, `      - {id: assess, role: handler, role_by: {attribute: line, map: {home: senior}}, effort: 1h, deps: [intake, inspect]}`,
		`      - {id: recheck, npc: olga, when: amount > 3000, deps: [inspect], answer: "Rechecked {{.ref}}"}
      - {id: assess, role: handler, role_by: {attribute: line, map: {home: senior}}, effort: 1h, deps: [intake, recheck]}`)
	evs := drive(t, e, greedy, false, 0)
	mustReplayLive(t, e, evs)
	askers := map[string][]string{} // step -> who asked for it
	for _, ev := range evs {
		if ev.Type == payload.EvMessageSent {
			var p payload.MessageSent
			mustJSON(t, ev.Payload, &p)
			if p.Task != "" {
				askers[p.Task] = append(askers[p.Task], ev.Actor)
			}
		}
	}
	n := 0
	for _, c := range e.State().Cases {
		if tk := e.State().Task(org.StepTaskID(c.ID, "recheck")); tk != nil {
			first := askers[org.StepTaskID(c.ID, "inspect")]
			if got := askers[tk.ID]; len(got) != 1 || len(first) != 1 || got[0] != first[0] {
				t.Errorf("%s asked for by %v, the inspection by %v: want one ask, by the same member", tk.ID, got, first)
			}
			n++
			if tk.Status != org.StatusDone || tk.DoneBy != "olga" {
				t.Errorf("%s: %s by %q, want done by olga", tk.ID, tk.Status, tk.DoneBy)
			}
		}
	}
	if n == 0 {
		t.Fatal("no case with a recheck")
	}
}
