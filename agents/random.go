package agents

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"

	"github.com/corpsim/corpsim/org"
)

// Random is the baseline that does something plausible at random: each turn
// it lists what its observation offers — claim an available task, work on a
// task it holds, complete one whose effort is spent, ask for an approval,
// approve or reject a request waiting for it, ask for information a task
// needs, message a colleague it has seen, or wait — and picks one. It makes
// progress sometimes and mistakes sometimes (completing a purchase nobody
// approved, rejecting a valid request, idle chatter).
//
// Each turn it draws from a PCG stream of its own keyed by (seed, member,
// turn), never from the global source, and chats with the colleagues that
// turn's observation shows: given the same seed, member and observation it
// returns the same actions, remembering nothing between turns, so that one
// made anew for a resumed or forked session decides as the first would
// have. Make one per member (New does); it is safe for concurrent use.
type Random struct {
	seed, stream uint64
	member       string
}

// NewRandom makes a Random agent for member drawing from the streams
// (seed, member, turn).
func NewRandom(seed uint64, member string) *Random {
	h := fnv.New64a()
	h.Write([]byte("agents/random/"))
	h.Write([]byte(member))
	return &Random{seed: seed, stream: h.Sum64(), member: member}
}

// waits are the durations a random agent waits for when it holds work, so
// that it comes back to it.
var waits = []string{"15m", "30m", "1h", "2h"}

// Decide implements Agent.
func (r *Random) Decide(_ context.Context, o org.Observation) ([]org.Action, error) {
	rng := rand.New(rand.NewPCG(r.seed^o.Turn*0x9e3779b97f4a7c15, r.stream))
	seen := r.colleagues(o)
	var opts []org.Action
	for _, t := range o.Available {
		opts = append(opts, org.Action{Type: org.ActClaim, Task: t.ID})
	}
	for _, t := range o.Assigned {
		if t.Status != org.StatusClaimed {
			continue
		}
		if t.Spent < t.Effort {
			if len(t.Waiting) == 0 {
				opts = append(opts, org.Action{Type: org.ActWork, Task: t.ID})
			}
		} else if t.Approval == "" || t.Approval == org.RequestApproved || t.Approval == "needed" && rng.IntN(4) == 0 {
			// Now and then it forgets to ask for the approval a purchase needs.
			opts = append(opts, org.Action{Type: org.ActComplete, Task: t.ID})
		}
		if t.Approval == "needed" || t.Approval == org.RequestRejected {
			opts = append(opts, org.Action{Type: org.ActRequestApproval, Task: t.ID})
		}
		if len(t.Waiting) > 0 && rng.IntN(4) == 0 {
			// Now and then it gives up a task that cannot move yet.
			opts = append(opts, org.Action{Type: org.ActHandoff, Task: t.ID})
		}
		if in := t.NeedsInfo; in != nil && !in.Known && !asked(o, in.From, in.Topic) {
			opts = append(opts, org.Action{Type: org.ActMessage, To: in.From,
				Text: fmt.Sprintf("Hi %s, what can you tell me about %s? It is for %s.", in.From, in.Topic, t.ID)})
		}
	}
	for _, q := range o.Requests {
		if q.Status == org.RequestPending && rng.IntN(3) == 0 {
			opts = append(opts, org.Action{Type: org.ActEscalate, Request: q.ID})
		}
	}
	for _, q := range o.Approvals {
		opts = append(opts, org.Action{Type: org.ActApprove, Request: q.ID},
			org.Action{Type: org.ActReject, Request: q.ID, Reason: "I am not convinced this purchase is needed."})
	}
	work := len(opts)
	if len(seen) > 0 && rng.IntN(4) == 0 {
		to := seen[rng.IntN(len(seen))]
		opts = append(opts, org.Action{Type: org.ActMessage, To: to, Text: chatter[rng.IntN(len(chatter))]})
	}
	// Waiting is always an option; waiting for a while when it holds work,
	// so that it comes back to it.
	wait := org.Action{Type: org.ActWait}
	if len(o.Assigned) > 0 {
		wait.For = waits[rng.IntN(len(waits))]
	}
	if work == 0 {
		return []org.Action{wait}, nil
	}
	opts = append(opts, wait)
	a := opts[rng.IntN(len(opts))]
	if a.Type == org.ActClaim && rng.IntN(2) == 0 {
		// Start on it at once, half the time.
		return []org.Action{a, {Type: org.ActWork, Task: a.Task}}, nil
	}
	return []org.Action{a}, nil
}

var chatter = []string{
	"Hi, how is it going?",
	"Quick sync: anything blocking you?",
	"FYI I am on it.",
	"Can you take a look when you have a minute?",
}

// colleagues returns the colleagues an observation shows, in the order
// first shown.
func (r *Random) colleagues(o org.Observation) []string {
	var seen []string
	add := func(id string) {
		if id != "" && id != r.member && !slices.Contains(seen, id) {
			seen = append(seen, id)
		}
	}
	for _, m := range o.Inbox {
		add(m.From)
	}
	for _, m := range o.Awaiting {
		add(m.From)
	}
	for _, q := range o.Approvals {
		add(q.Requester)
	}
	for _, q := range o.Requests {
		add(q.Approver)
	}
	for _, ts := range [][]org.TaskView{o.Assigned, o.Available, o.Upcoming} {
		for _, t := range ts {
			add(t.Assignee)
			if t.NeedsInfo != nil {
				add(t.NeedsInfo.From)
			}
		}
	}
	return seen
}
