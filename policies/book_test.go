package policies_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
)

// TestBookRefusesAsTheSet: the default Set compiled into a Book refuses
// every action exactly as the Set does (the same rule, the same reason),
// in states where nine default rules refuse something: every member, every
// action type, every task and request. It holds the Book's filing, its
// order and its use of the rules' unexported checks to the Set. A default
// rule's Check filters by its own Acts, so its check of the types it does
// not list is nil by construction; what each list must hold is pinned by
// TestBookFilesEachRuleByWhatItRefuses (sim), which plays every shipped
// world.
func TestBookRefusesAsTheSet(t *testing.T) {
	states := map[string]func(testing.TB) *org.State{
		"start":        atStart,
		"spec done":    func(tb testing.TB) *org.State { return specDone(tb).state() },
		"api half":     apiHalfDone,
		"r1 requested": func(tb testing.TB) *org.State { return serversRequested(tb).state() },
		"r2 half":      kitHalfApproved,
		"budget cut": func(tb testing.TB) *org.State {
			w := mustWorld(tb, "budget: 20000", "budget: 10000")
			return newScript(tb, w).do("alice", "spec").do("bob", "build-servers").do("bob", "ci").
				claim("bob", "load-test-kit").work("bob", "load-test-kit", 2*clock.Hour).
				request("bob", "r2", "load-test-kit", 8000, "lead:alice", "finance:frank").grant("alice", "r2", 0).grant("frank", "r2", 1).state()
		},
		"frank's stand-in beyond the limit": func(tb testing.TB) *org.State {
			return kitAskedOfStandIn(tb, "5000", org.RequestStep{Role: "finance", Approver: "frank"})
		},
		"case c1 with intake by hana": func(tb testing.TB) *org.State {
			s := openClaim(newScript(tb, caseRubricWorld(tb)))
			caseDo(s, "hana", "intake", clock.Hour)
			caseDo(s, "sara", "assess", clock.Hour)
			s.claim("ivan", "c1.decide").work("ivan", "c1.decide", 30*clock.Minute)
			return s.add(payload.EvApprovalRequested, "ivan", payload.ApprovalRequested{Request: "r1", Task: "c1.decide", Chain: "payouts", Amount: 4000,
				Steps: []org.RequestStep{{Role: "senior", Approver: "tom"}}}).
				tamper(func(st *org.State) { st.Request("r1").Steps[0].Approver = "sara" }).state()
		},
	}
	acts := []string{org.ActClaim, org.ActWork, org.ActComplete, org.ActRequestApproval, org.ActApprove, org.ActReject,
		org.ActMessage, org.ActWait, org.ActHandoff, org.ActEscalate, org.ActOpenCase, org.ActDecide, org.ActReopen,
		org.ActScheduleMeeting, org.ActGet, org.ActSearch, org.ActUpdate, org.ActCreate, org.ActDelete}
	set := policies.Default()
	book := set.Compile()
	refusedBy := map[string]int{} // rule -> refusals seen
	for name, state := range states {
		s := state(t)
		var tasks, requests []string
		for _, tk := range s.Tasks() {
			tasks = append(tasks, tk.ID)
		}
		for _, r := range s.Requests {
			requests = append(requests, r.ID)
		}
		for _, m := range s.Members {
			for _, typ := range acts {
				for _, task := range append(tasks, "") {
					for _, req := range append(requests, "") {
						for _, to := range []string{"", "carol", "hana"} {
							a := org.Action{Type: typ, Task: task, Request: req, To: to}
							want := set.Check(s, m.ID, &a)
							got := book.Check(s, m.ID, &a)
							if !reflect.DeepEqual(got, want) {
								t.Fatalf("%s: %s's %+v: the Book says %v, the Set %v", name, m.ID, a, got, want)
							}
							if want != nil {
								refusedBy[want.Rule]++
							}
							for _, r := range set {
								if sc, ok := r.(policies.Scoped); ok && !slices.Contains(sc.Acts(), typ) {
									if rej := r.Check(s, m.ID, &a); rej != nil {
										t.Fatalf("%s: %s refuses %s's %+v, a type it does not list: %v", name, r.Name(), m.ID, a, rej)
									}
								}
							}
						}
					}
				}
			}
		}
	}
	// The states are not idle: the rules refused many of these actions,
	// and each of these rules some.
	for _, rule := range []string{"role-required", "dependencies-first", "work-done", "approval-required", "within-budget",
		"separation-of-duties", "approver-authority", "delegation-limit", "separation/assessor"} {
		if refusedBy[rule] == 0 {
			t.Errorf("rule %s refused nothing in these states (refusals: %v)", rule, refusedBy)
		}
	}
}

// TestBookAsksOnlyTheRulesOfTheType: a Book asks a scoped rule only about
// the types it lists, and a rule that is not Scoped about every action, in
// the Set's order.
func TestBookAsksOnlyTheRulesOfTheType(t *testing.T) {
	var asked []string
	set := policies.Set{
		scopedRule{askedRule{name: "claims", acts: []string{org.ActClaim}, asked: &asked}},
		askedRule{name: "any", asked: &asked},
		scopedRule{askedRule{name: "claims and work", acts: []string{org.ActClaim, org.ActWork}, asked: &asked}},
	}
	book := set.Compile()
	for _, tt := range []struct {
		typ  string
		want []string
	}{
		{org.ActClaim, []string{"claims", "any", "claims and work"}},
		{org.ActWork, []string{"any", "claims and work"}},
		{org.ActMessage, []string{"any"}},
	} {
		asked = nil
		book.Check(nil, "bob", &org.Action{Type: tt.typ})
		if !slices.Equal(asked, tt.want) {
			t.Errorf("%s: asked %v, want %v", tt.typ, asked, tt.want)
		}
	}
}

type askedRule struct {
	name  string
	acts  []string
	asked *[]string
}

func (r askedRule) Name() string { return r.name }

func (r askedRule) Check(*org.State, string, *org.Action) *org.Rejection {
	*r.asked = append(*r.asked, r.name)
	return nil
}

// scopedRule is an askedRule that lists the types it concerns.
type scopedRule struct{ askedRule }

func (r scopedRule) Acts() []string { return r.acts }
