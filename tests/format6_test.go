package tests

import (
	"context"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

// Log format 6 judges a reply on all that its doer told the requester
// about the case: a reply hedging between the right amount and a wrong one,
// in one message or two, is a wrong outcome. A format-5 session, resumed or
// replayed, is judged as format 5 judged it, where the same replies
// carried the right amount: the outcome is part of the state its hashes
// were taken of.
func TestFormat6JudgesHedgedReplies(t *testing.T) {
	for _, format := range []int{5, 6} {
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
