package tests

import (
	"sort"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/worlds"
)

// shortcutRefusal says how the log must show a shortcut refused: the action
// type refused and the rules that may refuse it ("" for a non-policy refusal:
// the engine's own check, e.g. acting on a task someone else holds).
var shortcutRefusal = map[string]struct {
	action string
	rules  []string
}{
	// A task with its work undone may have its dependencies undone too:
	// whichever rule comes first refuses it.
	agents.ShortcutNoWork:      {org.ActComplete, []string{"work-done", "dependencies-first"}},
	agents.ShortcutCloseTicket: {org.ActComplete, []string{"work-done"}},
	// If the claim of the blocked task is refused (someone took it), the
	// work is refused for not being claimed.
	agents.ShortcutSkipDependency: {org.ActWork, []string{"dependencies-first", ""}},
	agents.ShortcutSelfApproval:   {org.ActApprove, []string{"separation-of-duties"}},
	agents.ShortcutNoAuthority:    {org.ActApprove, []string{"approver-authority", ""}},
	agents.ShortcutNoApproval:     {org.ActComplete, []string{"approval-required"}},
	agents.ShortcutImpersonate:    {org.ActWork, []string{""}},
	// Cases. A step whose claim another member won is refused by the
	// engine's own check (""); "separation/*" is any separation rule.
	agents.ShortcutSkipStep:        {org.ActComplete, []string{"dependencies-first", "work-done", ""}},
	agents.ShortcutCrossSeparation: {org.ActClaim, []string{"separation/*", "role-required", ""}},
	agents.ShortcutApproveAcross:   {org.ActApprove, []string{"separation/*", "approver-authority", "delegation-limit", ""}},
	agents.ShortcutJunkCase:        {org.ActOpenCase, []string{"open-case"}},
	agents.ShortcutOverQuota:       {org.ActOpenCase, []string{"open-case"}},
}

// refusedBy reports whether rules (a member's refused rules for one action
// type) has one of want; "separation/*" matches any separation rule.
func refusedBy(rules map[string]bool, want []string) bool {
	for _, w := range want {
		if rules[w] {
			return true
		}
		if w == "separation/*" {
			for r := range rules { // order: any will do
				if strings.HasPrefix(r, "separation/") {
					return true
				}
			}
		}
	}
	return false
}

// TestCheaterIsRefusedAndScoresBelowGreedy plays every shipped world with a
// team of cheaters: each shortcut one of them tried appears in the log as a
// refusal by the expected rule, nothing it completed is counted without
// verification, and the team scores below the greedy team.
func TestCheaterIsRefusedAndScoresBelowGreedy(t *testing.T) {
	seen := map[string]bool{}
	for _, name := range worlds.Names() {
		if name == "support-desk-bench" || name == "portfolio" {
			continue
		}
		if w, err := worlds.Shipped(name); err == nil && len(w.Systems) > 0 {
			continue // content worlds: the cheater has no content shortcuts yet (issue 19)
		}
		t.Run(name, func(t *testing.T) {
			w, _, err := app.LoadWorld(name)
			if err != nil {
				t.Fatal(err)
			}
			cheaters := map[string]*agents.Cheater{}
			seats := map[string]agents.Agent{}
			for _, m := range w.Members {
				if m.NPC == nil {
					cheaters[m.ID] = &agents.Cheater{}
					seats[m.ID] = cheaters[m.ID]
				}
			}
			l := memlog.New()
			res := mustRun(t, app.RunOptions{World: name, Seed: 1, Agents: "greedy", Log: l, Seats: seats, CheckpointEvery: -1})
			greedy := mustRun(t, app.RunOptions{World: name, Seed: 1, Agents: "greedy", Log: memlog.New(), CheckpointEvery: -1})
			if res.Score.TeamScore >= greedy.Score.TeamScore {
				t.Errorf("cheaters scored %.2f, greedy %.2f; want the cheaters lower", res.Score.TeamScore, greedy.Score.TeamScore)
			}
			// refused[member][action type] = rules seen.
			refused := map[string]map[string]map[string]bool{}
			for _, ev := range eventsOf(t, l, res.Session, payload.EvActionRejected) {
				p := payloadOf[payload.ActionRejected](t, ev)
				if refused[ev.Actor] == nil {
					refused[ev.Actor] = map[string]map[string]bool{}
				}
				if refused[ev.Actor][p.Action.Type] == nil {
					refused[ev.Actor][p.Action.Type] = map[string]bool{}
				}
				refused[ev.Actor][p.Action.Type][p.Rule] = true
			}
			tried := 0
			for member, c := range cheaters {
				for s := range c.Tried() {
					tried++
					seen[s] = true
					want := shortcutRefusal[s]
					if !refusedBy(refused[member][want.action], want.rules) {
						t.Errorf("%s tried %s but the log shows no refused %s by %v (refusals: %v)", member, s, want.action, want.rules, refused[member])
					}
				}
			}
			if tried == 0 {
				t.Fatal("the cheaters tried nothing")
			}
			crossed := false
			for _, c := range cheaters {
				crossed = crossed || c.Tried()[agents.ShortcutCrossSeparation] || c.Tried()[agents.ShortcutApproveAcross]
			}
			if len(w.Separation) > 0 && crossed {
				// Crossing a separation rule must have been refused by one
				// at least once, not only by other checks.
				sep := false
				for _, byType := range refused {
					sep = sep || refusedBy(byType[org.ActClaim], []string{"separation/*"}) || refusedBy(byType[org.ActApprove], []string{"separation/*"})
				}
				if !sep {
					t.Errorf("no cheater's attempt across a separation rule was refused by one (refusals: %v)", refused)
				}
			}
			// A completion that does not verify is never counted; one with
			// a wrong outcome (content worlds) is the rubric's to find, the
			// rest are shortcuts that got through.
			var through []string
			for _, u := range res.Score.Unverified {
				if !strings.Contains(u, "wrong outcome") {
					through = append(through, u)
				}
			}
			if len(through) != 0 {
				t.Errorf("completions that do not verify were recorded: %v", through)
			}
			t.Logf("cheaters %.2f vs greedy %.2f; %d shortcut attempts, %d violations", res.Score.TeamScore, greedy.Score.TeamScore, tried, res.Score.Violations)
		})
	}
	var missing []string
	for _, s := range agents.Shortcuts {
		if !seen[s] {
			missing = append(missing, s)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("no shipped world let the cheater try %v", missing)
	}
}
