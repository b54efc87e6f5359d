package agents

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/corpsim/corpsim/org"
)

// Greedy is the baseline that does the obvious thing: it approves valid
// requests waiting for it, finishes what it holds (asking for approval when
// a purchase needs it), and otherwise takes the most valuable task whose
// dependencies are done. It is deterministic and keeps no state.
//
// In a world with systems it does a step's outcome as its content says
// (content.go): greedy takes the first values it sees; the diligent and
// oracle baselines are Greedy with another content mode.
type Greedy struct{ content content }

// Omits names what Greedy never reads of an observation: the upcoming
// tasks, the projects, its own requests and the queues that are up
// (agents/inprocess has them left out). It reads the queues that are
// down: they refuse work until they are back. Greedy must not start
// reading what it names here: TestGreedyOmitsWhatItNeverReads decides
// every turn of the shipped worlds both ways.
func (*Greedy) Omits() org.Omit {
	return org.OmitUpcoming | org.OmitProjects | org.OmitRequests | org.OmitQueuesUp
}

// Decide implements Agent.
func (g *Greedy) Decide(ctx context.Context, o org.Observation) ([]org.Action, error) {
	acts, err := g.decide(ctx, o)
	return capped(acts), err
}

// capped keeps a reply within org.MaxActions (a longer one is refused
// whole): the first actions, and the last, which ends the turn.
func capped(acts []org.Action) []org.Action {
	if len(acts) <= org.MaxActions {
		return acts
	}
	return append(acts[:org.MaxActions-1:org.MaxActions-1], acts[len(acts)-1])
}

func (g *Greedy) decide(_ context.Context, o org.Observation) ([]org.Action, error) {
	acts := caseWork(o, len(o.Assigned) == 0 && len(o.Available) == 0)
	for _, r := range o.Approvals {
		if why := invalidRequest(o, r); why != "" {
			acts = append(acts, org.Action{Type: org.ActReject, Request: r.ID, Reason: why})
		} else {
			acts = append(acts, org.Action{Type: org.ActApprove, Request: r.ID})
		}
	}
	if handingOver(o) {
		// The shift ends soon and the team requires handing work over.
		return handOver(o, acts), nil
	}
	// A case step a separation rule bars us from goes back to its queue.
	barred := barredSteps(o)
	for _, t := range o.Assigned {
		if barred[t.ID] && t.Status == org.StatusClaimed {
			acts = append(acts, org.Action{Type: org.ActHandoff, Task: t.ID})
		}
	}
	// Finish what we hold, most valuable first. Work in a queue that is
	// down waits until it is back (the rules refuse it until then; the
	// queue's coming back wakes those who serve it, so the wait below
	// needs no end, and anything else that changes wakes us too).
	for _, t := range best(o.Assigned) {
		if t.Status == org.StatusInProgress || len(t.Waiting) > 0 || barred[t.ID] {
			continue
		}
		if t.Spent < t.Effort {
			if queueDown(o, t.Queue) {
				continue
			}
			return append(acts, org.Action{Type: org.ActWork, Task: t.ID, For: shiftStint(o, "")}), nil
		}
		if in := t.NeedsInfo; in != nil && !in.Known {
			if !asked(o, in.From, in.Topic) {
				acts = append(acts, org.Action{Type: org.ActMessage, To: in.From,
					Text: fmt.Sprintf("Hi %s, could you tell me about %s? I need it for %s.", in.From, in.Topic, t.ID)})
			}
			continue
		}
		switch t.Approval {
		case "needed", org.RequestRejected:
			if affords(o, t.Charges, t.Purchase) && approvalFits(o) {
				acts = append(acts, org.Action{Type: org.ActRequestApproval, Task: t.ID})
			}
			continue
		case org.RequestPending:
			continue
		}
		if !affords(o, t.Charges, t.Purchase) {
			continue // the rules would refuse it; leave it until the budget allows
		}
		if t.Outcome != nil || t.Meeting != nil {
			more, ready := g.content.step(o, t)
			if acts = append(acts, more...); !ready {
				continue
			}
		}
		acts = append(acts, org.Action{Type: org.ActComplete, Task: t.ID})
	}
	// Nothing we hold can move now: take the most valuable ready task,
	// preferring among equals one picked by a hash of our ID, so that
	// colleagues do not all reach for the same one, and work on it unless
	// its effort is spent (a task handed over once done). A task whose
	// purchase the budget it charges cannot pay is left (budgets are not
	// refilled; the view lists such tasks last), but for a ticket: the head
	// of a queue served in order blocks the tickets behind it until someone
	// holds it.
	if ts := best(affordable(o)); len(ts) > 0 {
		t := &ts[spreadFirst(o.Member, ts)]
		acts = append(acts, org.Action{Type: org.ActClaim, Task: t.ID})
		if t.Spent < t.Effort {
			acts = append(acts, org.Action{Type: org.ActWork, Task: t.ID, For: shiftStint(o, "")})
		}
		return acts, nil
	}
	return append(acts, shiftWait(o, 0)), nil
}

