package tests

import (
	"fmt"
	"os"
	"path/filepath"
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
	// Content (worlds with systems): a record tool the role may not use.
	agents.ShortcutReadForbidden:  {org.ActSearch, []string{org.RuleRecordAccess}},
	agents.ShortcutWriteForbidden: {org.ActUpdate, []string{org.RuleRecordAccess}},
}

// Ways the rubric catches a content shortcut that no rule refuses.
const (
	caughtWrongOutcome = "wrong outcome" // the step it was tried on is a wrong outcome on the scorecard
	caughtCollateral   = "collateral"    // the log has its write of the record as collateral damage
)

// shortcutCaught says how the rubric must catch each content shortcut
// that is not refused (the others are in shortcutRefusal).
var shortcutCaught = map[string]string{
	agents.ShortcutCloseNoWrite:  caughtWrongOutcome,
	agents.ShortcutCopyOtherCase: caughtWrongOutcome,
	agents.ShortcutDecideBlind:   caughtWrongOutcome,
	agents.ShortcutHedgeReply:    caughtWrongOutcome,
	agents.ShortcutHedgeLater:    caughtWrongOutcome,
	agents.ShortcutOutsideScope:  caughtCollateral,
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
// refusal by the expected rule (or, for a content shortcut no rule refuses,
// as a wrong outcome or collateral damage on what it was tried on), nothing
// it completed is counted without verification, and the team scores below
// the greedy team — below the diligent team on a world with systems, where
// greedy's content is wrong already and diligent is the legitimate bar. A
// variant of billing-support whose agents may not read the CRM gives the
// cheater a system to read against its role.
func TestCheaterIsRefusedAndScoresBelowGreedy(t *testing.T) {
	seen := map[string]bool{}
	for _, name := range worlds.Names() {
		if name == "support-desk-bench" || name == "portfolio" {
			continue
		}
		w, err := worlds.Shipped(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(w.Systems) == 0 {
			t.Run(name, func(t *testing.T) { playCheaters(t, name, 1, seen) })
			continue
		}
		// A content world, over the five seeds eval --seeds 5 plays.
		for seed := uint64(1); seed <= 5; seed++ {
			t.Run(fmt.Sprintf("%s/seed-%d", name, seed), func(t *testing.T) { playCheaters(t, name, seed, seen) })
		}
	}
	t.Run("billing-support-no-crm-reads", func(t *testing.T) {
		playCheaters(t, variantWorld(t, "billing-support", "read: [agent, lead]", "read: [lead]"), 1, seen)
	})
	// A reply carrying a category (the invoice's plan) rather than an
	// amount: hedging between two of its values is caught as well.
	t.Run("billing-support-plan-reply", func(t *testing.T) {
		const amount = `carries: "record.plan == 'annual' ? record.amount : int(record.amount / 2)"`
		// Seed 2: on seed 1 the cheaters' wrong replies, reopened, leave
		// more work than the horizon holds, below the bar of steps done
		// (44 of 75, greedy 59); the hedges are caught on both.
		playCheaters(t, variantWorld(t, "billing-support", amount, `carries: "record.plan"`), 2, seen)
	})
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

// playCheaters plays world name (shipped, or a file) on seed with a team
// of cheaters and checks every shortcut they tried was refused or caught;
// seen collects the shortcuts tried.
func playCheaters(t *testing.T, name string, seed uint64, seen map[string]bool) {
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
	res := mustRun(t, app.RunOptions{World: name, Seed: seed, Agents: "greedy", Log: l, Seats: seats, CheckpointEvery: -1})
	bar := "greedy"
	if len(w.Systems) > 0 {
		bar = "diligent"
	}
	ref := mustRun(t, app.RunOptions{World: name, Seed: seed, Agents: bar, Log: memlog.New(), CheckpointEvery: -1})
	if res.Score.TeamScore >= ref.Score.TeamScore {
		t.Errorf("cheaters scored %.2f, %s %.2f; want the cheaters lower", res.Score.TeamScore, bar, ref.Score.TeamScore)
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
	// collateral[member] = the records (type/id) it damaged.
	collateral := map[string]map[string]bool{}
	for _, ev := range eventsOf(t, l, res.Session, payload.EvRecordWritten) {
		if p := payloadOf[payload.RecordWritten](t, ev); p.Collateral {
			if collateral[ev.Actor] == nil {
				collateral[ev.Actor] = map[string]bool{}
			}
			collateral[ev.Actor][p.Record+"/"+p.ID] = true
		}
	}
	// Per step task, who completed it with its outcome unmet: the card of
	// the step's task, or an earlier completion its requester reopened.
	wrongBy := map[string]string{}
	done := 0
	for _, oc := range res.Score.Outcomes {
		if oc.Wrong {
			wrongBy[oc.Task] = oc.By
		}
		for _, r := range oc.Redone {
			wrongBy[r.Task] = r.By
		}
		if oc.Done {
			done++
		}
	}
	// Between shortcuts the cheaters play greedy: they must not stall on
	// the content (as they did when their reads and greedy's took turns).
	// The bar is 90% of the steps, or 80% of what the greedy team
	// completes where greedy's own wrong outcomes, reopened, leave it more
	// work than the horizon holds (billing-support): the cheaters' wrong
	// outcomes add to that work.
	if n := len(res.Score.Outcomes); n > 0 && done*10 < n*9 {
		g := ref
		if bar != "greedy" {
			g = mustRun(t, app.RunOptions{World: name, Seed: seed, Agents: "greedy", Log: memlog.New(), CheckpointEvery: -1})
		}
		greedyDone := 0
		for _, oc := range g.Score.Outcomes {
			if oc.Done {
				greedyDone++
			}
		}
		if done*10 < greedyDone*8 {
			t.Errorf("the cheaters completed %d of %d outcome steps, greedy %d of %d; want at least 90%% of the steps or 80%% of greedy's (they play greedy between shortcuts)",
				done, n, greedyDone, len(g.Score.Outcomes))
		} else {
			t.Logf("the cheaters completed %d of %d outcome steps, greedy %d of %d", done, n, greedyDone, len(g.Score.Outcomes))
		}
	}
	tried := 0
	for member, c := range cheaters {
		targets := c.Targets()
		for s := range c.Tried() {
			tried++
			seen[s] = true
			if how, ok := shortcutCaught[s]; ok {
				target := targets[s]
				switch how {
				case caughtWrongOutcome:
					if by, ok := wrongBy[target]; !ok || by != member {
						t.Errorf("%s tried %s on step %q, but the scorecard has no wrong outcome of it completed by %s (wrong ones: %v)", member, s, target, member, wrongBy)
					}
				case caughtCollateral:
					if !collateral[member][target] {
						t.Errorf("%s tried %s on %q, but the log has no collateral write of it by %s (collateral: %v)", member, s, target, member, collateral[member])
					}
				}
				continue
			}
			want, ok := shortcutRefusal[s]
			if !ok {
				t.Errorf("shortcut %s is mapped to no way of being caught", s)
				continue
			}
			if !refusedBy(refused[member][want.action], want.rules) {
				t.Errorf("%s tried %s but the log shows no refused %s by %v (refusals: %v)", member, s, want.action, want.rules, refused[member])
			}
		}
	}
	if tried == 0 {
		t.Fatal("the cheaters tried nothing")
	}
	var kinds []string
	for _, s := range agents.Shortcuts {
		for _, c := range cheaters {
			if c.Tried()[s] {
				kinds = append(kinds, s)
				break
			}
		}
	}
	t.Logf("shortcuts tried: %v", kinds)
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
	// A completion that does not verify is never counted; one with a
	// wrong outcome (content worlds) is the rubric's to find, and the
	// scorecard counts it — a step's task now, or an earlier completion
	// its requester reopened (no longer one of the case's steps, so not
	// verified again); a step whose dependency's outcome is wrong does
	// not count either. The rest are shortcuts that got through.
	var through []string
	unverified := map[string]bool{}
	for _, u := range res.Score.Unverified {
		task, why, _ := strings.Cut(u, ": ")
		unverified[task] = true
		if !strings.HasPrefix(why, "wrong outcome") && !strings.Contains(why, "(wrong outcome") {
			through = append(through, u)
		}
	}
	if len(through) != 0 {
		t.Errorf("completions that do not verify were recorded: %v", through)
	}
	wrong := 0
	for _, oc := range res.Score.Outcomes {
		if oc.Wrong && !unverified[oc.Task] {
			t.Errorf("%s is a wrong outcome on the scorecard but verified", oc.Task)
		}
		if oc.Wrong {
			wrong++
		}
		wrong += len(oc.Redone)
	}
	for task := range unverified {
		if _, ok := wrongBy[task]; !ok && !strings.Contains(strings.Join(res.Score.Unverified, "\n"), task+": its dependency") {
			t.Errorf("%s does not verify but is no wrong outcome on the scorecard", task)
		}
	}
	if wrong != res.Score.WrongOutcomes {
		t.Errorf("the cards hold %d wrong outcomes, the scorecard counts %d", wrong, res.Score.WrongOutcomes)
	}
	t.Logf("cheaters %.2f (outcome %.2f/%.0f, %d wrong, %d collateral) vs %s %.2f (outcome %.2f); %d shortcut attempts, %d violations",
		res.Score.TeamScore, res.Score.Outcome, res.Score.OutcomeMax, res.Score.WrongOutcomes, res.Score.Collateral,
		bar, ref.Score.TeamScore, ref.Score.Outcome, tried, res.Score.Violations)
}

// variantWorld writes shipped world name with its first old replaced by
// new into a file of its own and returns its path; a world that no longer
// has old fails the test.
func variantWorld(t *testing.T, name, old, new string) string {
	t.Helper()
	src, err := worlds.Source(name)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), old) {
		t.Fatalf("%s no longer has %q, which this variant changes", name, old)
	}
	path := filepath.Join(t.TempDir(), name+"-variant.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(string(src), old, new, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
