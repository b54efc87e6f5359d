package org

import (
	"slices"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/worlds"
)

// This file converts a ticket's definition between the world model
// (worlds.Task, what the engine and the rubric read), its form in the log
// (payload.TaskSpec, in task.created) and its form in a snapshot (TicketDef).
// Each stored form has its own tags: renaming a worlds.Task field changes
// neither a log nor a checkpoint nor a state hash.

// TaskSpecOf is the form task.created records of ticket definition t.
func TaskSpecOf(t *worlds.Task) payload.TaskSpec {
	p := payload.TaskSpec{ID: t.ID, Title: t.Title, Role: t.Role, Effort: t.Effort, Value: t.Value,
		Purchase: t.Purchase, Chain: t.Chain, Skill: t.Skill, Priority: t.Priority}
	if len(t.Deps) > 0 {
		p.Deps = slices.Clone(t.Deps)
	}
	if in := t.Info; in != nil {
		p.Info = &payload.InfoSpec{From: in.From, Topic: in.Topic}
	}
	p.Case, p.Step, p.Amount, p.NPC = t.Case, t.Step, t.Amount, t.NPC
	return p
}

// newMade returns an open task an event made (a ticket, a case step)
// with definition p, which task.created or case.opened records: its ID,
// effort, value and priority are the definition's. The task and its
// definition are one allocation, written field by field (a whole struct
// copied into it costs a write barrier on each of its pointer words while
// the collector marks; a replay allocates a task every two events). An
// empty deps list is nil, however it was written, so that the definition
// (and the snapshot that holds it) is the same whether the event was
// decoded or handed over typed.
func (s *State) newMade(p *payload.TaskSpec) *Task {
	t := s.allocMade()
	d := t.Spec
	d.ID, d.Title, d.Role, d.Effort, d.Value = p.ID, p.Title, p.Role, p.Effort, p.Value
	d.Purchase, d.Chain, d.Skill, d.Priority = p.Purchase, p.Chain, p.Skill, p.Priority
	if len(p.Deps) > 0 {
		d.Deps = slices.Clone(p.Deps)
	}
	if in := p.Info; in != nil {
		d.Info = &worlds.Info{From: in.From, Topic: in.Topic}
	}
	d.Case, d.Step, d.Amount, d.NPC = p.Case, p.Step, p.Amount, p.NPC
	t.fromSpec()
	return t
}

// madeTask is a made task and its definition, allocated together.
type madeTask struct {
	t    Task
	spec worlds.Task
}

// madeSlab is how many made tasks are allocated at once: one allocation
// for a slab instead of one per ticket. Tickets retire about in the order
// they arrive, so a slab is freed soon after its last ticket retires.
const madeSlab = 32

// allocMade allocates an open made task and its definition, linked, from
// the state's slab.
func (s *State) allocMade() *Task {
	if len(s.slab) == 0 {
		s.slab = make([]madeTask, madeSlab)
	}
	both := &s.slab[0]
	s.slab = s.slab[1:]
	t := &both.t
	t.Spec, t.made, t.Status = &both.spec, true, StatusOpen
	return t
}

// fromSpec sets t's ID, effort, value and priority from its definition.
func (t *Task) fromSpec() {
	t.ID, t.Effort, t.Value, t.Priority = t.Spec.ID, t.Spec.Effort, t.Spec.Value, t.Spec.Priority
}

// TicketDef is a ticket's definition as a snapshot (a checkpoint, the state
// hash) stores it. Its keys are the Go field names the snapshot has always
// used, spelled out in tags: state hashes recorded in older logs stay valid.
type TicketDef struct {
	ID       string         `json:"ID"`
	Title    string         `json:"Title"`
	Role     string         `json:"Role"`
	Effort   clock.Duration `json:"Effort"`
	Deps     []string       `json:"Deps"`
	Value    float64        `json:"Value"`
	Purchase int64          `json:"Purchase"`
	Chain    string         `json:"Chain"`
	Skill    string         `json:"Skill"`
	Priority int            `json:"Priority"`
	Info     *TicketInfo    `json:"Info"`
	// A case step's (omitted otherwise, so that tickets' snapshots and
	// state hashes are what they were).
	Case   string `json:"Case,omitempty"`
	Step   string `json:"Step,omitempty"`
	Amount int64  `json:"Amount,omitempty"`
	NPC    string `json:"NPC,omitempty"`
}

// TicketInfo is a TicketDef's information to be asked for.
type TicketInfo struct {
	From  string `json:"From"`
	Topic string `json:"Topic"`
}

func ticketDefOf(t *worlds.Task) *TicketDef {
	d := &TicketDef{ID: t.ID, Title: t.Title, Role: t.Role, Effort: t.Effort, Deps: t.Deps, Value: t.Value,
		Purchase: t.Purchase, Chain: t.Chain, Skill: t.Skill, Priority: t.Priority, Case: t.Case, Step: t.Step, Amount: t.Amount, NPC: t.NPC}
	if in := t.Info; in != nil {
		d.Info = &TicketInfo{From: in.From, Topic: in.Topic}
	}
	return d
}

// task is the world's form of d.
func (d *TicketDef) task() *worlds.Task {
	t := &worlds.Task{ID: d.ID, Title: d.Title, Role: d.Role, Effort: d.Effort, Deps: d.Deps, Value: d.Value,
		Purchase: d.Purchase, Chain: d.Chain, Skill: d.Skill, Priority: d.Priority, Case: d.Case, Step: d.Step, Amount: d.Amount, NPC: d.NPC}
	if in := d.Info; in != nil {
		t.Info = &worlds.Info{From: in.From, Topic: in.Topic}
	}
	return t
}
