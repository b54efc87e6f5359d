package app

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
)

// recaller is a remembering agent that takes a past turn with its
// recorded answer instead of deciding it again (the llm agent, whose
// conversation keeps the last turns and which would ask a model).
type recaller interface {
	Recall(o org.Observation, recorded []org.Action) error
}

// Recalled is what Recall did: the past turns it showed the agents that
// remember, and how many of them an agent decided otherwise than the log
// recorded (0 when the agents are deterministic and the session was
// played by agents of the same kinds).
type Recalled struct {
	Turns    int `json:"turns"`
	Differed int `json:"differed"`
}

// Recall shows the agents of seats that remember (agents.Memory: the
// planner, diligent, the cheater, the llm agent) the turns their members
// took in session up to event upto, in order, each with the observation
// it was given then (sim.Recall) as an observation of session playing (the
// session that goes on: a fork's own ID when session is its parent), so
// that a resumed, forked or handed-over session goes on as it would have
// with the agents it began with. An agent with a Recall method takes each
// turn with its recorded answer. Any other decides every past turn again
// and the decision is dropped. A decision other than the recorded answer
// is counted (Differed; the count is logged at info, the first such turn
// at debug): the member's agent is not the one that played it (a fork or
// resume with other agents, where the new agent still learns what its
// member was shown), or it does not decide deterministically. Nothing is
// read when no seat remembers.
func Recall(ctx context.Context, log sim.Scanner, session, playing string, upto uint64, seats *Seats, logger hclog.Logger) (Recalled, error) {
	omits := map[string]org.Omit{}
	for member, a := range seats.Agents {
		if omit, ok := agents.Memory(a); ok {
			omits[member] = omit
		}
	}
	var res Recalled
	if len(omits) == 0 {
		return res, nil
	}
	logger = orNull(logger)
	start := time.Now()
	n, err := sim.Recall(ctx, log, session, upto, sim.Config{World: seats.World}, omits, func(s sim.Shown) error {
		s.Observation.Session = playing
		acts, recalled, err := showTurn(ctx, seats.Agents[s.Observation.Member], s)
		if err != nil {
			return fmt.Errorf("recalling %s's turn at seq %d: %w", s.Observation.Member, s.Seq, err)
		}
		if recalled {
			return nil
		}
		if !sameActions(acts, s.Recorded) {
			if res.Differed == 0 {
				logger.Debug("the first past turn decided otherwise than the log recorded", "session", session, "member", s.Observation.Member, "seq", s.Seq)
			}
			res.Differed++
		}
		return nil
	})
	res.Turns = n
	if err != nil {
		return res, fmt.Errorf("session %s: %w", session, err)
	}
	logger.Info("agents shown their past turns", "session", session, "members", len(omits), "turns", n, "differed", res.Differed,
		"took", time.Since(start).Round(time.Millisecond))
	return res, nil
}

// RecallOrWarn is Recall for a session about to go on: a recall that
// fails (an agent that errs or panics on a past turn, a log it cannot
// read) leaves the agents without their past and says so in a warning,
// rather than keeping the session from going on: what the agents
// remember is theirs, the session's log and state are whole. It returns
// nil when nothing was recalled.
func RecallOrWarn(ctx context.Context, log sim.Scanner, session, playing string, upto uint64, seats *Seats, logger hclog.Logger) *Recalled {
	r, err := Recall(ctx, log, session, playing, upto, seats, logger)
	switch {
	case err != nil && ctx.Err() == nil:
		orNull(logger).Warn("the agents that remember go on without their past: it could not be shown to them", "session", playing, "error", err)
		return nil
	case err != nil || r.Turns == 0:
		return nil // stopped: the session's driver says so
	}
	return &r
}

// showTurn shows agent a past turn s: it takes the recorded answer when it
// can (recaller, recalled true), else decides again and returns what it
// decided. A panic is an error, as the live seats make it a failed turn.
func showTurn(ctx context.Context, a agents.Agent, s sim.Shown) (acts []org.Action, recalled bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the agent panicked: %v", p)
		}
	}()
	if r, ok := a.(recaller); ok {
		return nil, true, r.Recall(s.Observation, s.Recorded)
	}
	acts, err = a.Decide(ctx, s.Observation)
	return acts, false, err
}

// sameActions reports whether decided are the actions recorded: equal as
// the log writes them (no actions are recorded as an empty list). Equal
// actions are written alike, so only those that differ as values are
// written out to compare (a recall of 116,000 planner turns spent more
// writing both lists as JSON than deciding them).
func sameActions(decided, recorded []org.Action) bool {
	if len(decided) != len(recorded) {
		return false
	}
	var a, b []byte
	for i := range decided {
		if decided[i] == recorded[i] {
			continue
		}
		a = payload.AppendAction(a[:0], &decided[i])
		b = payload.AppendAction(b[:0], &recorded[i])
		if !bytes.Equal(a, b) {
			return false
		}
	}
	return true
}
