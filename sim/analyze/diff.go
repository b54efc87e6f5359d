package analyze

import (
	"bytes"
	"encoding/hex"
	"fmt"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
)

// Side is one session's part of a comparison.
type Side struct {
	Session string `json:"session"`
	World   string `json:"world"`
	Seed    uint64 `json:"seed"`
	// Agents are its seats' agents (member -> kind), as its metadata records them.
	Agents  map[string]string `json:"agents,omitempty"`
	Parent  string            `json:"parent,omitempty"` // the session it was forked from
	ForkSeq uint64            `json:"fork_seq,omitempty"`
	Events  int               `json:"events"`
	// After is the number of its events from the first divergent seq on.
	After     int     `json:"after"`
	Ended     string  `json:"ended"`      // end reason, or "" if the log does not end
	StateHash string  `json:"state_hash"` // as session.ended recorded it; else of the state after the last event
	TeamScore float64 `json:"team_score"`
	Delivered float64 `json:"delivered"`
	Penalties float64 `json:"penalties"`
	Tasks     int     `json:"tasks"`
	TasksDone int     `json:"tasks_done"` // verified
	OnTime    int     `json:"on_time"`
	Late      int     `json:"late"` // verified completions past their deadline (tasks and tickets)
	Tickets   int     `json:"tickets"`
	Resolved  int     `json:"tickets_resolved"`
	InSLA     int     `json:"tickets_in_sla"`
	Breaches  int     `json:"sla_breaches"`
	// Cases (worlds of version 2): opened, done (every step verified),
	// done within their SLA, and those whose SLA passed while open.
	Cases        int `json:"cases,omitempty"`
	CasesDone    int `json:"cases_done,omitempty"`
	CasesInSLA   int `json:"cases_in_sla,omitempty"`
	CaseBreaches int `json:"case_sla_breaches,omitempty"`
	// The outcome score of the cases' work on records, decisions and
	// replies (of OutcomeMax), the steps completed with their outcome
	// unmet, and the writes no case asked for (the scorecard's).
	Outcome       float64 `json:"outcome,omitempty"`
	OutcomeMax    float64 `json:"outcome_max,omitempty"`
	WrongOutcomes int     `json:"wrong_outcomes,omitempty"`
	Collateral    int     `json:"collateral,omitempty"`

	Violations int `json:"violations"`
	Rejections int `json:"rejections"`
	Timeouts   int `json:"timeouts"`
	TurnErrors int `json:"turn_errors"` // turns whose agent could not decide (turn.failed)
}

// OutcomeDiff is a task whose outcome differs between the sides.
type OutcomeDiff struct {
	Task string `json:"task"`
	A    string `json:"a"`
	B    string `json:"b"`
}

// RuleDiff counts refusals by rule (or kind) on each side.
type RuleDiff struct {
	Rule string `json:"rule"`
	A    int    `json:"a"`
	B    int    `json:"b"`
}

// Difference is where two sessions diverge and what differs afterwards.
type Difference struct {
	// Diverged is false when both logs hold the same events (IDs aside).
	Diverged bool `json:"diverged"`
	// Seq is the first seq at which the events differ in time, type, actor,
	// cause or payload, or at which one log has an event and the other has
	// none; 0 if they do not diverge.
	Seq uint64 `json:"seq,omitempty"`
	// A and B are the events at Seq (nil on a side that has none).
	A *events.Event `json:"a,omitempty"`
	B *events.Event `json:"b,omitempty"`
	// AText and BText say what A and B did.
	AText string `json:"a_text,omitempty"`
	BText string `json:"b_text,omitempty"`
	// AWall and BWall are their instants on the world's calendar (RFC 3339).
	AWall string `json:"a_wall,omitempty"`
	BWall string `json:"b_wall,omitempty"`
	// Fields name what differs between A and B.
	Fields []string `json:"fields,omitempty"`
	// IDsFrom is the first seq whose event IDs differ (0 if none). IDs
	// derive from the seed, so a fork with another seed has other IDs from
	// its fork point on even while it still does the same things.
	IDsFrom uint64  `json:"ids_from,omitempty"`
	Sides   [2]Side `json:"sides"`
	// Outcomes are the tasks whose outcome (not done, on time, late,
	// unverified, absent) differs, in the order of A's tasks then B's.
	Outcomes []OutcomeDiff `json:"outcomes"`
	Rules    []RuleDiff    `json:"rules"` // refusals by rule, where the counts differ
}

