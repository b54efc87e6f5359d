package policies_test

import (
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
)

// limitedLeave is the startup world in version 2 with frank (finance) on
// leave for 3d from the start, dave standing in below limit.
func limitedLeave(limit string) []string {
	return []string{"version: 1\n", "version: 2\n", "\nscoring:\n",
		"\ninterruptions:\n  - {at: 0s, kind: leave, member: frank, delegate: dave, for: 3d, delegate_limit: {below: " + limit + "}}\n\nscoring:\n"}
}

// kitApprovedBy does load-test-kit (8000: lead and finance) with its
// finance step granted by frank, then tampered to have been granted by
// approver as frank's stand-in while frank was on leave.
func kitApprovedBy(s *script, approver string) *script {
	s.do("alice", "spec").claim("bob", "build-servers").work("bob", "build-servers", 2*clock.Hour).
		request("bob", "r1", "build-servers", 3000, "lead:alice").grant("alice", "r1", 0).complete("bob", "build-servers")
	s.do("bob", "ci").claim("bob", "load-test-kit").work("bob", "load-test-kit", 2*clock.Hour)
	return s.request("bob", "r2", "load-test-kit", 8000, "lead:alice", "finance:frank").
		grant("alice", "r2", 0).grant("frank", "r2", 1).complete("bob", "load-test-kit").
		tamper(func(st *org.State) {
			st.Fired[0] = true
			r := st.Request("r2")
			r.Steps[1].Approver, r.Steps[1].Delegated = approver, true
		})
}

// TestVerifyDelegationLimit: an approval by a delegate beyond the limit of
// the leave it stood in for is not eligible; within the limit it is.
func TestVerifyDelegationLimit(t *testing.T) {
	tests := []struct {
		name  string
		limit string
		want  string
	}{
		{"8000 by a delegate limited below 5000", "5000", "approval step 2 (finance) granted by dave, a delegate beyond its delegation limit"},
		{"8000 by a delegate limited below 10000", "10000", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := kitApprovedBy(newScript(t, mustWorld(t, limitedLeave(tt.limit)...)), "dave").state()
			if got := policies.Verify(st, st.Task("load-test-kit")); got != tt.want {
				t.Errorf("Verify(load-test-kit): got %q, want %q", got, tt.want)
			}
		})
	}
}

// kitAskedOfStandIn is the startup world with frank on leave (dave stands
// in below limit): build-servers done, and r2 for load-test-kit's 8000
// granted by alice, its finance step routed to finance.
func kitAskedOfStandIn(tb testing.TB, limit string, finance org.RequestStep) *org.State {
	w := mustWorld(tb, limitedLeave(limit)...)
	s := newScript(tb, w)
	s.add(payload.EvMemberLeft, "frank", payload.MemberLeft{InterruptionFired: payload.InterruptionFired{Interruption: 0},
		Until: w.Calendar.AddWork(0, w.Interruptions[0].For), Delegate: "dave"})
	s.do("alice", "spec").claim("bob", "build-servers").work("bob", "build-servers", 2*clock.Hour).
		request("bob", "r1", "build-servers", 3000, "lead:alice").grant("alice", "r1", 0).complete("bob", "build-servers").
		do("bob", "ci").claim("bob", "load-test-kit").work("bob", "load-test-kit", 2*clock.Hour)
	return s.add(payload.EvApprovalRequested, "bob", payload.ApprovalRequested{Request: "r2", Task: "load-test-kit", Chain: "purchases", Amount: 8000,
		Steps: []org.RequestStep{{Role: "lead", Approver: "alice"}, finance}}).grant("alice", "r2", 0).state()
}

// TestDelegationLimitRule: while frank is on leave, dave may decide his
// steps only below the limit; the refusal names the limit.
func TestDelegationLimitRule(t *testing.T) {
	tests := []struct {
		name, limit, member string
		want                string
	}{
		{"beyond the limit", "5000", "dave", "dave stands in for frank (finance) only below 5000; request r2 is 8000 on chain purchases"},
		{"within the limit", "10000", "dave", ""},
		{"someone who stands in for nobody", "5000", "carol", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Routed as the engine routes it: beyond the limit and with no
			// manager, the finance step waits for frank; within, it is dave's.
			finance := org.RequestStep{Role: "finance", Approver: "frank"}
			if tt.limit == "10000" {
				finance = org.RequestStep{Role: "finance", Approver: "dave", Delegated: true}
			}
			st := kitAskedOfStandIn(t, tt.limit, finance)
			rej := policies.DelegationLimit{}.Check(st, tt.member, &org.Action{Type: org.ActApprove, Request: "r2"})
			got := ""
			if rej != nil {
				got = rej.Reason
				if rej.Rule != "delegation-limit" {
					t.Errorf("rule: got %q, want delegation-limit", rej.Rule)
				}
			}
			if got != tt.want {
				t.Errorf("Check: got %q, want %q", got, tt.want)
			}
		})
	}
}
