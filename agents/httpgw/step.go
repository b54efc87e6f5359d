package httpgw

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/org"
)

// StepRequest is the body of step.
type StepRequest struct {
	// Actions answers the turns the previous step returned, by member;
	// a member without an entry waits ([]).
	Actions map[string][]org.Action `json:"actions"`
}

// StepReply is the body step returns.
type StepReply struct {
	Session      string                     `json:"session"`
	Observations map[string]json.RawMessage `json:"observations"`  // the turns now waiting, by member
	Rewards      float64                    `json:"rewards"`       // the team deltas of RewardEvents
	RewardEvents []events.Event             `json:"reward_events"` // reward events recorded since the previous step
	Done         bool                       `json:"done"`
	Status       string                     `json:"status,omitempty"` // once done: finished or stopped
	// Score is the final team score, once done.
	Score    *float64 `json:"score,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

func (g *Gateway) handleStep(w http.ResponseWriter, r *http.Request) {
	s := g.session(r.PathValue("id"))
	if s == nil {
		writeError(w, http.StatusNotFound, "the gateway did not create session %s (or has forgotten it); step needs a session created through it", r.PathValue("id"))
		return
	}
	wait, err := waitParam(r, time.Minute, 10*time.Minute)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	var req StepRequest
	if !decodeBody(w, r, &req, int64(org.MaxReplyBytes)*int64(len(s.seats)+1), true) {
		return
	}
	for _, m := range slices.Sorted(maps.Keys(req.Actions)) {
		if s.seats[m] == nil {
			writeError(w, http.StatusBadRequest, "%s is not a remote seat of session %s (remote seats: %v)", m, s.id, slices.Sorted(maps.Keys(s.seats)))
			return
		}
	}
	if !s.stepMu.TryLock() {
		writeError(w, http.StatusConflict, "another step of session %s is running", s.id)
		return
	}
	defer s.stepMu.Unlock()
	ctx := r.Context()
	out := StepReply{Session: s.id, Observations: map[string]json.RawMessage{}, RewardEvents: []events.Event{}}
	out.Warnings = s.answerShown(req.Actions)
	s.gather(ctx, time.Now().Add(wait))
	s.syncFeed(ctx)

	s.mu.Lock()
	now := time.Now()
	clear(s.shown)
	for _, m := range slices.Sorted(maps.Keys(s.seats)) {
		if h := s.seats[m].heldLocked(now); h != nil {
			out.Observations[m] = h.obs
			s.shown[m] = h.turn
		}
	}
	for _, ev := range s.rewards[s.stepCursor:] {
		out.RewardEvents = append(out.RewardEvents, ev)
		out.Rewards += teamReward(ev)
	}
	s.stepCursor = len(s.rewards)
	if s.ended {
		out.Done, out.Status = true, s.status
		score, complete := s.scoreLocked()
		out.Score = &score
		if !complete {
			out.Warnings = append(out.Warnings, "the score misses rewards the gateway could not learn (a fork's prefix, or events lost from the feed)")
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, out)
}

// answerShown answers every turn the previous step returned that is still
// waiting, with the member's actions or a wait.
func (s *session) answerShown(actions map[string][]org.Action) []string {
	type answer struct {
		st *seat
		h  *heldTurn
	}
	var warnings []string
	var answers []answer
	s.mu.Lock()
	now := time.Now()
	for _, m := range slices.Sorted(maps.Keys(s.seats)) {
		st := s.seats[m]
		turn, shown := s.shown[m]
		if !shown {
			if _, given := actions[m]; given {
				warnings = append(warnings, fmt.Sprintf("%s: no turn of %s was returned by the previous step; its actions were dropped", m, m))
			}
			continue
		}
		h := st.heldLocked(now)
		if h == nil || h.turn != turn {
			warnings = append(warnings, fmt.Sprintf("%s: turn %d is no longer waiting (answered through act, or timed out); its actions were dropped", m, turn))
			continue
		}
		st.held = nil
		answers = append(answers, answer{st, h})
	}
	clear(s.shown)
	if len(answers) > 0 {
		s.broadcastLocked()
	}
	s.mu.Unlock()
	for _, a := range answers {
		acts := actions[a.st.member]
		if acts == nil {
			acts = []org.Action{}
		}
		b, err := json.Marshal(org.Reply{Turn: a.h.turn, Actions: acts})
		if err != nil {
			panic("httpgw: reply does not encode: " + err.Error())
		}
		for _, warn := range checkActions(acts) {
			warnings = append(warnings, a.st.member+": "+warn)
		}
		if len(acts) > org.MaxActions || len(b) > org.MaxReplyBytes {
			warnings = append(warnings, fmt.Sprintf("%s: the reply has %d actions in %d bytes, over the limits (%d, %d bytes); the engine rejects it",
				a.st.member, len(acts), len(b), org.MaxActions, org.MaxReplyBytes))
		}
		if err := a.h.msg.Respond(b); err != nil {
			a.st.log.Warn("reply not sent", "turn", a.h.turn, "error", err)
			warnings = append(warnings, fmt.Sprintf("%s: the reply to turn %d could not be sent: %v", a.st.member, a.h.turn, err))
		}
	}
	return warnings
}

// gather waits until turns wait for every remote seat, or at least one
// waits and no other has arrived for Config.Gather, or the session has
// ended, or the deadline passes.
func (s *session) gather(ctx context.Context, deadline time.Time) {
	window := s.g.cfg.Gather
	last, lastChange, idleSince := -1, time.Now(), time.Now()
	for {
		now := time.Now()
		s.mu.Lock()
		n := 0
		for _, st := range s.seats {
			if st.heldLocked(now) != nil {
				n++
			}
		}
		ended, total, ch := s.ended, len(s.seats), s.changed
		s.mu.Unlock()
		if ended || (n > 0 && n == total) {
			return
		}
		if n != last {
			last, lastChange, idleSince = n, now, now
		}
		var next time.Duration
		if n > 0 {
			next = lastChange.Add(window).Sub(now)
			if next <= 0 {
				return
			}
		} else {
			next = idleSince.Add(probeEvery).Sub(now)
		}
		left := deadline.Sub(now)
		if left <= 0 {
			return
		}
		next = min(next, left)
		t := time.NewTimer(next)
		select {
		case <-ch:
		case <-t.C:
			if n == 0 && time.Since(idleSince) >= probeEvery {
				s.probe(ctx)
				idleSince = time.Now()
			}
		case <-ctx.Done():
			t.Stop()
			return
		}
		t.Stop()
	}
}

// syncFeed waits until the feed has brought every event the server has
// stored, so the rewards step reports are those of the state its
// observations show.
func (s *session) syncFeed(ctx context.Context) {
	s.mu.Lock()
	ended := s.ended
	s.mu.Unlock()
	if ended {
		return
	}
	st, err := s.g.control(ctx, s.id, wire.OpStatus)
	if err != nil {
		s.probe(ctx)
		return
	}
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		caught, ch := s.ended || s.last >= st.Events, s.changed
		s.mu.Unlock()
		if caught {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			s.log.Warn("the feed lags the log; this step's rewards arrive with the next", "want", st.Events)
			return
		case <-ctx.Done():
			return
		}
	}
}
