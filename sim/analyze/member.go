package analyze

import (
	"cmp"
	"slices"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events/payload"
)

// TaskHold is a span during which the member held a task.
type TaskHold struct {
	Task string `json:"task"`
	Hold
}

// MemberTrace is what one member held, waited on and was blocked by.
type MemberTrace struct {
	Member string `json:"member"`
	Role   string `json:"role"`
	Team   string `json:"team"`
	NPC    bool   `json:"npc,omitempty"`

	Holds  []TaskHold `json:"holds,omitempty"`
	Leaves []Leave    `json:"leaves,omitempty"`
	// Approving are the approval steps that sat with it: others waited on it.
	Approving []ApprovalHold `json:"approving,omitempty"`
	// ApprovalWait is the working time of Approving: how long requests
	// waited on it (the rubric's blocked_others also counts dependencies).
	ApprovalWait Work `json:"approval_wait"`
	// Awaiting are the steps of its own requests, with whom they sat.
	Awaiting []ApprovalHold `json:"awaiting,omitempty"`
	// Blocked are the delays of the tasks it held while it held them
	// (approvals, outages, colleagues' leave), longest first.
	Blocked    []Delay     `json:"blocked,omitempty"`
	Rejections []RuleCount `json:"rejections,omitempty"`
	Timeouts   int         `json:"timeouts"`
	// TurnErrors counts its turns whose agent could not decide (turn.failed).
	TurnErrors int `json:"turn_errors"`
	// Timeline is what it did and what was done to it (not its turns,
	// waits, rewards or work stints).
	Timeline []Entry `json:"timeline"`
}

// Member traces member id.
func (s *Session) Member(id string) (*MemberTrace, error) {
	m := s.State.Member(id)
	if m == nil {
		ids := make([]string, len(s.State.Members))
		for i, m := range s.State.Members {
			ids[i] = m.ID
		}
		return nil, unknown("member", id, ids)
	}
	tr := &MemberTrace{Member: id, Role: m.Role, Team: m.Team, NPC: m.NPC, Leaves: s.leaves[id], Timeouts: 0}
	seqs := map[uint64]bool{}
	add := func(seq uint64) {
		if seq != 0 {
			seqs[seq] = true
		}
	}
	// Tasks it held, in the order it took them.
	for _, t := range s.State.AllTasks() {
		for _, h := range s.spans(t.ID) {
			if h.member == id {
				tr.Holds = append(tr.Holds, TaskHold{Task: t.ID, Hold: s.writeOut(h)})
			}
		}
	}
	slices.SortStableFunc(tr.Holds, func(a, b TaskHold) int { return cmp.Compare(a.From.Seq, b.From.Seq) })
	for _, l := range tr.Leaves {
		add(l.From.Seq)
		if l.Returned != nil {
			add(l.Returned.Seq)
		}
	}
	// Approvals, in request order.
	var reqs []*Approval
	for _, a := range s.requests {
		reqs = append(reqs, a)
	}
	slices.SortFunc(reqs, func(a, b *Approval) int { return cmp.Compare(a.Requested.Seq, b.Requested.Seq) })
	var blocked clock.Duration
	for _, a := range reqs {
		for _, st := range a.Steps {
			for _, h := range st.Holds {
				if h.Approver == id {
					tr.Approving = append(tr.Approving, h)
					blocked += h.Waited.MS
					add(h.From.Seq)
					if h.To != nil {
						add(h.To.Seq)
					}
				}
				if a.Requester == id {
					tr.Awaiting = append(tr.Awaiting, h)
				}
			}
		}
	}
	tr.ApprovalWait = s.dur(blocked)
	// What held up the tasks it held, while it held them.
	for _, h := range tr.Holds {
		tt, err := s.Task(h.Task)
		if err != nil {
			return nil, err
		}
		to := s.State.Now
		if h.To != nil {
			to = h.To.Time
		}
		for _, d := range tt.Delays {
			if d.Kind == DelayDependency || d.Kind == DelayUnclaimed || d.Kind == DelayChange {
				continue
			}
			if d.To.Time <= h.From.Time || d.From.Time >= to {
				continue
			}
			if d.Kind == DelayLeave && d.Who == id {
				continue // its own leave is under Leaves
			}
			tr.Blocked = append(tr.Blocked, d)
			add(d.Seq)
		}
	}
	slices.SortStableFunc(tr.Blocked, func(a, b Delay) int { return cmp.Compare(b.Waited.MS, a.Waited.MS) })
	rules := map[string]int{}
	for i, ev := range s.Events {
		p := s.payloads[i]
		if esc, ok := p.(*payload.ApprovalEscalated); ok && (esc.From == id || esc.To == id) {
			add(ev.Seq)
		}
		if ev.Actor != id {
			continue
		}
		switch ev.Type {
		case payload.EvTurn, payload.EvMemberWaiting, payload.EvReward, payload.EvMessageDelivered, payload.EvWorkStarted, payload.EvWorkFinished:
			continue // its stints are summed up in Holds
		case payload.EvTurnTimeout:
			tr.Timeouts++
		case payload.EvTurnFailed:
			tr.TurnErrors++
		case payload.EvActionRejected:
			rules[ruleOf(p.(*payload.ActionRejected))]++
		}
		add(ev.Seq)
	}
	tr.Rejections = countRules(rules)
	for _, seq := range sortedSeqs(seqs) {
		tr.Timeline = append(tr.Timeline, s.entry(seq))
	}
	return tr, nil
}
