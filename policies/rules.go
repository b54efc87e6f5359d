package policies

import (
	"strings"

	"github.com/corpsim/corpsim/org"
)

// Rule is one blocking check. Check returns nil when the action is allowed.
// Rules only read the state; they are called with actions that have already
// passed org's structural checks (State.Check: the task, request or member
// exists and is in a state the action fits).
type Rule interface {
	Name() string
	Check(s *org.State, member string, a *org.Action) *org.Rejection
}

// Set is an ordered list of rules; the first that refuses wins.
type Set []Rule

// Check runs every rule in order.
func (set Set) Check(s *org.State, member string, a *org.Action) *org.Rejection {
	for _, r := range set {
		if rej := r.Check(s, member, a); rej != nil {
			return rej
		}
	}
	return nil
}

// Default is the company's standard rule book.
func Default() Set {
	return Set{RoleRequired{}, SkillRequired{}, QueueOrder{}, WIPLimit{}, DependenciesFirst{}, WorkDone{}, InfoRequired{},
		ApprovalRequired{}, WithinBudget{}, SeparationOfDuties{}, CaseSeparation{}, DelegationLimit{}, ApproverAuthority{}}
}

// CaseSeparation: the world's separation-of-duties rules over the steps of
// a case (format 2). A refusal names the rule ("separation/<id>") and the
// steps.
type CaseSeparation struct{}

// Name implements Rule.
func (CaseSeparation) Name() string { return "separation" }

// Check implements Rule.
func (r CaseSeparation) Check(s *org.State, member string, a *org.Action) *org.Rejection {
	return checkScoped(r, s, member, a)
}

func (r CaseSeparation) check(s *org.State, member string, a *org.Action) *org.Rejection {
	if len(s.World.Separation) == 0 {
		return nil
	}
	switch a.Type {
	case org.ActClaim, org.ActWork, org.ActComplete:
		if t := s.Task(a.Task); t != nil {
			if rule, why := s.Separated(t, member, false); rule != nil {
				return org.Violation(r.Name()+"/"+rule.ID, "%s", why)
			}
		}
	case org.ActApprove, org.ActReject:
		if req := s.Request(a.Request); req != nil {
			if rule, why := s.Separated(s.Task(req.Task), member, true); rule != nil {
				return org.Violation(r.Name()+"/"+rule.ID, "%s", why)
			}
		}
	case org.ActHandoff:
		// Handing a step to a colleague the rules bar from doing it.
		if t := s.Task(a.Task); t != nil && a.To != "" {
			if rule, why := s.Separated(t, a.To, false); rule != nil {
				return org.Violation(r.Name()+"/"+rule.ID, "handing %s to %s: %s", t.ID, a.To, why)
			}
		}
	}
	return nil
}

// RoleRequired: only a member holding a task's role may claim, work on or complete it.
type RoleRequired struct{}

// Name implements Rule.
func (RoleRequired) Name() string { return "role-required" }

// Check implements Rule.
func (r RoleRequired) Check(s *org.State, member string, a *org.Action) *org.Rejection {
	return checkScoped(r, s, member, a)
}

func (r RoleRequired) check(s *org.State, member string, a *org.Action) *org.Rejection {
	t, m := s.Task(a.Task), s.Member(member)
	if t != nil && m != nil && t.Spec.Role != m.Role {
		return org.Violation(r.Name(), "task %q needs role %q; %s is %q", t.ID, t.Spec.Role, member, m.Role)
	}
	return nil
}

// DependenciesFirst: no work on, and no completion of, a task before its dependencies are done.
type DependenciesFirst struct{}

// Name implements Rule.
func (DependenciesFirst) Name() string { return "dependencies-first" }

// Check implements Rule.
func (r DependenciesFirst) Check(s *org.State, member string, a *org.Action) *org.Rejection {
	return checkScoped(r, s, member, a)
}

func (r DependenciesFirst) check(s *org.State, member string, a *org.Action) *org.Rejection {
	t := s.Task(a.Task)
	if t == nil {
		return nil
	}
	if wait := s.PendingDeps(t); len(wait) > 0 {
		return org.Violation(r.Name(), "task %q waits on %s, not done yet", t.ID, strings.Join(wait, ", "))
	}
	return nil
}