// Compare finds the first event at which two sessions differ and
// summarises each side: scores, completions, outcomes and refusals.
func Compare(a, b *Session) *Difference {
	d := &Difference{}
	n := min(len(a.Events), len(b.Events))
	for i := 0; i < n; i++ {
		ea, eb := &a.Events[i], &b.Events[i]
		if d.IDsFrom == 0 && ea.ID != eb.ID {
			d.IDsFrom = ea.Seq
		}
		if f := differing(ea, eb); len(f) > 0 {
			d.Diverged, d.Seq, d.Fields = true, ea.Seq, f
			ca, cb := *ea, *eb
			d.A, d.B = &ca, &cb
			break
		}
	}
	if !d.Diverged && len(a.Events) != len(b.Events) {
		d.Diverged, d.Seq = true, uint64(n+1)
		if len(a.Events) > n {
			ca := a.Events[n]
			d.A = &ca
		} else {
			cb := b.Events[n]
			d.B = &cb
		}
		d.Fields = []string{"length"}
	}
	if d.A != nil {
		d.AText, d.AWall = a.Describe(d.A.Seq), a.stampOf(d.A.Seq).Wall
	}
	if d.B != nil {
		d.BText, d.BWall = b.Describe(d.B.Seq), b.stampOf(d.B.Seq).Wall
	}
	d.Sides = [2]Side{a.side(d.Seq), b.side(d.Seq)}
	oa, ob := a.outcomes(), b.outcomes()
	seen := map[string]bool{}
	for _, list := range [][]*org.Task{a.State.AllTasks(), b.State.AllTasks()} {
		for _, t := range list {
			if seen[t.ID] {
				continue
			}
			seen[t.ID] = true
			x, y := oa[t.ID], ob[t.ID]
			if x.key == "" {
				x = outcome{"absent", "absent"}
			}
			if y.key == "" {
				y = outcome{"absent", "absent"}
			}
			if x.key != y.key {
				d.Outcomes = append(d.Outcomes, OutcomeDiff{Task: t.ID, A: x.text, B: y.text})
			}
		}
	}
	ra, rb := a.rules(), b.rules()
	for _, r := range countRules(merge(ra, rb)) {
		if ra[r.Rule] != rb[r.Rule] {
			d.Rules = append(d.Rules, RuleDiff{Rule: r.Rule, A: ra[r.Rule], B: rb[r.Rule]})
		}
	}
	return d
}

func differing(a, b *events.Event) []string {
	var f []string
	if a.Time != b.Time {
		f = append(f, "time")
	}
	if a.Type != b.Type {
		f = append(f, "type")
	}
	if a.Actor != b.Actor {
		f = append(f, "actor")
	}
	if a.Cause != b.Cause {
		f = append(f, "cause")
	}
	if !bytes.Equal(a.Payload, b.Payload) {
		f = append(f, "payload")
	}
	return f
}

func (s *Session) side(from uint64) Side {
	sc := policies.Score(s.State)
	hash := s.endHash
	if hash == "" {
		h := s.State.Hash()
		hash = hex.EncodeToString(h[:])
	}
	sd := Side{Session: s.ID, World: s.World.Name, Seed: s.Seed, Agents: s.Agents, Parent: s.Parent, ForkSeq: s.ForkSeq, Events: len(s.Events), StateHash: hash,
		TeamScore: sc.TeamScore, Delivered: sc.Delivered, Penalties: sc.Penalties, Tasks: sc.Tasks, TasksDone: sc.TasksDone,
		OnTime: sc.OnTime, Late: sc.TasksDone - sc.OnTime + sc.TicketsResolved - sc.TicketsInSLA, Tickets: sc.Tickets,
		Resolved: sc.TicketsResolved, InSLA: sc.TicketsInSLA, Breaches: sc.SLABreaches,
		Violations: sc.Violations, Rejections: sc.Rejections, Timeouts: sc.Timeouts, TurnErrors: sc.TurnErrors,
		Cases: sc.Cases, CasesDone: sc.CasesDone, CasesInSLA: sc.CasesInSLA,
		Outcome: sc.Outcome, OutcomeMax: sc.OutcomeMax, WrongOutcomes: sc.WrongOutcomes, Collateral: sc.Collateral}
	for _, t := range sc.Templates {
		sd.CaseBreaches += t.Breached
	}
	if s.State.Ended {
		sd.Ended = s.State.EndReason
	}
	if from > 0 && int(from) <= len(s.Events) {
		sd.After = len(s.Events) - int(from) + 1
	}
	return sd
}

type outcome struct{ key, text string }

// outcomes says how each task ended: key compares outcomes (not done, on
// time, late, done without a deadline, unverified), text shows them with
// who and when. Who did it, or when, is not an outcome of its own.
func (s *Session) outcomes() map[string]outcome {
	out := map[string]outcome{}
	for _, t := range s.State.AllTasks() {
		var o outcome
		switch {
		case t.Status != org.StatusDone:
			o.key, o.text = "not done", t.Status
			if t.Assignee != "" {
				o.text += " (" + t.Assignee + ")"
			}
		default:
			class := "done"
			if t.Deadline > 0 {
				class = "on time"
				if t.DoneAt > t.Deadline {
					class = "late"
				}
			}
			if why := policies.Verify(s.State, t); why != "" {
				class += " (unverified)"
			}
			o.key = class
			o.text = fmt.Sprintf("%s by %s at %s", class, t.DoneBy, s.wall(t.DoneAt))
		}
		out[t.ID] = o
	}
	return out
}

func (s *Session) rules() map[string]int {
	m := map[string]int{}
	for _, p := range s.payloads {
		if r, ok := p.(*payload.ActionRejected); ok {
			m[ruleOf(r)]++
		}
	}
	return m
}

func merge(a, b map[string]int) map[string]int {
	m := map[string]int{}
	for k, v := range a {
		m[k] += v
	}
	for k, v := range b {
		m[k] += v
	}
	return m
}
