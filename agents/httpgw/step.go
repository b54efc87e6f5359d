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
	"github.com/corpsim/corpsim/org"
)

func (g *Gateway) handleStep(w http.ResponseWriter, r *http.Request) {
	wait, err := waitParam(r, time.Minute, 10*time.Minute)
	if err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	id := r.PathValue("id")
	var req StepRequest
	if !decodeBody(w, r, &req, g.StepLimit(id), true) {
		return
	}
	out, err := g.Step(r.Context(), id, req, wait)
	if err != nil {
		writeErr(w, err)
		return
	}
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