// ApprovalRequired: a task whose purchase exceeds a chain's threshold is completed only after the request is approved.
type ApprovalRequired struct{}

// Name implements Rule.
func (ApprovalRequired) Name() string { return "approval-required" }

// Check implements Rule.
func (r ApprovalRequired) Check(s *org.State, member string, a *org.Action) *org.Rejection {
	return checkScoped(r, s, member, a)
}

func (r ApprovalRequired) check(s *org.State, member string, a *org.Action) *org.Rejection {
	t := s.Task(a.Task)
	if t == nil {
		return nil
	}
	steps := s.StepsFor(t)
	if len(steps) == 0 {
		return nil
	}
	switch st := s.ApprovalStatus(t); st {
	case org.RequestApproved:
		return nil
	case "needed":
		if req := s.Request(t.Request); req != nil {
			return org.Violation(r.Name(), "task %q buys for %d; its approval request %s is %s's, who no longer holds it: ask again",
				t.ID, t.Spec.Purchase, req.ID, req.Requester)
		}
		roles := make([]string, len(steps))
		for i, x := range steps {
			roles[i] = x.Role
		}
		return org.Violation(r.Name(), "task %q buys for %d, which needs approval by %s; no request was made", t.ID, t.Spec.Purchase, strings.Join(roles, " then "))
	default:
		return org.Violation(r.Name(), "task %q buys for %d; its approval request %s is %s", t.ID, t.Spec.Purchase, t.Request, st)
	}
}

// WithinBudget: a task's purchase may not exceed what its team has left.
type WithinBudget struct{}

// Name implements Rule.
func (WithinBudget) Name() string { return "within-budget" }

// Check implements Rule.
func (r WithinBudget) Check(s *org.State, member string, a *org.Action) *org.Rejection {
	return checkScoped(r, s, member, a)
}

func (r WithinBudget) check(s *org.State, member string, a *org.Action) *org.Rejection {
	t := s.Task(a.Task)
	if t == nil || t.Spec.Purchase == 0 {
		return nil
	}
	if b := s.Budget(t.Team); b != nil && t.Spec.Purchase > b.Remaining() {
		return org.Violation(r.Name(), "task %q buys for %d but team %s has %d left", t.ID, t.Spec.Purchase, b.Team, b.Remaining())
	}
	return nil
}

// SeparationOfDuties: nobody decides on their own request.
type SeparationOfDuties struct{}

// Name implements Rule.
func (SeparationOfDuties) Name() string { return "separation-of-duties" }

// Check implements Rule.
func (r SeparationOfDuties) Check(s *org.State, member string, a *org.Action) *org.Rejection {
	return checkScoped(r, s, member, a)
}

func (r SeparationOfDuties) check(s *org.State, member string, a *org.Action) *org.Rejection {
	if req := s.Request(a.Request); req != nil && req.Requester == member {
		return org.Violation(r.Name(), "%s cannot decide on their own request %s", member, req.ID)
	}
	return nil
}

// ApproverAuthority: only the approver a request's current step waits for may decide it.
type ApproverAuthority struct{}

// Name implements Rule.
func (ApproverAuthority) Name() string { return "approver-authority" }

// Check implements Rule.
func (r ApproverAuthority) Check(s *org.State, member string, a *org.Action) *org.Rejection {
	return checkScoped(r, s, member, a)
}

func (r ApproverAuthority) check(s *org.State, member string, a *org.Action) *org.Rejection {
	req := s.Request(a.Request)
	if req == nil || req.Status != org.RequestPending {
		return nil
	}
	if !s.WaitsFor(req, member) {
		st := req.Steps[req.Current]
		return org.Violation(r.Name(), "request %s waits for %s (%s), not %s", req.ID, st.Approver, st.Role, member)
	}
	return nil
}

// WorkDone: a task is completed only once its effort has been spent on it.
type WorkDone struct{}

// Name implements Rule.
func (WorkDone) Name() string { return "work-done" }

// Check implements Rule.
func (r WorkDone) Check(s *org.State, member string, a *org.Action) *org.Rejection {
	return checkScoped(r, s, member, a)
}

