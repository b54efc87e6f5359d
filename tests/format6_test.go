package tests

import (
	"context"
	"fmt"
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

// playDiligent plays a billing-support session of diligent agents, their
// replies ("case X is handled: N.") rewritten as the messages rewrite
// writes (none to keep one), and scores it.
func playDiligent(t *testing.T, rewrite func(caseID string, amount int) []string) policies.Scorecard {
	t.Helper()
	e, w := startBilling(t, 0)
	var err error
	seats := map[string]agents.Agent{}
	handled := regexp.MustCompile(`case (\S+) is handled: (\d+)\.$`)
	decide := func(turn sim.Turn) (sim.Answer, bool) {
		a := seats[turn.Member]
		if a == nil {
			if a, err = agents.New("diligent", agents.Options{Seed: 1, Member: turn.Member, World: w}); err != nil {
				t.Fatal(err)
			}
			seats[turn.Member] = a
		}
		decided, _ := a.Decide(context.Background(), turn.Observation)
		var acts []org.Action
		for _, act := range decided {
			m := handled.FindStringSubmatch(act.Text)
			if act.Type != org.ActMessage || m == nil {
				acts = append(acts, act)
				continue
			}
			n, _ := strconv.Atoi(m[2])
			texts := rewrite(m[1], n)
			if texts == nil {
				texts = []string{act.Text}
			}
			for _, text := range texts {
				act.Text = text
				acts = append(acts, act)
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
	return policies.Score(e.State())
}

// Format 6 reads every number a reply states, in whatever notation, as an
// amount, but for the IDs of the state's cases, members, tasks and
// records, dates and times: a hedge hidden in a name-like word, a unit, a
// range or a clause naming no case after the case's is a wrong outcome,
// and a right amount written with a currency, a decimal comma, an ID, a
// date or an upper-case case ID is a right one.
func TestFormat6ReadsEveryNotation(t *testing.T) {
	for _, c := range []struct {
		name  string
		write string // %[1]s the case, %[2]d the amount, %[3]d twice it
		then  string // a message after it, naming no case ("" none)
		right bool
	}{
		{"plain", "case %[1]s is handled: %[2]d, refunded on 2026-01-05 at 10:30.", "", true},
		{"currency", "case %[1]s is handled: USD%[2]d (€%[2]d,00), see invoice inv-0 and ask max.", "", true},
		{"upper-case", "CASE %[1]s is handled: %[2]d.", "", true},
		{"other case", "case %[1]s is handled: %[2]d. requests-1 and requests-2 are not mine.", "", true},
		{"currency hedge", "case %[1]s is handled: USD%[2]d, or USD%[3]d.", "", false},
		{"range hedge", "case %[1]s is handled: %[2]d-%[3]d.", "", false},
		{"slash hedge", "case %[1]s is handled: %[2]d/%[3]d.", "", false},
		{"reference hedge", "case %[1]s is handled: %[2]d (#%[3]d).", "", false},
		{"suffix hedge", "case %[1]s is handled: %[2]d or %[3]d-ish.", "", false},
		{"clause hedge", "case %[1]s is handled: %[2]d, or %[3]d. cc requests-1", "", false},
		{"chatty", "case %[1]s is handled: %[2]d.", "Thanks for your patience, Cara. Ana", true},
		// A message naming no case is about none: the reply commits to
		// the one value read, and a "correction" earns nothing.
		{"later correction", "case %[1]s is handled: %[2]d.", "Correction: it may be %[3]d.", true},
		{"leading hedge", "Refunded %[3]d, or %[2]d. Cases %[1]s and requests-1 handled.", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rewrote := map[string]bool{}
			card := playDiligent(t, func(id string, n int) []string {
				rewrote[id] = true
				texts := []string{fmt.Sprintf(c.write, id, n, 2*n)}
				if c.then != "" {
					texts = append(texts, strings.NewReplacer("%[1]s", id, "%[3]d", strconv.Itoa(2*n)).Replace(c.then))
				}
				return texts
			})
			judged := 0
			for _, oc := range card.Outcomes {
				if oc.Kind != worlds.KindReply || !oc.Done || !rewrote[oc.Case] || len(oc.Redone) > 0 {
					continue
				}
				judged++
				if oc.Wrong == c.right {
					t.Errorf("%s: %q judged wrong=%v (unmet %v)", oc.Task, fmt.Sprintf(c.write, oc.Case, 305, 610), oc.Wrong, oc.Unmet)
				}
			}
			if judged == 0 {
				t.Fatal("no rewritten reply was judged; the test needs some")
			}
		})
	}
}

// A step redone after its case was reopened is judged on the reply that
// redoes it: an agent whose first reply of each case is wrong, and whose
// redo is right, has every redone reply met in format 6 (the wrong first
// reply still stands in the messages since the case opened).
func TestFormat6JudgesARedoneReplyOnItsOwn(t *testing.T) {
	lied := map[string]bool{} // cases whose first reply was one off
	card := playDiligent(t, func(id string, n int) []string {
		if lied[id] {
			return nil
		}
		lied[id] = true
		return []string{fmt.Sprintf("case %s is handled: %d.", id, n+1)}
	})
	redone := 0
	for _, oc := range card.Outcomes {
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
