package policies_test

import (
	"math"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/worlds"
)

// caseRubricSrc: a claim is taken in by a handler, assessed by a senior,
// decided by a handler with a senior's approval above 1000 (by someone
// other than the assessor) and paid out by a handler other than the one
// who took it in; it is worth 10 and
// due a working day after it opens, decaying by half per working day late.
const caseRubricSrc = `version: 2
name: caserubric
start: 2026-01-05T09:00:00Z
horizon: 10d
roles: [{id: handler}, {id: senior}]
teams: [{id: t, budget: 100000}]
members:
  - {id: hana, role: handler, team: t}
  - {id: ivan, role: handler, team: t}
  - {id: sara, role: senior, team: t}
  - {id: tom, role: senior, team: t}
queues: [{id: q, served_by: [handler, senior]}]
approvals:
  - {id: payouts, attribute: amount, steps: [{role: senior, above: 1000}]}
cases:
  - id: claim
    queue: q
    value: 10
    deadline: 1d
    attributes:
      amount: {amount: {min: 100, max: 6000}}
    steps:
      - {id: intake, role: handler, effort: 1h, value: 2}
      - {id: assess, role: senior, effort: 1h, deps: [intake]}
      - {id: decide, role: handler, effort: 30m, deps: [assess], approval: payouts}
      - {id: pay, role: handler, effort: 15m, deps: [decide], charge: amount}
separation:
  - {id: assessor, template: claim, did: [assess], not_do: [decide], not_approve: [decide]}
  - {id: four-eyes, template: claim, distinct: [intake, pay]}
scoring: {late_half_life: 1d}
`

func caseRubricWorld(tb testing.TB) *worlds.World {
	tb.Helper()
	w, err := worlds.Load("caserubric.yaml", []byte(caseRubricSrc))
	if err != nil {
		tb.Fatal(err)
	}
	return w
}

// openClaim adds the case.opened of claim c1 with amount 4000.
func openClaim(s *script) *script {
	steps := []payload.TaskSpec{
		{ID: "c1.intake", Title: "intake", Role: "handler", Effort: clock.Hour, Value: 2, Case: "c1", Step: "intake"},
		{ID: "c1.assess", Title: "assess", Role: "senior", Effort: clock.Hour, Deps: []string{"c1.intake"}, Case: "c1", Step: "assess"},
		{ID: "c1.decide", Title: "decide", Role: "handler", Effort: 30 * clock.Minute, Deps: []string{"c1.assess"}, Chain: "payouts", Amount: 4000, Case: "c1", Step: "decide"},
		{ID: "c1.pay", Title: "pay", Role: "handler", Effort: 15 * clock.Minute, Deps: []string{"c1.decide"}, Purchase: 4000, Case: "c1", Step: "pay"},
	}
	return s.add(payload.EvCaseOpened, "", payload.CaseOpened{Case: "c1", Template: "claim", Title: "claim c1", Queue: "q", Team: "t", Value: 10,
		Deadline: s.w.Calendar.AddWork(clock.Time(s.now), 8*clock.Hour), Attributes: payload.Attrs{"amount": int64(4000)}, Steps: steps})
}

// caseDo claims, works the effort of and completes a step of c1, and
// moves the clock on by the effort.
func caseDo(s *script, member, step string, d clock.Duration) *script {
	s.claim(member, "c1."+step).work(member, "c1."+step, d)
	return s.at(int64(s.w.Calendar.AddWork(clock.Time(s.now), d))).complete(member, "c1."+step)
}

// decideWith does the decision by decider, approved through request r1 by approver.
func decideWith(s *script, decider, approver string) *script {
	s.claim(decider, "c1.decide").work(decider, "c1.decide", 30*clock.Minute)
	s.add(payload.EvApprovalRequested, decider, payload.ApprovalRequested{Request: "r1", Task: "c1.decide", Chain: "payouts", Amount: 4000,
		Steps: []org.RequestStep{{Role: "senior", Approver: approver}}})
	return s.grant(approver, "r1", 0).complete(decider, "c1.decide")
}