// queueDown reports whether o shows queue down.
func queueDown(o org.Observation, queue string) bool {
	for _, q := range o.Queues {
		if q.ID == queue && q.DownUntil > o.Time {
			return true
		}
	}
	return false
}

// affordable returns the tasks o offers but those that are not tickets
// and whose purchase the budget they charge cannot pay: o.Available itself
// when there are none.
func affordable(o org.Observation) []org.TaskView {
	dear := func(t org.TaskView) bool { return t.Kind != org.KindTicket && !affords(o, t.Charges, t.Purchase) }
	if !slices.ContainsFunc(o.Available, dear) {
		return o.Available
	}
	return slices.DeleteFunc(slices.Clone(o.Available), dear)
}

// asked reports whether a question about topic to member is still unanswered.
func asked(o org.Observation, member, topic string) bool {
	for _, m := range o.Awaiting {
		if m.From == member && strings.Contains(m.Text, topic) {
			return true
		}
	}
	return false
}

// spreadFirst returns the index in ts of the task member takes among
// those tied for the highest value (ts[0]'s, ts sorted by value): see
// leastHashed.
func spreadFirst(member string, ts []org.TaskView) int {
	n := 1
	for n < len(ts) && ts[n].Value == ts[0].Value {
		n++
	}
	return leastHashed(member, ts[:n])
}

// leastHashed returns the index in ties (tasks as good as each other, at
// least one) of the one member takes: the one whose hash of (member,
// task) is least, the earliest of equal hashes — the first of the ties
// sorted stably by that hash, found without copying or sorting them (a
// desk's 50 equal tickets were a copy of 50 task views and a sort, at
// every turn). Colleagues so spread over equal work instead of colliding.
func leastHashed(member string, ties []org.TaskView) int {
	first, least := 0, tieHash(member, ties[0].ID)
	for i := 1; i < len(ties); i++ {
		if h := tieHash(member, ties[i].ID); h < least {
			first, least = i, h
		}
	}
	return first
}

// tieHash is the 64-bit FNV-1a hash of member, a zero byte and task
// (hash/fnv's New64a over those bytes), computed without allocating.
func tieHash(member, task string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(member); i++ {
		h = (h ^ uint64(member[i])) * prime
	}
	h *= prime // the zero byte: h ^ 0 is h
	for i := 0; i < len(task); i++ {
		h = (h ^ uint64(task[i])) * prime
	}
	return h
}

// best returns tasks by value, highest first; ties keep the observation's
// order. When ts are in that order already (a view lists its available
// tasks so, unless tickets head it) it returns ts itself: read it, do not
// change it.
func best(ts []org.TaskView) []org.TaskView {
	if slices.IsSortedFunc(ts, func(a, b org.TaskView) int { return cmp.Compare(b.Value, a.Value) }) {
		return ts // the sort below would leave them as they are
	}
	out := append([]org.TaskView(nil), ts...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].Value > out[j-1].Value; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// invalidRequest says why a request should be rejected, or "".
func invalidRequest(o org.Observation, r org.RequestView) string {
	switch {
	case r.Requester == o.Member:
		return "cannot approve my own request"
	case r.TaskAssignee != r.Requester:
		return "the requester does not hold the task"
	case r.TaskAmount != 0 && r.Amount != r.TaskAmount:
		return "the amount does not match the case's amount"
	case r.TaskAmount == 0 && r.Amount != r.TaskPurchase:
		return "the amount does not match the task's purchase"
	case r.TaskAmount != 0 && !affords(o, r.TaskCharges, r.TaskPurchase):
		return "not enough budget left"
	case r.TaskAmount == 0 && !affords(o, r.TaskCharges, r.Amount):
		return "not enough budget left"
	}
	return ""
}

// barredSteps are the tasks whose actions were refused by a separation
// rule since the member's last turn.
func barredSteps(o org.Observation) map[string]bool {
	var out map[string]bool
	for _, r := range o.Rejected {
		if strings.HasPrefix(r.Rule, "separation/") && r.Action.Task != "" {
			if out == nil {
				out = map[string]bool{}
			}
			out[r.Action.Task] = true
		}
	}
	return out
}

// caseWork is what a member does about cases beyond the steps it takes
// like tasks (format 2): ask the NPCs for the steps that wait on it, and,
// when it has nothing else to do (idle), open a case of a template its role
// may open, with the attributes drawn.
func caseWork(o org.Observation, idle bool) []org.Action {
	var acts []org.Action
	for _, t := range o.Ask {
		acts = append(acts, org.Action{Type: org.ActMessage, To: t.NPC, Task: t.ID,
			Text: fmt.Sprintf("Hi %s, could you %s for case %s, please?", t.NPC, strings.ToLower(t.Title), t.Case)})
	}
	if idle && len(o.Open) > 0 {
		acts = append(acts, org.Action{Type: org.ActOpenCase, Template: o.Open[0].Template})
	}
	return acts
}
