package policies_test

import (
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/worlds"
)

// Hand-built states for the rule tests.
func atStart(tb testing.TB) *org.State { return newScript(tb, nil).state() }

func specDone(tb testing.TB) *script { return newScript(tb, nil).do("alice", "spec") }

// apiHalfDone: bob has spent 8h of api's 24h.
func apiHalfDone(tb testing.TB) *org.State {
	return specDone(tb).claim("bob", "api").work("bob", "api", 8*clock.Hour).state()
}

// serversRequested: bob has done build-servers' work and asked for r1,
// waiting for alice (lead).
func serversRequested(tb testing.TB) *script {
	return specDone(tb).claim("bob", "build-servers").work("bob", "build-servers", 2*clock.Hour).
		request("bob", "r1", "build-servers", 3000, "lead:alice")
}

// kitHalfApproved: bob's r2 for load-test-kit's 8000 is granted by alice and
// waits for frank (finance).
func kitHalfApproved(tb testing.TB) *org.State {
	return newScript(tb, nil).claim("bob", "load-test-kit").
		request("bob", "r2", "load-test-kit", 8000, "lead:alice", "finance:frank").grant("alice", "r2", 0).state()
}

func TestRules(t *testing.T) {
	tests := []struct {
		name       string
		rule       policies.Rule
		state      func(testing.TB) *org.State
		member     string
		action     org.Action
		wantReason string // "" when the rule allows the action
	}{
		// role-required
		{"claim by the wrong role", policies.RoleRequired{}, atStart, "bob", org.Action{Type: org.ActClaim, Task: "spec"}, `task "spec" needs role "lead"; bob is "engineer"`},
		{"work by the wrong role", policies.RoleRequired{}, atStart, "dave", org.Action{Type: org.ActWork, Task: "api"}, `task "api" needs role "engineer"; dave is "designer"`},
		{"complete by the wrong role", policies.RoleRequired{}, atStart, "alice", org.Action{Type: org.ActComplete, Task: "docs"}, `task "docs" needs role "designer"; alice is "lead"`},
		{"claim by the right role", policies.RoleRequired{}, atStart, "alice", org.Action{Type: org.ActClaim, Task: "spec"}, ""},
		{"role does not govern messages", policies.RoleRequired{}, atStart, "bob", org.Action{Type: org.ActMessage, To: "alice", Task: "spec"}, ""},
		{"unknown task left to the engine", policies.RoleRequired{}, atStart, "bob", org.Action{Type: org.ActClaim, Task: "nope"}, ""},

		// dependencies-first
		{"work before the dependency", policies.DependenciesFirst{}, atStart, "bob", org.Action{Type: org.ActWork, Task: "api"}, `task "api" waits on spec, not done yet`},
		{"complete before two dependencies", policies.DependenciesFirst{}, func(tb testing.TB) *org.State { return specDone(tb).state() }, "bob", org.Action{Type: org.ActComplete, Task: "backend"}, `task "backend" waits on api, db-schema, not done yet`},
		{"claim ahead of dependencies", policies.DependenciesFirst{}, atStart, "bob", org.Action{Type: org.ActClaim, Task: "api"}, ""},
		{"work once dependencies are done", policies.DependenciesFirst{}, func(tb testing.TB) *org.State { return specDone(tb).state() }, "bob", org.Action{Type: org.ActWork, Task: "api"}, ""},

		// wip-limit (the backlog limited to 2 in progress)
		{"claim from a queue at its limit", policies.WIPLimit{}, func(tb testing.TB) *org.State {
			return newScript(tb, wip2(tb)).do("alice", "spec").claim("bob", "api").claim("carol", "db-schema").state()
		}, "erin", org.Action{Type: org.ActClaim, Task: "build-servers"}, "queue backlog already has 2 items in progress (limit 2)"},
		{"claim below the limit", policies.WIPLimit{}, func(tb testing.TB) *org.State {
			return newScript(tb, wip2(tb)).do("alice", "spec").claim("bob", "api").state()
		}, "carol", org.Action{Type: org.ActClaim, Task: "db-schema"}, ""},
		{"claim of blocked work under a limit", policies.WIPLimit{}, func(tb testing.TB) *org.State { return newScript(tb, wip2(tb)).state() },
			"bob", org.Action{Type: org.ActClaim, Task: "backend"}, "queue backlog limits its work in progress to 2 and takes ready work only: backend waits for api, db-schema"},
		{"claim of work made ready under a limit", policies.WIPLimit{}, func(tb testing.TB) *org.State { return newScript(tb, wip2(tb)).do("alice", "spec").state() },
			"bob", org.Action{Type: org.ActClaim, Task: "api"}, ""},
		{"claim of blocked work with no limit", policies.WIPLimit{}, atStart, "bob", org.Action{Type: org.ActClaim, Task: "backend"}, ""},

		// work-done
		{"complete with part of the effort", policies.WorkDone{}, apiHalfDone, "bob", org.Action{Type: org.ActComplete, Task: "api"}, `task "api" has 8h of 24h effort spent`},
		{"complete with no effort", policies.WorkDone{}, atStart, "alice", org.Action{Type: org.ActComplete, Task: "spec"}, `task "spec" has 0s of 8h effort spent`},
		{"complete with the whole effort", policies.WorkDone{}, func(tb testing.TB) *org.State {
			return newScript(tb, nil).claim("alice", "spec").work("alice", "spec", 8*clock.Hour).state()
		}, "alice", org.Action{Type: org.ActComplete, Task: "spec"}, ""},
		{"more work is allowed", policies.WorkDone{}, apiHalfDone, "bob", org.Action{Type: org.ActWork, Task: "api"}, ""},

		// approval-required
		{"purchase without a request", policies.ApprovalRequired{}, func(tb testing.TB) *org.State { return specDone(tb).state() }, "bob", org.Action{Type: org.ActComplete, Task: "build-servers"},
			`task "build-servers" buys for 3000, which needs approval by lead; no request was made`},
		{"two-step purchase without a request", policies.ApprovalRequired{}, atStart, "bob", org.Action{Type: org.ActComplete, Task: "load-test-kit"},
			`task "load-test-kit" buys for 8000, which needs approval by lead then finance; no request was made`},
		{"purchase with a pending request", policies.ApprovalRequired{}, func(tb testing.TB) *org.State { return serversRequested(tb).state() }, "bob", org.Action{Type: org.ActComplete, Task: "build-servers"},
			`task "build-servers" buys for 3000; its approval request r1 is pending`},
		{"purchase half approved", policies.ApprovalRequired{}, kitHalfApproved, "bob", org.Action{Type: org.ActComplete, Task: "load-test-kit"},
			`task "load-test-kit" buys for 8000; its approval request r2 is pending`},
		{"purchase with a rejected request", policies.ApprovalRequired{}, func(tb testing.TB) *org.State {
			return serversRequested(tb).reject("alice", "r1", 0, "too dear").state()
		},
			"bob", org.Action{Type: org.ActComplete, Task: "build-servers"}, `task "build-servers" buys for 3000; its approval request r1 is rejected`},
		{"purchase with an approved request", policies.ApprovalRequired{}, func(tb testing.TB) *org.State { return serversRequested(tb).grant("alice", "r1", 0).state() },
			"bob", org.Action{Type: org.ActComplete, Task: "build-servers"}, ""},
		{"no purchase, no approval", policies.ApprovalRequired{}, atStart, "alice", org.Action{Type: org.ActComplete, Task: "spec"}, ""},
		{"approval is not needed to claim", policies.ApprovalRequired{}, atStart, "bob", org.Action{Type: org.ActClaim, Task: "build-servers"}, ""},

		// within-budget (the team's budget cut to 10000)
		{"purchase over the budget left", policies.WithinBudget{}, func(tb testing.TB) *org.State {
			w := mustWorld(tb, "budget: 20000", "budget: 10000")
			return newScript(tb, w).do("alice", "spec").do("bob", "build-servers").state()
		}, "bob", org.Action{Type: org.ActComplete, Task: "load-test-kit"}, `task "load-test-kit" buys for 8000 but team product has 7000 left`},
		{"purchase within the budget", policies.WithinBudget{}, func(tb testing.TB) *org.State {
			return newScript(tb, mustWorld(tb, "budget: 20000", "budget: 10000")).state()
		}, "bob", org.Action{Type: org.ActComplete, Task: "load-test-kit"}, ""},
		{"purchase of exactly the budget left", policies.WithinBudget{}, func(tb testing.TB) *org.State {
			return newScript(tb, mustWorld(tb, "budget: 20000", "budget: 3000")).state()
		}, "bob", org.Action{Type: org.ActComplete, Task: "build-servers"}, ""},

		// separation-of-duties
		{"approve one's own request", policies.SeparationOfDuties{}, func(tb testing.TB) *org.State { return serversRequested(tb).state() }, "bob", org.Action{Type: org.ActApprove, Request: "r1"},
			"bob cannot decide on their own request r1"},
		{"reject one's own request", policies.SeparationOfDuties{}, func(tb testing.TB) *org.State { return serversRequested(tb).state() }, "bob", org.Action{Type: org.ActReject, Request: "r1"},
			"bob cannot decide on their own request r1"},
		{"approve another's request", policies.SeparationOfDuties{}, func(tb testing.TB) *org.State { return serversRequested(tb).state() }, "alice", org.Action{Type: org.ActApprove, Request: "r1"}, ""},

		// approver-authority
		{"approve as someone else", policies.ApproverAuthority{}, func(tb testing.TB) *org.State { return serversRequested(tb).state() }, "carol", org.Action{Type: org.ActApprove, Request: "r1"},
			"request r1 waits for alice (lead), not carol"},
		{"approve a step already passed", policies.ApproverAuthority{}, kitHalfApproved, "alice", org.Action{Type: org.ActApprove, Request: "r2"},
			"request r2 waits for frank (finance), not alice"},
		{"reject as someone else", policies.ApproverAuthority{}, kitHalfApproved, "carol", org.Action{Type: org.ActReject, Request: "r2"},
			"request r2 waits for frank (finance), not carol"},
		{"approve as the current approver", policies.ApproverAuthority{}, kitHalfApproved, "frank", org.Action{Type: org.ActApprove, Request: "r2"}, ""},
		{"decided request left to the engine", policies.ApproverAuthority{}, func(tb testing.TB) *org.State { return serversRequested(tb).grant("alice", "r1", 0).state() },
			"carol", org.Action{Type: org.ActApprove, Request: "r1"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.rule.Name()+"/"+tt.name, func(t *testing.T) {
			rej := tt.rule.Check(tt.state(t), tt.member, &tt.action)
			if tt.wantReason == "" {
				if rej != nil {
					t.Fatalf("Check: got %v, want nil (allowed)", rej)
				}
				return
			}
			if rej == nil {
				t.Fatalf("Check: got nil (allowed), want a refusal: %s", tt.wantReason)
			}
			if rej.Kind != org.KindPolicy || rej.Rule != tt.rule.Name() {
				t.Errorf("Check: got kind %q rule %q, want %q and %q", rej.Kind, rej.Rule, org.KindPolicy, tt.rule.Name())
			}
			if rej.Reason != tt.wantReason {
				t.Errorf("Check reason:\ngot  %s\nwant %s", rej.Reason, tt.wantReason)
			}
		})
	}
}

// wip2 is the startup world with its backlog limited to 2 items in progress.
func wip2(tb testing.TB) *worlds.World {
	return mustWorld(tb, "{id: backlog, served_by: [lead, engineer, designer]}", "{id: backlog, served_by: [lead, engineer, designer], wip: 2}")
}

// TestRuleNames pins the names, which are recorded in logs and counted by
// analysts.
func TestRuleNames(t *testing.T) {
	var got []string
	for _, r := range policies.Default() {
		got = append(got, r.Name())
	}
	want := []string{"role-required", "skill-required", "queue-order", "wip-limit", "dependencies-first", "work-done", "info-required", "approval-required", "within-budget", "separation-of-duties", "separation", "delegation-limit", "approver-authority"}
	if len(got) != len(want) {
		t.Fatalf("Default: got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Default()[%d]: got %q, want %q", i, got[i], want[i])
		}
	}
}

