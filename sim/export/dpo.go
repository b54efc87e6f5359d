package export

import (
	"fmt"
	"math"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/policies"
)

// Which reward ranks episodes: the member's or the team's.
const (
	ByMember = "member"
	ByTeam   = "team"
)

// Score is ep's reward by "member" (its delivered value, also for "") or
// "team" (the team score).
func (ep *Episode) Score(by string) float64 {
	if by == ByTeam {
		return ep.TeamReward
	}
	return ep.Reward
}

// ValidBy reports whether by names a reward Score knows.
func ValidBy(by string) error {
	if by != "" && by != ByMember && by != ByTeam {
		return fmt.Errorf("export: unknown reward %q (member or team)", by)
	}
	return nil
}

// PairOptions configure Pairs. The zero value pairs episodes whose member
// rewards differ at all.
type PairOptions struct {
	// Margin: a pair's chosen reward exceeds its rejected one by more than
	// this (not negative).
	Margin float64
	// By is the reward that ranks the episodes: ByMember ("" too) or ByTeam.
	By string
}

// Pair is a DPO preference pair in the conversational form: the messages
// both episodes share (at least the system prompt and the first
// observation), then each one's continuation, which begins with the first
// assistant message in which they differ or after which they do.
type Pair struct {
	World           string    `json:"world"`
	Seed            uint64    `json:"seed"`
	Member          string    `json:"member"`
	Prompt          []Message `json:"prompt"`
	Chosen          []Message `json:"chosen"`
	Rejected        []Message `json:"rejected"`
	ChosenReward    float64   `json:"chosen_reward"`
	RejectedReward  float64   `json:"rejected_reward"`
	ChosenSession   string    `json:"chosen_session"`
	RejectedSession string    `json:"rejected_session"`
	ChosenAgent     string    `json:"chosen_agent,omitempty"`
	RejectedAgent   string    `json:"rejected_agent,omitempty"`
	// ChosenForkedFrom and RejectedForkedFrom are each episode's
	// Episode.ForkedFrom: the turns up to that point were the parent's
	// agents', not ChosenAgent's or RejectedAgent's.
	ChosenForkedFrom   string        `json:"chosen_forked_from,omitempty"`
	RejectedForkedFrom string        `json:"rejected_forked_from,omitempty"`
	Tools              []agents.Tool `json:"tools"`
	// ChosenOutcomes and RejectedOutcomes are each episode's outcome
	// verdicts (Episode.Outcomes; worlds with systems only).
	ChosenOutcomes   []policies.OutcomeCard `json:"chosen_outcomes,omitempty"`
	RejectedOutcomes []policies.OutcomeCard `json:"rejected_outcomes,omitempty"`
}

// Pairs makes preference pairs from eps: every two episodes of the same
// world (same world file), seed (and seed event 1 was drawn with), draw
// key, load, log format and member, from different sessions,
// whose rewards (by o.By) differ by more than o.Margin, the higher one
// chosen, provided they share their system prompt and first observation. Pairs come in the order of eps. alone lists, in the order of eps,
// the sessions that share their world, seed and load with no other session
// of eps: they make no pairs.
func Pairs(eps []Episode, o PairOptions) (pairs []Pair, alone []string) {
	// Episodes pair when they played the same situation: the world, the
	// seed event 1 was drawn with and the one they went on with, from the
	// same seq (a fork's point where its seed changed), the draw key, the
	// load.
	type key struct {
		world, member, drawKey string
		root, seed             uint64
		draws                  string // the seeds, from which seq each (seedHistory)
		load                   float64
		format                 int // the log format: the rules they were judged by
	}
	groups := map[key][]int{}
	var order []key
	sessions := map[key]map[string]bool{} // member "" : the sessions of a world, seed and load
	for i := range eps {
		ep := &eps[i]
		k := key{ep.worldHash, ep.Member, ep.key, ep.root, ep.Seed, ep.draws, ep.load, ep.format}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
		s := k
		s.member = ""
		if sessions[s] == nil {
			sessions[s] = map[string]bool{}
		}
		sessions[s][ep.Session] = true
	}
	seen := map[string]bool{}
	for i := range eps {
		ep := &eps[i]
		if seen[ep.Session] {
			continue
		}
		seen[ep.Session] = true
		if len(sessions[key{world: ep.worldHash, drawKey: ep.key, root: ep.root, seed: ep.Seed, draws: ep.draws, load: ep.load, format: ep.format}]) < 2 {
			alone = append(alone, ep.Session)
		}
	}
	for _, k := range order {
		g := groups[k]
		for x := 0; x < len(g); x++ {
			for y := x + 1; y < len(g); y++ {
				a, b := &eps[g[x]], &eps[g[y]]
				if a.Session == b.Session {
					continue
				}
				if b.Score(o.By) > a.Score(o.By) {
					a, b = b, a
				}
				if !(a.Score(o.By)-b.Score(o.By) > o.Margin) || math.IsNaN(a.Score(o.By)-b.Score(o.By)) {
					continue
				}
				if p, ok := pair(a, b, o.By); ok {
					pairs = append(pairs, p)
				}
			}
		}
	}
	return pairs, alone
}

// pair makes the pair of chosen episode c and rejected r; ok is false when
// they do not share their system prompt and first observation, or do not
// differ at all.
func pair(c, r *Episode, by string) (p Pair, ok bool) {
	common := 0
	for common < len(c.Messages) && common < len(r.Messages) && sameMessage(&c.Messages[common], &r.Messages[common]) {
		common++
	}
	least := 0 // the system prompt and the first observation
	for least < len(c.Messages) && c.Messages[least].Role != "assistant" {
		least++
	}
	if common < least || common == len(c.Messages) && common == len(r.Messages) {
		return Pair{}, false
	}
	// The continuations start with an assistant message: the choice that
	// differs, or the last one before the outcomes do.
	n := common
	for n > least && !(n < len(c.Messages) && n < len(r.Messages) && c.Messages[n].Role == "assistant" && r.Messages[n].Role == "assistant") {
		n--
	}
	return Pair{World: c.World, Seed: c.Seed, Member: c.Member,
		Prompt: c.Messages[:n], Chosen: c.Messages[n:], Rejected: r.Messages[n:],
		ChosenReward: c.Score(by), RejectedReward: r.Score(by), ChosenSession: c.Session, RejectedSession: r.Session,
		ChosenAgent: c.Agent, RejectedAgent: r.Agent, ChosenForkedFrom: c.ForkedFrom, RejectedForkedFrom: r.ForkedFrom, Tools: c.Tools, ChosenOutcomes: c.Outcomes, RejectedOutcomes: r.Outcomes}, true
}

func sameMessage(a, b *Message) bool {
	if a.Role != b.Role || a.ToolCallID != b.ToolCallID || (a.Content == nil) != (b.Content == nil) ||
		a.Content != nil && *a.Content != *b.Content || len(a.ToolCalls) != len(b.ToolCalls) {
		return false
	}
	for i := range a.ToolCalls {
		if a.ToolCalls[i] != b.ToolCalls[i] {
			return false
		}
	}
	return true
}
