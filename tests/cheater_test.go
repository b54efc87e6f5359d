package tests

import (
	"sort"
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
					ok := false
					for _, rule := range want.rules {
						ok = ok || refused[member][want.action][rule]
					}
					if !ok {
						t.Errorf("%s tried %s but the log shows no refused %s by %v (refusals: %v)", member, s, want.action, want.rules, refused[member])
					}
				}
			}
			if tried == 0 {
				t.Fatal("the cheaters tried nothing")
			}
			if len(res.Score.Unverified) != 0 {
				t.Errorf("completions that do not verify were recorded: %v", res.Score.Unverified)
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