// TestDefaultSet: the first rule that refuses wins.
func TestDefaultSet(t *testing.T) {
	tests := []struct {
		name     string
		state    func(testing.TB) *org.State
		member   string
		action   org.Action
		wantRule string // "" when allowed
	}{
		// Wrong role and dependencies pending: the role is checked first.
		{"role before dependencies", atStart, "alice", org.Action{Type: org.ActWork, Task: "api"}, "role-required"},
		// No effort spent and no approval: work-done comes first.
		{"work before approval", func(tb testing.TB) *org.State { return specDone(tb).claim("bob", "build-servers").state() }, "bob", org.Action{Type: org.ActComplete, Task: "build-servers"}, "work-done"},
		{"approval once the work is done", func(tb testing.TB) *org.State {
			return specDone(tb).claim("bob", "build-servers").work("bob", "build-servers", 2*clock.Hour).state()
		}, "bob", org.Action{Type: org.ActComplete, Task: "build-servers"}, "approval-required"},
		{"own request and not the approver", func(tb testing.TB) *org.State { return serversRequested(tb).state() }, "bob", org.Action{Type: org.ActApprove, Request: "r1"}, "separation-of-duties"},
		{"everything in order", func(tb testing.TB) *org.State { return serversRequested(tb).grant("alice", "r1", 0).state() }, "bob", org.Action{Type: org.ActComplete, Task: "build-servers"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rej := policies.Default().Check(tt.state(t), tt.member, &tt.action)
			got := ""
			if rej != nil {
				got = rej.Rule
			}
			if got != tt.wantRule {
				t.Errorf("Default().Check: got rule %q (%v), want %q", got, rej, tt.wantRule)
			}
		})
	}
}

func TestRejectionError(t *testing.T) {
	tests := []struct {
		name string
		rej  *org.Rejection
		want string
	}{
		{"policy", &org.Rejection{Kind: org.KindPolicy, Rule: "work-done", Reason: "not yet"}, "policy (work-done): not yet"},
		{"state", org.Reject(org.KindState, "task %q is already yours", "api"), `state: task "api" is already yours`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.rej.Error(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
