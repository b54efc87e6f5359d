package agents

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
)

// A Keeper is an agent that remembers (Remembers) and can write down what
// it remembers, and take it back: a session's checkpoints keep what its
// agents remembered, so that a fork or resume from far into a long
// session shows its agents made anew only the turns since the last
// checkpoint (sim/app's Recall) rather than every turn since the first.
//
// TakeMemory of what KeepMemory wrote must leave a fresh agent of the
// same kind and member deciding every later turn as the one that wrote
// it would have: the memory is everything the agent's decisions depend on
// besides the observation. KeepMemory's bytes are a function of that
// memory alone (maps are written in key order). Neither is called while
// the agent decides. A TakeMemory that errs may have taken part of the
// memory: a recall gives it back what it wrote before (KeepMemory of the
// agent still fresh), and shows it every turn from the first.
type Keeper interface {
	KeepMemory() ([]byte, error)
	TakeMemory(memory []byte) error
}

// meetingsKept is a meetingMemory written down: the rules attendees told
// (null for one who said it has none) and who was asked, by member.
type meetingsKept struct {
	Rules map[string]*payload.MeetingRule `json:"rules"`
	Asked []string                        `json:"asked,omitempty"` // sorted
}

func (m *meetingMemory) keep() *meetingsKept {
	if m.rules == nil && m.asked == nil {
		return nil // it never read an inbox for answers
	}
	return &meetingsKept{Rules: m.rules, Asked: slices.Sorted(maps.Keys(m.asked))}
}

func (m *meetingMemory) take(k *meetingsKept) {
	*m = meetingMemory{}
	if k == nil {
		return
	}
	m.rules, m.asked = k.Rules, setOf(k.Asked) // k is the memory's own, decoded for this
	if m.rules == nil {
		m.rules = map[string]*payload.MeetingRule{}
	}
}

// plannerKept is what the planner remembers, written down.
type plannerKept struct {
	Seen     map[string]purchaseKept `json:"seen,omitempty"`
	Parked   []string                `json:"parked,omitempty"` // sorted
	Meetings *meetingsKept           `json:"meetings,omitempty"`
}

type purchaseKept struct {
	Amount int64   `json:"amount"`
	Value  float64 `json:"value"`
}

// KeepMemory implements Keeper: the purchases it has seen, the tickets it
// holds unfunded and what attendees told it.
func (p *Planner) KeepMemory() ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := plannerKept{Parked: slices.Sorted(maps.Keys(p.parked)), Meetings: p.content.meet.keep()}
	if len(p.seen) > 0 {
		k.Seen = make(map[string]purchaseKept, len(p.seen))
		for id, s := range p.seen { // order: fills a map
			k.Seen[id] = purchaseKept{Amount: s.amount, Value: s.value}
		}
	}
	return json.Marshal(&k)
}

// TakeMemory implements Keeper.
func (p *Planner) TakeMemory(memory []byte) error {
	var k plannerKept
	if err := json.Unmarshal(memory, &k); err != nil {
		return fmt.Errorf("agents: planner memory: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen, p.parked = make(map[string]purchase, len(k.Seen)), make(map[string]bool, len(k.Parked))
	for id, s := range k.Seen { // order: fills a map
		p.seen[id] = purchase{amount: s.Amount, value: s.Value}
	}
	for _, id := range k.Parked {
		p.parked[id] = true
	}
	p.byPrice, p.seenTotal = nil, 0 // worked out again from seen
	p.content.meet.take(k.Meetings)
	return nil
}

// greedyKept is what diligent remembers (what attendees told it),
// written down; greedy and oracle remember nothing.
type greedyKept struct {
	Meetings *meetingsKept `json:"meetings,omitempty"`
}

// KeepMemory implements Keeper.
func (g *Greedy) KeepMemory() ([]byte, error) {
	return json.Marshal(greedyKept{Meetings: g.content.meet.keep()})
}

// TakeMemory implements Keeper.
func (g *Greedy) TakeMemory(memory []byte) error {
	var k greedyKept
	if err := json.Unmarshal(memory, &k); err != nil {
		return fmt.Errorf("agents: greedy memory: %w", err)
	}
	g.content.meet.take(k.Meetings)
	return nil
}

// cheaterKept is what the cheater remembers, written down: the shortcuts
// it tried, the case steps it held and those that waited on them, the
// templates it opened cases of, and its content shortcuts' memory.
type cheaterKept struct {
	Tried   []string            `json:"tried,omitempty"` // sorted
	Cases   *cheaterCasesKept   `json:"cases,omitempty"`
	Content *cheaterContentKept `json:"content,omitempty"`
}

type cheaterCasesKept struct {
	Held   []string                `json:"held,omitempty"` // sorted
	After  map[string]org.TaskView `json:"after,omitempty"`
	Opened map[string]int          `json:"opened,omitempty"`
}

type cheaterContentKept struct {
	Meetings *meetingsKept             `json:"meetings,omitempty"`
	Seen     map[string]org.RecordView `json:"seen,omitempty"`
	Order    []string                  `json:"order,omitempty"`
	Wrote    []org.Action              `json:"wrote,omitempty"`
	Looked   []string                  `json:"looked,omitempty"` // sorted
	Passed   []string                  `json:"passed,omitempty"` // sorted
	Target   map[string]string         `json:"target,omitempty"`
	Values   map[string][]string       `json:"values,omitempty"`
}

// KeepMemory implements Keeper.
func (c *Cheater) KeepMemory() ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := cheaterKept{Tried: slices.Sorted(maps.Keys(c.tried))}
	if c.held != nil {
		k.Cases = &cheaterCasesKept{Held: slices.Sorted(maps.Keys(c.held)), After: c.after, Opened: c.opened}
	}
	if cc := c.cc; cc != nil {
		k.Content = &cheaterContentKept{Meetings: cc.policy.meet.keep(), Seen: cc.seen, Order: cc.order, Wrote: cc.wrote,
			Looked: slices.Sorted(maps.Keys(cc.looked)), Passed: slices.Sorted(maps.Keys(cc.passed)), Target: cc.target, Values: cc.values}
	}
	return json.Marshal(&k)
}

// TakeMemory implements Keeper.
func (c *Cheater) TakeMemory(memory []byte) error {
	var k cheaterKept
	if err := json.Unmarshal(memory, &k); err != nil {
		return fmt.Errorf("agents: cheater memory: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tried = setOf(k.Tried)
	c.held, c.after, c.opened = nil, nil, nil
	if k.Cases != nil {
		c.held, c.after, c.opened = setOf(k.Cases.Held), k.Cases.After, k.Cases.Opened
		if c.after == nil {
			c.after = map[string]org.TaskView{}
		}
		if c.opened == nil {
			c.opened = map[string]int{}
		}
	}
	c.cc = nil
	if kc := k.Content; kc != nil {
		cc := &cheatContent{policy: content{mode: byPolicy}, seen: kc.Seen, order: kc.Order, wrote: kc.Wrote,
			looked: setOf(kc.Looked), passed: setOf(kc.Passed), target: kc.Target, values: kc.Values}
		cc.policy.meet.take(kc.Meetings)
		if cc.seen == nil {
			cc.seen = map[string]org.RecordView{}
		}
		if cc.target == nil {
			cc.target = map[string]string{}
		}
		if cc.values == nil {
			cc.values = map[string][]string{}
		}
		c.cc = cc
	}
	return nil
}

// setOf is the set of keys, as the agents keep them: a map to true.
func setOf(keys []string) map[string]bool {
	m := make(map[string]bool, len(keys))
	for _, k := range keys {
		m[k] = true
	}
	return m
}
