package live

import (
	"encoding/json"
	"fmt"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
)

// maxLatest is how many of the latest events a snapshot lists.
const maxLatest = 25

// View is a session's state rebuilt from its events, one at a time, as
// the live page shows it. It is pure: no I/O, no clock.
type View struct {
	session string
	seed    uint64
	st      *org.State
	latest  []Line // ring of the last maxLatest events, oldest first
	status  string
}

// Line is one event as the page lists it.
type Line struct {
	Seq   uint64 `json:"seq"`
	Clock string `json:"clock"`
	Type  string `json:"type"`
	Actor string `json:"actor,omitempty"`
	Task  string `json:"task,omitempty"`
}

// Applied is the last seq v has applied (0 before session.started).
func (v *View) Applied() uint64 {
	if v.st == nil {
		return 0
	}
	return v.st.LastSeq
}

// Apply applies the next event. The first must be session.started (seq 1);
// an event already applied is ignored.
func (v *View) Apply(ev events.Event) error {
	if v.st == nil {
		if ev.Seq != 1 || ev.Type != payload.EvSessionStarted {
			return fmt.Errorf("live: the first event is seq %d (%s), not session.started", ev.Seq, ev.Type)
		}
		var p payload.SessionStarted
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			return fmt.Errorf("live: session.started: %w", err)
		}
		// Read as it was recorded: within the limits the session ran
		// under, without the checks added since.
		w, _, err := sim.RecordedWorld(&p)
		if err != nil {
			return fmt.Errorf("live: %w", err)
		}
		v.st, v.seed, v.status = org.New(w), p.Seed, "running"
		v.st.SetJudge(policies.Judge) // it shows live work: retired tickets go
	}
	if ev.Seq <= v.st.LastSeq {
		return nil
	}
	if ev.Seq != v.st.LastSeq+1 {
		return fmt.Errorf("live: event %d follows %d", ev.Seq, v.st.LastSeq)
	}
	if err := v.st.Apply(ev); err != nil {
		return err
	}
	v.session = ev.Session
	if ev.Type == payload.EvSessionEnded {
		v.status = "ended"
	}
	var about struct {
		Task string `json:"task"`
	}
	_ = json.Unmarshal(ev.Payload, &about) // best effort: the events without a task say nothing here
	if len(v.latest) == maxLatest {
		copy(v.latest, v.latest[1:])
		v.latest = v.latest[:maxLatest-1]
	}
	v.latest = append(v.latest, Line{Seq: ev.Seq, Clock: v.clock(ev.Time), Type: ev.Type, Actor: ev.Actor, Task: about.Task})
	return nil
}

func (v *View) clock(t int64) string {
	return v.st.World.Calendar.Wall(clock.Time(t)).Format("Mon 2006-01-02 15:04")
}

// Snapshot is what the live page renders: the session now.
type Snapshot struct {
	Session   string        `json:"session"`
	World     string        `json:"world"`
	Seed      uint64        `json:"seed"`
	Status    string        `json:"status"` // running or ended
	EndReason string        `json:"end_reason,omitempty"`
	Clock     string        `json:"clock"` // simulated wall time of the last event
	Events    uint64        `json:"events"`
	Score     float64       `json:"score"` // the team score so far: the sum of the reward events
	Queues    []QueueRow    `json:"queues"`
	Members   []MemberRow   `json:"members"`
	Approvals []ApproverRow `json:"approvals"`
	Latest    []Line        `json:"latest"` // newest first
}

// QueueRow is one work queue.
type QueueRow struct {
	ID         string `json:"id"`
	Open       int    `json:"open"`     // visible and nobody holds it
	Held       int    `json:"held"`     // claimed or in progress
	Done       int    `json:"done"`     // done so far
	Breached   int    `json:"breached"` // tickets open past their SLA
	Down       bool   `json:"down"`     // an outage blocks it now
	DownUntil  string `json:"down_until,omitempty"`
	OverSLANow int    `json:"over_sla_now"` // open tickets whose due time has passed
}

// MemberRow is one member and what it holds.
type MemberRow struct {
	ID      string   `json:"id"`
	Role    string   `json:"role"`
	Team    string   `json:"team"`
	NPC     bool     `json:"npc,omitempty"`
	Holds   []string `json:"holds"`
	Working string   `json:"working,omitempty"` // the task being worked now
	OnLeave bool     `json:"on_leave,omitempty"`
	Turns   uint64   `json:"turns"`
}

// ApproverRow lists the requests waiting on one approver's desk.
type ApproverRow struct {
	Approver string       `json:"approver"`
	Waiting  []WaitingReq `json:"waiting"`
}

// WaitingReq is one request waiting for a decision.
type WaitingReq struct {
	Request   string `json:"request"`
	Task      string `json:"task"`
	Requester string `json:"requester"`
	Amount    int64  `json:"amount"`
	Since     string `json:"since"`
}

// Snapshot describes the state after the last event applied.
func (v *View) Snapshot() Snapshot {
	st := v.st
	out := Snapshot{Session: v.session, Seed: v.seed, Status: v.status, Queues: []QueueRow{}, Members: []MemberRow{},
		Approvals: []ApproverRow{}, Latest: []Line{}}
	if st == nil {
		out.Status = "starting"
		return out
	}
	out.World, out.Events, out.Score, out.EndReason = st.World.Name, st.LastSeq, st.Reward, st.EndReason
	out.Clock = v.clock(int64(st.Now))
	rows := map[string]*QueueRow{}
	for _, q := range st.Queues {
		r := QueueRow{ID: q.ID, Down: q.DownUntil > st.Now}
		if r.Down {
			r.DownUntil = v.clock(int64(q.DownUntil))
		}
		out.Queues = append(out.Queues, r)
	}
	for i := range out.Queues {
		rows[out.Queues[i].ID] = &out.Queues[i]
	}
	for _, t := range st.Tasks() {
		r := rows[t.Queue]
		if r == nil || t.Hidden {
			continue
		}
		switch t.Status {
		case org.StatusDone:
			r.Done++
		case org.StatusOpen:
			r.Open++
		default:
			r.Held++
		}
		if t.Status != org.StatusDone && t.Breached {
			r.Breached++
		}
		if t.Status != org.StatusDone && t.Kind == org.KindTicket && t.Deadline > 0 && t.Deadline < st.Now {
			r.OverSLANow++
		}
	}
	for _, m := range st.Members {
		row := MemberRow{ID: m.ID, Role: m.Role, Team: m.Team, NPC: m.NPC, OnLeave: m.OnLeave, Turns: m.Turn, Holds: []string{}}
		for _, t := range st.Held(m.ID) {
			row.Holds = append(row.Holds, t.ID)
			if t.Status == org.StatusInProgress && t.WorkUntil > st.Now {
				row.Working = t.ID
			}
		}
		out.Members = append(out.Members, row)
	}
	desks := map[string]int{} // approver -> index in out.Approvals
	for _, r := range st.Requests {
		if r.Status != org.RequestPending || r.Current >= len(r.Steps) {
			continue
		}
		who := r.Steps[r.Current].Approver
		i, ok := desks[who]
		if !ok {
			i = len(out.Approvals)
			desks[who] = i
			out.Approvals = append(out.Approvals, ApproverRow{Approver: who})
		}
		out.Approvals[i].Waiting = append(out.Approvals[i].Waiting, WaitingReq{Request: r.ID, Task: r.Task, Requester: r.Requester,
			Amount: r.Amount, Since: v.clock(int64(r.CreatedAt))})
	}
	for i := len(v.latest) - 1; i >= 0; i-- {
		out.Latest = append(out.Latest, v.latest[i])
	}
	return out
}
