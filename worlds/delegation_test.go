package worlds

import (
	"slices"
	"testing"
)

// leave is a leave of alice's, delegated to bob, with limit written after
// "delegate_limit: " (nothing when limit is "").
func leave(limit string) []string {
	in := "  - {at: 1d, kind: leave, member: alice, delegate: bob, for: 2d"
	if limit != "" {
		in += ", delegate_limit: " + limit
	}
	return []string{lastTask, lastTask + "interruptions:\n" + in + "}\n"}
}

func TestLoadDelegateLimit(t *testing.T) {
	w := mustLoad(t, "w.yaml", mustEdit(t, v2(leave("{below: 1000, chains: [purchases]}")...)...))
	lim := w.Interruptions[0].DelegateLimit
	if lim == nil || lim.Below != 1000 || !slices.Equal(lim.Chains, []string{"purchases"}) {
		t.Fatalf("delegate limit: got %+v, want below 1000 on purchases", lim)
	}
	for _, tt := range []struct {
		chain  string
		amount int64
		want   bool
	}{{"purchases", 999, true}, {"purchases", 1000, false}, {"other", 10, false}} {
		if got := lim.Allows(tt.chain, tt.amount); got != tt.want {
			t.Errorf("Allows(%s, %d): got %v, want %v", tt.chain, tt.amount, got, tt.want)
		}
	}
	if got, want := lim.String(), "below 1000 on chains purchases"; got != want {
		t.Errorf("String: got %q, want %q", got, want)
	}
	if w := mustLoad(t, "w.yaml", mustEdit(t, v2(leave("")...)...)); w.Interruptions[0].DelegateLimit != nil {
		t.Errorf("a leave without a limit: got %+v, want nil", w.Interruptions[0].DelegateLimit)
	}
}

func TestLoadDelegateLimitErrors(t *testing.T) {
	// A second chain, travel, through which nothing spends.
	travel := []string{"approvals:\n", "approvals:\n  - {id: travel, steps: [{role: lead}]}\n",
		"purchase: 3000, deps", "purchase: 3000, approval: purchases, deps"}
	tests := []struct {
		name  string
		edits []string
		want  string
	}{
		{"a limit in a version 1 file", leave("{below: 1000}"),
			`w.yaml:41:82: interruptions[0].delegate_limit: delegate_limit needs version: 2 (this file declares version 1)`},
		{"a limit naming an unknown chain", v2(leave("{chains: [payouts]}")...),
			`w.yaml:41:92: interruptions[0].delegate_limit.chains[0]: unknown approval chain "payouts" (defined: purchases)`},
		{"an amount limit on a chain that has no amount", v2(append(leave("{below: 1000, chains: [purchases, travel]}"), travel...)...),
			`w.yaml:42:116: interruptions[0].delegate_limit.chains[1]: a delegation limit on a chain that has no amount: no task, ticket or case step spends money or reads an amount through "travel"`},
		{"an amount limit where nothing spends", v2(append(leave("{below: 1000}"), "purchase: 3000, ", "")...),
			`w.yaml:41:90: interruptions[0].delegate_limit.below: a delegation limit on a chain that has no amount: no task, ticket or case step spends money or reads an amount through any chain`},
		{"a negative limit", v2(leave("{below: -5}")...),
			`w.yaml:41:90: interruptions[0].delegate_limit.below: a delegation limit must be more than zero, got -5`},
		{"a limit of nothing", v2(leave("{}")...),
			`w.yaml:41:82: interruptions[0].delegate_limit: an empty delegate_limit limits nothing: give below, chains or both`},
		{"a limit without a delegate", v2(lastTask, lastTask+"interruptions:\n  - {at: 1d, kind: leave, member: alice, for: 2d, delegate_limit: {below: 10}}\n"),
			`w.yaml:41:67: interruptions[0].delegate_limit: a delegate_limit needs a delegate to limit`},
		{"a limit on an outage", v2(lastTask, lastTask+"interruptions:\n  - {at: 1d, kind: outage, queue: backlog, for: 2d, delegate_limit: {below: 10}}\n"),
			`w.yaml:41:69: interruptions[0].delegate_limit: a delegate_limit limits a leave's delegate; this interruption is "outage"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantLoadError(t, mustEdit(t, tt.edits...), tt.want)
		})
	}
}
