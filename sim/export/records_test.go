package export_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/export"
)

// On a content world the transcripts carry the records: each accepted get
// or search's tool message holds what it returned, which is exactly what
// the member was sent in its next observation (records with their fields
// and text); the tools are the world's (its record types in the schemas);
// and each episode carries the rubric's verdicts on the outcome steps its
// member completed, wrong ones included.
func TestEpisodesCarryRecordResults(t *testing.T) {
	log := memlog.New()
	obs := mustSession(t, log, "s", "billing-support", 1, greedyOnly)
	eps := mustEpisodes(t, log, "s", export.Options{})
	done, wrong := 0, 0
	for _, member := range []string{"ana", "ben"} {
		ep := eps[member]
		// What the member was sent: its reads' results, in order.
		var sent []string
		for _, o := range obs[member] {
			for _, r := range o.Results {
				b, _ := json.Marshal(r)
				sent = append(sent, string(b))
			}
		}
		// What the tool messages of its gets and searches say.
		calls := map[string]string{} // call id -> tool name
		var told []string
		withText := 0
		for _, m := range ep.Messages {
			for _, c := range m.ToolCalls {
				calls[c.ID] = c.Function.Name
			}
			if m.Role != "tool" || (calls[m.ToolCallID] != org.ActGet && calls[m.ToolCallID] != org.ActSearch) {
				continue
			}
			var res struct {
				Accepted bool            `json:"accepted"`
				Result   *org.ReadResult `json:"result"`
			}
			if err := json.Unmarshal([]byte(str(m.Content)), &res); err != nil {
				t.Fatalf("%s: tool message %q: %v", member, str(m.Content), err)
			}
			if !res.Accepted || res.Result == nil {
				t.Errorf("%s: the result of %s is %q; want it accepted with what it read", member, m.ToolCallID, str(m.Content))
				continue
			}
			for _, rv := range res.Result.Records {
				if rv.Text != "" && len(rv.Fields) > 0 {
					withText++
				}
			}
			b, _ := json.Marshal(res.Result)
			told = append(told, string(b))
		}
		if len(sent) == 0 || len(told) < len(sent) {
			t.Fatalf("%s: %d results sent in observations, %d in tool messages; want some, every one in a tool message", member, len(sent), len(told))
		}
		for i := range sent {
			if told[i] != sent[i] {
				t.Fatalf("%s: read %d: tool message says %s, the member was sent %s", member, i, told[i], sent[i])
			}
		}
		if withText == 0 {
			t.Errorf("%s: no record in the tool results has fields and text", member)
		}
		// The world's tools, and the member's outcome verdicts.
		described := false
		for _, tool := range ep.Tools {
			described = described || tool.Function.Name == org.ActUpdate && strings.Contains(tool.Function.Description, "invoice")
		}
		if !described {
			t.Errorf("%s: the update tool does not describe the world's record types", member)
		}
		for _, oc := range ep.Outcomes {
			if oc.By != member || !oc.Done {
				t.Errorf("%s's episode carries the outcome %+v", member, oc)
			}
			done++
			if oc.Wrong {
				wrong++
			}
		}
	}
	card := mustScore(t, log, "s")
	// The cards' own verdicts (the scorecard's wrong outcomes also count
	// the completions a requester reopened, which no episode carries).
	cardDone, cardWrong := 0, 0
	for _, oc := range card.Outcomes {
		if oc.Done {
			cardDone++
		}
		if oc.Wrong {
			cardWrong++
		}
	}
	if done != cardDone || wrong != cardWrong || wrong == 0 {
		t.Errorf("episodes carry %d outcomes, %d wrong; the scorecard has %d completed, %d wrong (want equal, some wrong)", done, wrong, cardDone, cardWrong)
	}
	// With the LLM agent's prompts the records follow the result line.
	eps = mustEpisodes(t, log, "s", export.Options{Prompts: export.Prompts{Result: func(a org.Action, rej *org.RejectedView) string {
		if rej != nil {
			return "refused"
		}
		return "accepted"
	}}})
	found := false
	for _, m := range eps["ana"].Messages {
		if m.Role == "tool" && strings.HasPrefix(str(m.Content), "accepted\n{\"op\":") {
			found = true
		}
	}
	if !found {
		t.Error("with a custom result prompt no tool message carries the records read after its result line")
	}
}

// mustScore rebuilds session id from log and scores its final state.
func mustScore(tb testing.TB, log events.Log, id string) policies.Scorecard {
	tb.Helper()
	evs := readAll(tb, log, id)
	e, err := sim.Rebuild(func(yield func(events.Event, error) bool) {
		for _, ev := range evs {
			if !yield(ev, nil) {
				return
			}
		}
	}, id, sim.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	return policies.Score(e.State())
}

// A preference pair of billing-support episodes carries each side's
// outcome verdicts: the diligent member's (chosen: it follows the policy's
// precedence) are all right, the greedy one's (rejected) have wrong ones.
func TestPairsCarryOutcomes(t *testing.T) {
	log := memlog.New()
	diligent := func(o org.Observation) sim.Answer {
		a, _ := agents.New("diligent", agents.Options{Member: o.Member})
		acts, _ := a.Decide(context.Background(), o)
		return sim.Answer{Member: o.Member, Turn: o.Turn, Actions: acts}
	}
	mustSession(t, log, "g", "billing-support", 1, greedyOnly)
	mustSession(t, log, "d", "billing-support", 1, diligent)
	var eps []export.Episode
	for _, id := range []string{"g", "d"} {
		e, err := export.Episodes(context.Background(), log, id, export.Options{})
		if err != nil {
			t.Fatal(err)
		}
		eps = append(eps, e...)
	}
	pairs, _ := export.Pairs(eps, export.PairOptions{})
	checked := 0
	for _, p := range pairs {
		if p.ChosenSession != "d" {
			continue
		}
		checked++
		wrong := 0
		for _, oc := range p.ChosenOutcomes {
			if oc.Wrong || oc.By != p.Member {
				t.Errorf("pair for %s: chosen outcome %+v; want right, by %s", p.Member, oc, p.Member)
			}
		}
		for _, oc := range p.RejectedOutcomes {
			if oc.Wrong {
				wrong++
			}
		}
		if len(p.ChosenOutcomes) == 0 || wrong == 0 {
			t.Errorf("pair for %s: %d chosen outcomes, %d wrong rejected ones; want some of each", p.Member, len(p.ChosenOutcomes), wrong)
		}
	}
	if checked == 0 {
		t.Fatalf("no pair chose the diligent session (%d pairs)", len(pairs))
	}
}
