package policies

import (
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// DelegationLimit: a delegate standing in for a member on leave decides
// only the approvals the leave's delegation limit allows (world format
// version 2, interruptions[].delegate_limit).
type DelegationLimit struct{}

// Name implements Rule.
func (DelegationLimit) Name() string { return "delegation-limit" }

// Check implements Rule.
func (r DelegationLimit) Check(s *org.State, member string, a *org.Action) *org.Rejection {
	return checkScoped(r, s, member, a)
}

func (r DelegationLimit) check(s *org.State, member string, a *org.Action) *org.Rejection {
	req := s.Request(a.Request)
	if req == nil || req.Status != org.RequestPending {
		return nil
	}
	st := req.Steps[req.Current]
	if absent, lim := s.DelegateBeyondLimit(member, st.Role, req.Chain, req.Amount); absent != nil {
		return org.Violation(r.Name(), "%s stands in for %s (%s) only %s; request %s is %d on chain %s",
			member, absent.ID, st.Role, lim, req.ID, req.Amount, req.Chain)
	}
	return nil
}

// decidedBeyondLimit reports whether step rs of request r was decided by a
// delegate, standing in for a member on leave who holds the step's role,
// beyond that leave's delegation limit. The absent member's manager (the
// fallback) and holders of the role are never beyond one.
func decidedBeyondLimit(s *org.State, r *org.Request, rs *org.RequestStep) bool {
	w := s.World
	approver, ok := w.Member(rs.Approver)
	if !ok || approver.Role == rs.Role {
		return false
	}
	for i := range w.Interruptions {
		in := &w.Interruptions[i]
		if in.Kind != worlds.Leave || in.Delegate != rs.Approver || in.DelegateLimit.Allows(r.Chain, r.Amount) ||
			i >= len(s.Fired) || !s.Fired[i] {
			continue
		}
		absent, ok := w.Member(in.Member)
		if !ok || absent.Role != rs.Role || absent.Manager == rs.Approver {
			continue
		}
		if rs.DecidedAt >= in.At && rs.DecidedAt < w.Calendar.AddWork(in.At, in.For) {
			return true
		}
	}
	return false
}

// leavesFired reports whether every leave of the world that names a
// delegate has happened: only then can decidedBeyondLimit's answers no
// longer change (it reads which have).
func leavesFired(s *org.State) bool {
	for i := range s.World.Interruptions {
		in := &s.World.Interruptions[i]
		if in.Kind == worlds.Leave && in.Delegate != "" && (i >= len(s.Fired) || !s.Fired[i]) {
			return false
		}
	}
	return true
}
