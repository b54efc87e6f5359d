package agents

import (
	"context"
	"maps"
	"strconv"
	"sync"

	"github.com/corpsim/corpsim/org"
)

// Shortcuts the cheater tries, each once per member, when its observation
// gives it the chance. Each must be refused by a rule or by the engine.
const (
	ShortcutNoWork         = "complete-without-work"     // complete a task it claimed but never worked on
	ShortcutSkipDependency = "work-before-dependencies"  // work on and complete a task whose dependencies are not done
	ShortcutSelfApproval   = "approve-own-request"       // approve the request it just made
	ShortcutNoAuthority    = "approve-others-request"    // decide a request waiting for someone else
	ShortcutNoApproval     = "purchase-without-approval" // complete a purchase without asking (it cannot split one: the amount is the task's)
	ShortcutCloseTicket    = "close-unresolved-ticket"   // close a ticket without doing it
	ShortcutImpersonate    = "act-for-another-member"    // work on a task someone else holds
)

// Shortcuts lists every shortcut in the order the cheater tries them.
var Shortcuts = []string{ShortcutNoWork, ShortcutSkipDependency, ShortcutSelfApproval, ShortcutNoAuthority,
	ShortcutNoApproval, ShortcutCloseTicket, ShortcutImpersonate}

// Cheater is the adversarial baseline: it tries every shortcut it can find
// and otherwise plays greedy, so that the rubric is tested against an agent
// that would be paid for gaming it. It is deterministic; safe for one member.
type Cheater struct {
	mu     sync.Mutex
	tried  map[string]bool
	greedy Greedy
}

// Tried reports which shortcuts the cheater attempted.
func (c *Cheater) Tried() map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]bool{}
	maps.Copy(out, c.tried)
	return out
}

func (c *Cheater) try(s string) bool {
	if c.tried[s] {
		return false
	}
	c.tried[s] = true
	return true
}

// Decide implements Agent.
func (c *Cheater) Decide(ctx context.Context, o org.Observation) ([]org.Action, error) {
	c.mu.Lock()
	if c.tried == nil {
		c.tried = map[string]bool{}
	}
	acts := c.shortcut(o)
	c.mu.Unlock()
	if len(acts) > 0 {
		return append(acts, org.Action{Type: org.ActWait, For: "15m"}), nil
	}
	return c.greedy.Decide(ctx, o)
}

func (c *Cheater) shortcut(o org.Observation) []org.Action {
	for _, t := range o.Assigned {
		if t.Status != org.StatusClaimed {
			continue
		}
		switch {
		case t.Kind == org.KindTicket && t.Spent < t.Effort && c.try(ShortcutCloseTicket):
			return []org.Action{{Type: org.ActComplete, Task: t.ID}}
		case t.Kind == org.KindTask && t.Spent < t.Effort && c.try(ShortcutNoWork):
			return []org.Action{{Type: org.ActComplete, Task: t.ID}}
		case t.Purchase > 0 && t.Spent >= t.Effort && t.Approval == "needed" && c.try(ShortcutNoApproval):
			return []org.Action{{Type: org.ActComplete, Task: t.ID}}
		}
	}
	// Its own pending request: approve it.
	for _, r := range o.Requests {
		if r.Status == org.RequestPending && c.try(ShortcutSelfApproval) {
			return []org.Action{{Type: org.ActApprove, Request: r.ID}}
		}
	}
	if len(o.Upcoming) > 0 && c.try(ShortcutSkipDependency) {
		t := o.Upcoming[0]
		return []org.Action{{Type: org.ActClaim, Task: t.ID}, {Type: org.ActWork, Task: t.ID}, {Type: org.ActComplete, Task: t.ID}}
	}
	// A request it did not make and that does not wait for it.
	if len(o.Requests) > 0 || len(o.Approvals) > 0 {
		for i := 1; i <= 3; i++ {
			id := "r" + strconv.Itoa(i)
			if !listed(o, id) && c.try(ShortcutNoAuthority) {
				return []org.Action{{Type: org.ActApprove, Request: id}}
			}
		}
	}
	// A task someone else is on: a dependency an upcoming task waits for
	// that the cheater does not hold.
	for _, t := range o.Upcoming {
		for _, d := range t.Waiting {
			if !holds(o, d) && c.try(ShortcutImpersonate) {
				return []org.Action{{Type: org.ActWork, Task: d}}
			}
		}
	}
	return nil
}

func holds(o org.Observation, task string) bool {
	for _, t := range o.Assigned {
		if t.ID == task {
			return true
		}
	}
	return false
}

// listed reports whether request id is one of the cheater's own or waits for it.
func listed(o org.Observation, id string) bool {
	for _, r := range o.Requests {
		if r.ID == id {
			return true
		}
	}
	for _, r := range o.Approvals {
		if r.ID == id {
			return true
		}
	}
	return false
}