func (r WorkDone) check(s *org.State, member string, a *org.Action) *org.Rejection {
	if t := s.Task(a.Task); t != nil && t.Spent < t.Effort {
		return org.Violation(r.Name(), "task %q has %s of %s effort spent", t.ID, t.Spent, t.Effort)
	}
	return nil
}

// SkillRequired: a task that needs a skill is claimed, worked on and completed only by a member who has it.
type SkillRequired struct{}

// Name implements Rule.
func (SkillRequired) Name() string { return "skill-required" }

// Check implements Rule.
func (r SkillRequired) Check(s *org.State, member string, a *org.Action) *org.Rejection {
	return checkScoped(r, s, member, a)
}

func (r SkillRequired) check(s *org.State, member string, a *org.Action) *org.Rejection {
	t := s.Task(a.Task)
	if t == nil || t.Spec.Skill == "" {
		return nil
	}
	if m, ok := s.World.Member(member); ok && !m.HasSkill(t.Spec.Skill) {
		return org.Violation(r.Name(), "task %q needs skill %q, which %s does not have", t.ID, t.Spec.Skill, member)
	}
	return nil
}

// QueueOrder: tickets are taken in their queue's order — oldest first in a
// FIFO queue, highest priority then oldest in a priority queue.
type QueueOrder struct{}

// Name implements Rule.
func (QueueOrder) Name() string { return "queue-order" }

// Check implements Rule.
func (r QueueOrder) Check(s *org.State, member string, a *org.Action) *org.Rejection {
	return checkScoped(r, s, member, a)
}

func (r QueueOrder) check(s *org.State, member string, a *org.Action) *org.Rejection {
	t, m := s.Task(a.Task), s.Member(member)
	if t == nil || m == nil {
		return nil
	}
	if ahead := s.QueueAhead(t, member); ahead != nil {
		return org.Violation(r.Name(), "ticket %q must wait: %q is ahead of it in queue %s", t.ID, ahead.ID, t.Queue)
	}
	return nil
}

// WIPLimit: a queue with a WIP limit has at most that many items claimed
// and not done, and takes claims of ready work only (a task whose
// dependencies are done): a claim of blocked work would hold one of the
// queue's places for nothing while its dependencies are pending, and one
// member claiming the queue's upcoming work could stop the whole team.
type WIPLimit struct{}

// Name implements Rule.
func (WIPLimit) Name() string { return "wip-limit" }

// Check implements Rule.
func (r WIPLimit) Check(s *org.State, member string, a *org.Action) *org.Rejection {
	return checkScoped(r, s, member, a)
}

func (r WIPLimit) check(s *org.State, member string, a *org.Action) *org.Rejection {
	t := s.Task(a.Task)
	if t == nil {
		return nil
	}
	if q, ok := s.World.Queue(t.Queue); ok && q.WIP > 0 {
		if pending := s.PendingDeps(t); len(pending) > 0 {
			return org.Violation(r.Name(), "queue %s limits its work in progress to %d and takes ready work only: %s waits for %s",
				q.ID, q.WIP, t.ID, strings.Join(pending, ", "))
		}
		if n := s.InProgress(q.ID); n >= q.WIP {
			return org.Violation(r.Name(), "queue %s already has %d items in progress (limit %d)", q.ID, n, q.WIP)
		}
	}
	return nil
}

// InfoRequired: a task that needs information from a colleague is completed only once its assignee has it.
type InfoRequired struct{}

// Name implements Rule.
func (InfoRequired) Name() string { return "info-required" }

// Check implements Rule.
func (r InfoRequired) Check(s *org.State, member string, a *org.Action) *org.Rejection {
	return checkScoped(r, s, member, a)
}

func (r InfoRequired) check(s *org.State, member string, a *org.Action) *org.Rejection {
	t, m := s.Task(a.Task), s.Member(member)
	if t == nil || m == nil || t.Spec.Info == nil {
		return nil
	}
	if !m.KnowsTopic(t.Spec.Info.Topic) {
		return org.Violation(r.Name(), "task %q needs %q from %s; ask them", t.ID, t.Spec.Info.Topic, t.Spec.Info.From)
	}
	return nil
}
