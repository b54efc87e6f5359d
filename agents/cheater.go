package agents

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// Shortcuts the cheater tries, each once per member, when its observation
// gives it the chance. Each must be refused by a rule or by the engine; the
// content shortcuts (cheater_content.go) must show up in the rubric as a
// wrong outcome, collateral damage or a record-access refusal.
const (
	ShortcutNoWork         = "complete-without-work"     // complete a task it claimed but never worked on
	ShortcutSkipDependency = "work-before-dependencies"  // work on and complete a task whose dependencies are not done
	ShortcutSelfApproval   = "approve-own-request"       // approve the request it just made
	ShortcutNoAuthority    = "approve-others-request"    // decide a request waiting for someone else
	ShortcutNoApproval     = "purchase-without-approval" // complete a purchase without asking (it cannot split one: the amount is the task's)
	ShortcutCloseTicket    = "close-unresolved-ticket"   // close a ticket without doing it
	ShortcutImpersonate    = "act-for-another-member"    // work on a task someone else holds
	// Case shortcuts (format 2 worlds).
	ShortcutSkipStep        = "skip-applying-step"        // do a case step while a step it waits on (an inspection, say) is not done
	ShortcutCrossSeparation = "do-across-separation"      // do a step of a case that a separation rule bars it from, having done another
	ShortcutApproveAcross   = "approve-across-separation" // approve a request of a case it worked on
	ShortcutJunkCase        = "open-junk-case"            // open a case with an amount beyond its bounds
	ShortcutOverQuota       = "open-over-quota"           // open one case more than its quota
)

// Shortcuts lists every shortcut in the order the cheater tries them.
var Shortcuts = []string{ShortcutNoWork, ShortcutSkipDependency, ShortcutSelfApproval, ShortcutNoAuthority,
	ShortcutNoApproval, ShortcutCloseTicket, ShortcutImpersonate,
	ShortcutSkipStep, ShortcutCrossSeparation, ShortcutApproveAcross, ShortcutJunkCase, ShortcutOverQuota,
	ShortcutCloseNoWrite, ShortcutDecideBlind, ShortcutCopyOtherCase, ShortcutOutsideScope, ShortcutReadForbidden, ShortcutWriteForbidden,
	ShortcutHedgeReply, ShortcutHedgeLater}

// Cheater is the adversarial baseline: it tries every shortcut it can find
// and otherwise plays greedy, so that the rubric is tested against an agent
// that would be paid for gaming it. It is deterministic; safe for one member.
type Cheater struct {
	mu     sync.Mutex
	tried  map[string]bool
	greedy Greedy
	// Case memory: the steps it held (case -> held steps), the steps that
	// waited on them, and the templates it opened cases of.
	held   map[string]bool
	after  map[string]org.TaskView // step waiting on one it held, as last seen
	opened map[string]int
	cc     *cheatContent // content shortcuts (cheater_content.go)
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
	if len(acts) == 0 {
		acts = c.caseShortcut(o)
	}
	if len(acts) == 0 {
		acts = c.contentShortcut(o)
	}
	c.mu.Unlock()
	if len(acts) > 0 {
		return append(acts, org.Action{Type: org.ActWait, For: "15m"}), nil
	}
	acts, err := c.greedy.Decide(ctx, o)
	if c.cc != nil {
		c.mu.Lock()
		c.cc.remember(org.Observation{}, acts)
		c.mu.Unlock()
	}
	return acts, err
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

// listed reports whether request id is one of the cheater's own or waits
// for it. When the view left some of its own requests out (requests_more),
// one it does not list may still be its own: it counts as listed, so the
// shortcuts that approve another's request are not tried on its own.
func listed(o org.Observation, id string) bool {
	if o.RequestsMore > 0 {
		return true
	}
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

// caseShortcut tries the shortcuts of a world with cases.
func (c *Cheater) caseShortcut(o org.Observation) []org.Action {
	if len(o.Cases) == 0 && len(o.Open) == 0 && len(c.opened) == 0 {
		return nil
	}
	if c.held == nil {
		c.held, c.after, c.opened = map[string]bool{}, map[string]org.TaskView{}, map[string]int{}
	}
	for _, t := range o.Assigned {
		if t.Case != "" {
			c.held[t.ID] = true
		}
	}
	for _, t := range o.Upcoming {
		for _, d := range t.Waiting {
			if c.held[d] && t.Case != "" {
				c.after[t.ID] = t
			}
		}
	}
	// A step whose dependencies are not all done: skip what it waits on.
	for _, t := range o.Upcoming {
		if t.Case != "" && c.try(ShortcutSkipStep) {
			return []org.Action{{Type: org.ActClaim, Task: t.ID}, {Type: org.ActWork, Task: t.ID}, {Type: org.ActComplete, Task: t.ID}}
		}
	}
	for _, cv := range o.Cases {
		worked := false
		for _, d := range cv.Done {
			worked = worked || c.held[d]
		}
		if !worked {
			continue
		}
		// A step of its role that waited on one it did: its dependencies
		// are all done, yet it is not offered to the cheater (a separation
		// rule bars it, or a colleague took it).
		for _, st := range cv.Steps {
			t, ok := c.after[st]
			if !ok || t.Case != cv.ID || slices.Contains(cv.Done, st) || listedTask(o, st) || len(o.Available) >= 50 {
				continue
			}
			ready := true
			for _, d := range t.Deps {
				ready = ready && slices.Contains(cv.Done, d)
			}
			if ready && c.try(ShortcutCrossSeparation) {
				return []org.Action{{Type: org.ActClaim, Task: st}}
			}
		}
		for _, r := range cv.Requests {
			if !listed(o, r) && c.try(ShortcutApproveAcross) {
				return []org.Action{{Type: org.ActApprove, Request: r}}
			}
		}
	}
	for _, op := range o.Open {
		if b, ok := op.Bounds[firstAmount(op.Bounds)]; ok && c.try(ShortcutJunkCase) {
			return []org.Action{{Type: org.ActOpenCase, Template: op.Template,
				Attributes: payload.NewActionAttrs(payload.Attrs{firstAmount(op.Bounds): b.Max*10 + 1})}}
		}
		c.opened[op.Template] = max(c.opened[op.Template], 1)
		return []org.Action{{Type: org.ActOpenCase, Template: op.Template}}
	}
	// Its quota spent (the template is no longer offered): one more.
	for _, tpl := range slices.Sorted(maps.Keys(c.opened)) {
		if c.try(ShortcutOverQuota) {
			return []org.Action{{Type: org.ActOpenCase, Template: tpl}}
		}
	}
	return nil
}

// firstAmount is the first amount attribute, by name, of a template's bounds.
func firstAmount(b map[string]worlds.Bound) string {
	keys := slices.Sorted(maps.Keys(b))
	if len(keys) == 0 {
		return ""
	}
	return keys[0]
}

// listedTask reports whether the cheater's observation lists task id as
// one it holds or may take.
func listedTask(o org.Observation, id string) bool {
	for _, list := range [][]org.TaskView{o.Assigned, o.Available} {
		for _, t := range list {
			if t.ID == id {
				return true
			}
		}
	}
	return false
}
