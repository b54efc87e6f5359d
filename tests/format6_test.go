package tests

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

// startBilling starts a billing-support session of seed 1 in log format
// format (0: the current one).
func startBilling(t *testing.T, format int) (*sim.Engine, *worlds.World) {
	t.Helper()
	src, err := worlds.Source("billing-support")
	if err != nil {
		t.Fatal(err)
	}
	w, err := worlds.Load("billing-support.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: 1, Session: "s", LogFormat: format})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	return e, w
}

// Log format 6 judges a reply on all that its doer told the requester
// about the case: a reply hedging between the right amount and a wrong one,
// in one message or two, is a wrong outcome. A format-5 session, resumed or
// replayed, is judged as format 5 judged it, where the same replies
// carried the right amount: the outcome is part of the state its hashes
// were taken of.
func TestFormat6JudgesHedgedReplies(t *testing.T) {
	for _, format := range []int{5, 6} {
		e, _ := startBilling(t, format)
		cheaters := map[string]*agents.Cheater{}
		decide := func(turn sim.Turn) (sim.Answer, bool) {
			c := cheaters[turn.Member]
			if c == nil {
				c = &agents.Cheater{}
				cheaters[turn.Member] = c
			}
			acts, _ := c.Decide(context.Background(), turn.Observation)
			if acts == nil {
				acts = []org.Action{}
			}
			return sim.Answer{Member: turn.Member, Turn: turn.Observation.Turn, Actions: acts}, true
		}
		if err := sim.Play(e, func([]events.Event) bool { return true }, decide, 0); err != nil {
			t.Fatal(err)
		}
		wrongBy := map[string]string{}
		for _, oc := range policies.Score(e.State()).Outcomes {
			if oc.Wrong {
				wrongBy[oc.Task] = oc.By
			}
			for _, r := range oc.Redone {
				wrongBy[r.Task] = r.By
			}
		}
		hedged := 0
		for member, c := range cheaters {
			for _, s := range []string{agents.ShortcutHedgeReply, agents.ShortcutHedgeLater} {
				target, ok := c.Targets()[s]
				if !ok {
					continue
				}
				hedged++
				by, wrong := wrongBy[target]
				switch {
				case format >= org.ReplyFormat && (!wrong || by != member):
					t.Errorf("format %d: %s tried %s on %s and it is not a wrong outcome of %s", format, member, s, target, member)
				case format < org.ReplyFormat && wrong:
					t.Errorf("format %d: %s tried %s on %s and it is a wrong outcome; format %d judged it right", format, member, s, target, format)
				}
			}
		}
		if hedged < 2 {
			t.Errorf("format %d: the cheaters hedged %d replies; want both shortcuts tried", format, hedged)
		}
	}
}

// A step redone after its case was reopened is judged on the reply that
// redoes it: an agent whose first reply of each case is wrong, and whose
// redo is right, has every redone reply met in format 6 (the wrong first
// reply still stands in the messages since the case opened).
func TestFormat6JudgesARedoneReplyOnItsOwn(t *testing.T) {
	e, w := startBilling(t, 0)
	var err error
	seats := map[string]agents.Agent{}
	lied := map[string]bool{} // cases whose first reply was one off
	handled := regexp.MustCompile(`case (\S+) is handled: (\d+)\.$`)
	decide := func(turn sim.Turn) (sim.Answer, bool) {
		a := seats[turn.Member]
		if a == nil {
			if a, err = agents.New("diligent", agents.Options{Seed: 1, Member: turn.Member, World: w}); err != nil {
				t.Fatal(err)
			}
			seats[turn.Member] = a
		}
		acts, _ := a.Decide(context.Background(), turn.Observation)
		for i, act := range acts {
			if m := handled.FindStringSubmatch(act.Text); act.Type == org.ActMessage && m != nil && !lied[m[1]] {
				lied[m[1]] = true
				n, _ := strconv.Atoi(m[2])
				acts[i].Text = strings.TrimSuffix(act.Text, m[2]+".") + strconv.Itoa(n+1) + "."
			}
		}
		if acts == nil {
			acts = []org.Action{}
		}
		return sim.Answer{Member: turn.Member, Turn: turn.Observation.Turn, Actions: acts}, true
	}
	if err := sim.Play(e, func([]events.Event) bool { return true }, decide, 0); err != nil {
		t.Fatal(err)
	}
	redone := 0
	for _, oc := range policies.Score(e.State()).Outcomes {
		if oc.Kind != worlds.KindReply || !lied[oc.Case] || !oc.Done {
			continue
		}
		if len(oc.Redone) == 0 {
			continue // not reopened by the end (its case was not done yet)
		}
		redone++
		if oc.Wrong || len(oc.Unmet) > 0 {
			t.Errorf("%s: the redone reply is right and was judged wrong (unmet %v)", oc.Task, oc.Unmet)
		}
	}
	if redone == 0 {
		t.Fatal("no reply was redone; the test needs some")
	}
	t.Logf("%d replies redone right after a wrong first one", redone)
}