func TestScoreCases(t *testing.T) {
	tests := []struct {
		name    string
		play    func(s *script) *script
		done    bool    // the case counts
		value   float64 // its value
		intake  bool    // the intake step (worth 2) counts
		verdict string  // what Verify says of the step named in step ("" when it verifies)
		step    string
	}{
		{"every step verified", func(s *script) *script {
			caseDo(s, "hana", "intake", clock.Hour)
			caseDo(s, "sara", "assess", clock.Hour)
			decideWith(s, "ivan", "tom")
			return caseDo(s, "ivan", "pay", 15*clock.Minute)
		}, true, 10, true, "", "pay"},
		{"a step not done", func(s *script) *script {
			caseDo(s, "hana", "intake", clock.Hour)
			caseDo(s, "sara", "assess", clock.Hour)
			return decideWith(s, "ivan", "tom")
		}, false, 0, true, "", "decide"},
		// Apply does not enforce the policies: a step that a live engine
		// refuses can be in a log (an engine with other rules, or an edited
		// log); the rubric still refuses to count it.
		{"a step done by a member of the wrong role", func(s *script) *script {
			caseDo(s, "hana", "intake", clock.Hour)
			caseDo(s, "ivan", "assess", clock.Hour)
			decideWith(s, "hana", "sara")
			return caseDo(s, "ivan", "pay", 15*clock.Minute)
		}, false, 0, true, "completed by ivan, who does not hold role senior", "assess"},
		// The live rule refuses it; a log made under other rules holds it.
		{"intake and payout by one member, against four eyes", func(s *script) *script {
			caseDo(s, "hana", "intake", clock.Hour)
			caseDo(s, "sara", "assess", clock.Hour)
			decideWith(s, "ivan", "tom")
			return caseDo(s, "hana", "pay", 15*clock.Minute)
		}, false, 0, true, "separation rule four-eyes (four eyes): hana did step intake of case c1, so may not do step pay", "pay"},
		{"an approval by the assessor, whom separation bars", func(s *script) *script {
			caseDo(s, "hana", "intake", clock.Hour)
			caseDo(s, "sara", "assess", clock.Hour)
			decideWith(s, "ivan", "tom")
			caseDo(s, "ivan", "pay", 15*clock.Minute)
			// Routing passes sara over, so Apply refuses her as the approver;
			// a tampered state carries her anyway.
			return s.tamper(func(st *org.State) {
				st.Request("r1").Steps[0].Approver = "sara"
			})
		}, false, 0, true, "separation rule assessor: sara did step assess of case c1, so may not approve step decide", "decide"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openClaim(newScript(t, caseRubricWorld(t)))
			tt.play(s)
			st := s.state()
			c := st.Case("c1")
			if got := policies.CaseDone(st, c); got != tt.done {
				t.Errorf("CaseDone: got %v, want %v", got, tt.done)
			}
			if got := policies.CaseValue(st, c); got != tt.value {
				t.Errorf("CaseValue: got %v, want %v", got, tt.value)
			}
			if got := policies.Verify(st, st.Task("c1."+tt.step)); !strings.Contains(got, tt.verdict) || (tt.verdict == "") != (got == "") {
				t.Errorf("Verify(%s): got %q, want %q", tt.step, got, tt.verdict)
			}
			sc := policies.Score(st)
			wantDone := 0
			if tt.done {
				wantDone = 1
			}
			if sc.Cases != 1 || sc.CasesDone != wantDone || len(sc.Templates) != 1 || sc.Templates[0].Done != wantDone {
				t.Errorf("scorecard: cases %d done %d templates %+v, want 1 case, %d done", sc.Cases, sc.CasesDone, sc.Templates, wantDone)
			}
			// The step done first is not undone by a later one that broke a rule.
			if why := policies.Verify(st, st.Task("c1.intake")); (why == "") != tt.intake {
				t.Errorf("Verify(intake): %q, want it to count: %v", why, tt.intake)
			}
			want := tt.value
			if tt.intake {
				want += 2
			}
			if math.Abs(sc.Delivered-want) > 1e-9 {
				t.Errorf("delivered %v, want %v", sc.Delivered, want)
			}
			if sum := deltaSum(s); s.edits == nil && math.Abs(sum-sc.TeamScore) > 1e-6 {
				t.Errorf("dense rewards sum to %v, team score %v", sum, sc.TeamScore)
			}
		})
	}
}

// TestScoreLateCase: a case done past its deadline earns its value halved
// per late_half_life (1d) of working time late, and the dense rewards
// carry the same.
func TestScoreLateCase(t *testing.T) {
	for _, tt := range []struct {
		late clock.Duration
		want float64
	}{{0, 10}, {4 * clock.Hour, 10 / math.Sqrt2}, {8 * clock.Hour, 5}, {16 * clock.Hour, 2.5}} {
		s := openClaim(newScript(t, caseRubricWorld(t)))
		deadline := s.w.Calendar.AddWork(0, 8*clock.Hour)
		caseDo(s, "hana", "intake", clock.Hour)
		caseDo(s, "sara", "assess", clock.Hour)
		decideWith(s, "ivan", "tom")
		s.claim("ivan", "c1.pay").work("ivan", "c1.pay", 15*clock.Minute)
		s.at(int64(s.w.Calendar.AddWork(deadline, tt.late))).complete("ivan", "c1.pay")
		st := s.state()
		got := policies.CaseValue(st, st.Case("c1"))
		if math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s late: value %v, want %v", tt.late, got, tt.want)
		}
		sc := policies.Score(st)
		if math.Abs(sc.Delivered-(tt.want+2)) > 1e-6 { // and the intake's 2, on time
			t.Errorf("%s late: delivered %v, want %v", tt.late, sc.Delivered, tt.want+2)
		}
		if sum := deltaSum(s); math.Abs(sum-sc.TeamScore) > 1e-6 {
			t.Errorf("%s late: dense rewards sum to %v, team score %v", tt.late, sum, sc.TeamScore)
		}
		if lt := sc.Templates[0].LeadTime; lt != s.w.Calendar.WorkBetween(0, st.Case("c1").DoneAt) {
			t.Errorf("%s late: lead time %s", tt.late, lt)
		}
	}
}
