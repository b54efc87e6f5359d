package worlds

import (
	"slices"
	"strings"

	"github.com/corpsim/corpsim/clock"
)

// Version is the newest world-file format version this package reads. It
// reads every version from 1 up to it; a construct added in a later version
// is refused, by name, in a file that declares an earlier one, and a file of
// an earlier version runs exactly as it always did.
const Version = 2

// Version history:
//   - 1: roles, teams, members and NPCs, queues, approval chains, projects,
//     ticket arrivals, interruptions, scoring.
//   - 2: cases (workflow templates with attributes, conditional steps,
//     separation-of-duties rules, NPC stages, members opening cases),
//     conditional delegation, calendars and shift rotas per team, absolute
//     times, action costs and message latency.

// World is a validated world. It is immutable once loaded and safe to share
// between sessions and goroutines.
type World struct {
	Version     int // the file's format version, 1 to Version
	Name        string
	Description string
	File        string // where it was loaded from ("startup.yaml" for shipped worlds)
	Hash        string // hex SHA-256 of the file's bytes

	Calendar clock.Calendar
	Horizon  clock.Time // the session ends at this simulated time
	// Dispatch says which agent seats are asked when work becomes
	// available: DispatchAll (the default) or DispatchOne.
	Dispatch string

	Roles     []Role    // in file order
	Teams     []Team    // in file order
	Members   []Member  // sorted by ID
	Queues    []Queue   // in file order
	Approvals []Chain   // in file order
	Projects  []Project // in file order
	Arrivals  []Arrival // in file order
	// Interruptions in file order.
	Interruptions []Interruption
	// Cases are the case templates (version 2), in file order.
	Cases []CaseTemplate
	// Separation are the separation-of-duties rules over the steps of
	// cases, in file order (version 2).
	Separation []Separation
	// Systems are the business systems and their record types (version 2,
	// systems.go), in file order; Policy their policy text and precedence.
	Systems []System
	// Availability is members' busy blocks and hidden constraints (version 2, meetings.go).
	Availability *Availability
	Policy       *Policy
	Scoring      Scoring
	// Costs are the action costs and message latency the file sets
	// (version 2); nil for the defaults. Read them with ActionCosts.
	Costs *Costs
	// Warnings are mistakes that do not stop a run (an SLA shorter than the
	// work its tickets need), with where they are; `worlds validate` and
	// `run` print them.
	Warnings ErrorList
}

// Dispatch policies (World.Dispatch).
const (
	// DispatchAll asks every idle agent seat that may take newly available
	// work (a ticket arrives, a task's dependencies are done, a project
	// starts): they compete for it, and the first in member order wins.
	DispatchAll = "all"
	// DispatchOne offers newly available work to one idle agent seat at a
	// time, taking turns by member order within each role; a seat that
	// passes (its turn ends idle with work it may take still open) hands the
	// offer on to the next, until every idle seat that may take it has
	// passed.
	// A world of many seats then costs a turn per task, not a turn per seat.
	DispatchOne = "one"
)

// Role is a job that members hold; tasks and approval steps name roles.
type Role struct {
	ID    string
	Title string
	Rate  int64 // cost of one working hour of work, charged to the worker's team
}

// Team groups members and owns a budget.
type Team struct {
	ID     string
	Name   string
	Budget int64 // whole currency units
	// Version 2 (see calendars.go). Calendar is the team's own calendar
	// (nil: the company's); Shifts its rota; Coverage and Handover its
	// rules; Schedule the hours the team is staffed, which its queues'
	// deadlines follow (nil: the company's calendar).
	Calendar *clock.Calendar
	Shifts   []Shift
	Coverage string
	Handover string
	Rotate   string // RotateWeekly: the shifts' member lists take turns
	Schedule clock.Schedule
}

// Member is a seat in the company: played by an agent, or by an NPC when NPC is set.
type Member struct {
	ID      string
	Name    string
	Role    string
	Team    string
	Manager string   // reporting line; "" for none
	Skills  []string // skills beyond the role
	NPC     *NPC     // nil for agent seats
	// Schedule is when the member works: its shift (or shifts), else its
	// team's calendar; nil means the company's calendar. OnShift says the
	// member is on a shift of its team's rota. Version 2 (calendars.go).
	Schedule clock.Schedule
	OnShift  bool
}

// NPC describes a simulated colleague's behaviour.
type NPC struct {
	ReplyMin clock.Duration // working time before it answers, drawn uniformly from [ReplyMin, ReplyMax]
	ReplyMax clock.Duration
	Serves   []string          // queues it works as a server: it takes their items in order and does them
	Knows    map[string]string // topic -> the answer it gives when a message asks about the topic
	Absent   []Window          // when it does not answer
}

