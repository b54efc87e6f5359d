package org

import "github.com/corpsim/corpsim/worlds"

// This file holds conditional delegation (world format version 2): a
// leave's delegate may be limited to amounts below a threshold and to some
// approval chains (worlds.DelegateLimit). A step beyond the limit goes to
// the absent approver's manager; when there is none it waits for the
// approver's return. Routing (ApproverFor, EscalationTarget) asks
// DelegateMay; the company's rules and the rubric ask DelegateBeyondLimit.

// LeaveLimit is the delegation limit of member m's current leave: nil when
// m is not on leave, has no delegate, or the leave limits nothing.
func (s *State) LeaveLimit(m *Member) *worlds.DelegateLimit {
	if m == nil || !m.OnLeave || m.Delegate == "" || s.World == nil {
		return nil
	}
	// The current leave is the last one of m's that has happened.
	var cur *worlds.Interruption
	for i := range s.World.Interruptions {
		in := &s.World.Interruptions[i]
		if in.Kind == worlds.Leave && in.Member == m.ID && i < len(s.Fired) && s.Fired[i] && (cur == nil || in.At >= cur.At) {
			cur = in
		}
	}
	if cur == nil {
		return nil
	}
	return cur.DelegateLimit
}

// DelegateMay reports whether the delegate of m, on leave, may take a step
// of chain for amount in m's stead.
func (s *State) DelegateMay(m *Member, chain string, amount int64) bool {
	return s.LeaveLimit(m).Allows(chain, amount)
}

// DelegatePassedOver reports whether member, on leave with a delegate,
// has a delegation limit that keeps request r from its delegate.
func (s *State) DelegatePassedOver(member string, r *Request) bool {
	m := s.Member(member)
	return m != nil && m.OnLeave && m.Delegate != "" && !s.DelegateMay(m, r.Chain, r.Amount)
}

// DelegateBeyondLimit returns, when delegate stands in now for a member on
// leave who holds role and whose delegation limit excludes (chain, amount),
// that member and the limit; nil when no such limit binds delegate (it
// holds role itself, or is also the absent member's manager, the fallback).
func (s *State) DelegateBeyondLimit(delegate, role, chain string, amount int64) (*Member, *worlds.DelegateLimit) {
	d := s.Member(delegate)
	if d == nil || d.Role == role {
		return nil, nil
	}
	for _, m := range s.Members {
		if m.Role != role || m.Delegate != delegate || !m.OnLeave {
			continue
		}
		if lim := s.LeaveLimit(m); lim != nil && !lim.Allows(chain, amount) {
			if wm, ok := s.World.Member(m.ID); ok && wm.Manager == delegate {
				continue
			}
			return m, lim
		}
	}
	return nil, nil
}

// managerStandIn is the manager of absent member m who may take a step
// of requester's in m's place, or "".
func (s *State) managerStandIn(m *Member, requester string) string {
	wm, ok := s.World.Member(m.ID)
	if !ok || wm.Manager == "" || wm.Manager == requester {
		return ""
	}
	if o := s.Member(wm.Manager); o != nil && !o.OnLeave {
		return o.ID
	}
	return ""
}