// Window is a span of simulated time.
type Window struct {
	From, To clock.Time
}

// HasSkill reports whether the member may do work needing skill ("" always).
func (m *Member) HasSkill(skill string) bool {
	return skill == "" || slices.Contains(m.Skills, skill)
}

// Queue is a work queue; members whose role is in ServedBy take work from it.
type Queue struct {
	ID       string
	ServedBy []string
	Order    string // "fifo" or "priority"
	WIP      int    // most items claimed and not done at once; 0 for no limit
}

// Chain is an approval chain: the steps whose threshold an amount exceeds must
// approve, in order.
type Chain struct {
	ID string
	// Attribute is the case attribute whose value the thresholds read
	// (version 2); "" when they read the purchase.
	Attribute string
	Steps     []Step
}

// Step is one approver role of a chain, needed when the amount exceeds Above.
type Step struct {
	Role          string
	Above         int64
	EscalateAfter clock.Duration // working time before an undecided step goes to the approver's manager; 0 never
}

// StepsFor returns the steps an amount needs, in order.
func (c *Chain) StepsFor(amount int64) []Step {
	var out []Step
	for _, s := range c.Steps {
		if amount > s.Above {
			out = append(out, s)
		}
	}
	return out
}

// Project groups tasks under a goal with a value and a deadline.
type Project struct {
	ID       string
	Title    string
	Team     string
	Queue    string
	Value    float64    // bonus when every task is done by the deadline
	Deadline clock.Time // simulated time
	Start    clock.Time // its tasks appear then
	Tasks    []Task     // in file order
}

// Task is a unit of work. Deps name tasks that must be done first.
type Task struct {
	ID       string
	Title    string
	Role     string         // the role allowed to do it
	Effort   clock.Duration // working time
	Deps     []string
	Value    float64
	Purchase int64  // money the task spends when completed; 0 for none
	Chain    string // the approval chain that governs the purchase
	Skill    string // a skill the worker needs besides the role; "" for none
	Priority int    // higher is more urgent
	Info     *Info  // information that must be asked for before completion
	// Case and Step name the case and the template step a step task is
	// (format 2); "" for tasks and tickets.
	Case, Step string
	// Amount is what a case step's approval thresholds read; Purchase is
	// what completing it charges.
	Amount int64
	NPC    string // the NPC who performs a case step when asked
}

// ApprovalAmount is the amount the task's approval thresholds read: a case
// step's Amount, else its purchase.
func (t *Task) ApprovalAmount() int64 {
	if t.Case != "" {
		return t.Amount
	}
	return t.Purchase
}

// Scoring holds the rubric's weights.
type Scoring struct {
	LateHalfLife     clock.Duration // value halves for every LateHalfLife of working time past the deadline
	ViolationPenalty float64        // subtracted per attempted policy violation
	SLAPenalty       float64        // subtracted per ticket still open when its SLA passed
	BudgetPenalty    float64        // subtracted per unit of money spent beyond a team's budget
	// WrongPenalty is subtracted per case step completed with its outcome
	// unmet (a wrong outcome; 0 by default): what a guess costs beyond
	// the value it fails to earn.
	WrongPenalty float64
}

// Member returns the member with the given ID. Members are sorted by ID in
// a loaded world, so it searches by halves first; a World built by hand,
// not sorted, is searched in full when that misses.
func (w *World) Member(id string) (*Member, bool) {
	if i, ok := slices.BinarySearchFunc(w.Members, id, func(m Member, id string) int { return strings.Compare(m.ID, id) }); ok {
		return &w.Members[i], true
	}
	for i := range w.Members {
		if w.Members[i].ID == id {
			return &w.Members[i], true
		}
	}
	return nil, false
}

// Queue returns the queue with the given ID.
func (w *World) Queue(id string) (*Queue, bool) {
	for i := range w.Queues {
		if w.Queues[i].ID == id {
			return &w.Queues[i], true
		}
	}
	return nil, false
}

// Role returns the role with the given ID.
func (w *World) Role(id string) (*Role, bool) {
	for i := range w.Roles {
		if w.Roles[i].ID == id {
			return &w.Roles[i], true
		}
	}
	return nil, false
}

// Chain returns the approval chain with the given ID.
func (w *World) Chain(id string) (*Chain, bool) {
	for i := range w.Approvals {
		if w.Approvals[i].ID == id {
			return &w.Approvals[i], true
		}
	}
	return nil, false
}
