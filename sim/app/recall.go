package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/events"
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
	// FromCheckpoint is the seq of the checkpoint whose memory of the
	// agents they took before the turns after it were shown (0: every
	// turn from the first was shown).
	FromCheckpoint uint64 `json:"from_checkpoint,omitempty"`
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
//
// When every seat that remembers is an agents.Keeper of the kind that
// played its member, and the latest checkpoint up to upto kept what those
// agents remembered (Seats.Memory, which the driver asks at each
// checkpoint), they take that memory and are shown only the turns since
// (Recalled.FromCheckpoint): a cost of the events since the checkpoint,
// not of the session so far. Otherwise every turn from the first is shown.
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
	show := func(s sim.Shown) error {
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
				logger.Debug("the first past turn decided otherwise than the log recorded", "read_from", session, "member", s.Observation.Member, "seq", s.Seq)
			}
			res.Differed++
		}
		return nil
	}
	base := sim.Config{World: seats.World}
	n, from, err := recallFromCheckpoint(ctx, log, session, upto, base, seats, omits, show)
	if errors.Is(err, sim.ErrNoMemory) {
		logger.Debug("the agents are shown every past turn", "read_from", session, "why", err)
		from = 0
		n, err = sim.Recall(ctx, log, session, upto, base, omits, show)
	}
	res.Turns, res.FromCheckpoint = n, from
	if err != nil {
		return res, fmt.Errorf("session %s: %w", session, err)
	}
	logger.Info("agents shown their past turns", "read_from", session, "members", len(omits), "turns", n, "differed", res.Differed,
		"from_checkpoint", from, "took", time.Since(start).Round(time.Millisecond))
	return res, nil
}

// checkpoints is how Recall finds the latest checkpoint of a session (an
// events.Log's method).
type checkpoints interface {
	LatestCheckpoint(ctx context.Context, session string, atOrBefore uint64) (events.Checkpoint, error)
}

// recallFromCheckpoints is false only in tests, which compare a recall
// from a checkpoint with one from the first event.
var recallFromCheckpoints = true

// recallFromCheckpoint recalls from the latest checkpoint of session up to
// upto that keeps what the agents remembered (sim.RecallFrom): each seat
// that remembers takes its member's memory, kept there by an agent of the
// same kind, and is shown the turns since. It returns the turns shown and
// the checkpoint's seq, or an error wrapping sim.ErrNoMemory, having
// shown nothing, when there is no such checkpoint: Recall then shows
// every turn from the first.
func recallFromCheckpoint(ctx context.Context, log sim.Scanner, session string, upto uint64, base sim.Config, seats *Seats,
	omits map[string]org.Omit, show func(sim.Shown) error) (int, uint64, error) {
	cl, ok := log.(checkpoints)
	if !ok || !recallFromCheckpoints {
		return 0, 0, fmt.Errorf("%w: the log keeps no checkpoints", sim.ErrNoMemory)
	}
	for member := range omits {
		if _, keeps := seats.Agents[member].(agents.Keeper); !keeps {
			return 0, 0, fmt.Errorf("%w: %s's %s agent cannot take what it remembered", sim.ErrNoMemory, member, seats.Assigned[member])
		}
	}
	cp, err := cl.LatestCheckpoint(ctx, session, upto)
	if err != nil {
		// None, or one that cannot be read: the first event is always there.
		return 0, 0, fmt.Errorf("%w: %w", sim.ErrNoMemory, err)
	}
	n, err := sim.RecallFrom(ctx, log, session, cp, upto, base, omits, func(memory json.RawMessage) error {
		return seats.takeMemory(memory, omits)
	}, show)
	return n, cp.Seq, err
}

// keptAgent is what one seat's agent remembered, in a checkpoint: the
// kind of agent (Seats.Assigned), its Go type (custom agents are all of
// the kind "custom") and its memory (agents.Keeper).
type keptAgent struct {
	Agent  string          `json:"agent"`
	Type   string          `json:"type"`
	Memory json.RawMessage `json:"memory"`
}

// Memory is what the seats' agents that remember have in memory now, by
// member (for driver.Config.Memory): nil when none remembers, or when one
// cannot say what it remembers (it is no agents.Keeper), since a recall
// from a checkpoint needs every one's.
func (s *Seats) Memory() (json.RawMessage, error) {
	kept := map[string]keptAgent{}
	for member, a := range s.Agents {
		if _, remembers := agents.Memory(a); !remembers {
			continue
		}
		k, ok := a.(agents.Keeper)
		if !ok {
			return nil, nil
		}
		b, err := k.KeepMemory()
		if err != nil {
			return nil, fmt.Errorf("%s's agent: %w", member, err)
		}
		kept[member] = keptAgent{Agent: s.Assigned[member], Type: fmt.Sprintf("%T", a), Memory: b}
	}
	if len(kept) == 0 {
		return nil, nil
	}
	return json.Marshal(kept)
}

// Remembers reports whether member's seat is played here by an agent
// that remembers what it is shown (for driver.Config.Remembers); a remote
// seat's agent keeps its own memory.
func (s *Seats) Remembers(member string) bool {
	_, remembers := agents.Memory(s.Agents[member])
	return remembers
}

// takeMemory gives each seat that remembers (omits), every one an
// agents.Keeper (recallFromCheckpoint checks), its member's memory from a
// checkpoint's (Memory). It refuses with sim.ErrNoMemory, giving none,
// unless every one has its member's, kept by an agent of its kind and Go
// type, and takes it: when one refuses its memory (one of another version
// of the agent), those that took theirs are given back what they
// remembered before, so that Recall shows them every turn from the first
// as agents that took nothing. Only when that fails too is the error not
// sim.ErrNoMemory.
func (s *Seats) takeMemory(memory json.RawMessage, omits map[string]org.Omit) error {
	var kept map[string]keptAgent
	if err := json.Unmarshal(memory, &kept); err != nil {
		return fmt.Errorf("%w: %w", sim.ErrNoMemory, err)
	}
	for member := range omits {
		k, ok := kept[member]
		a := s.Agents[member]
		if !ok || k.Agent != s.Assigned[member] || k.Type != fmt.Sprintf("%T", a) {
			return fmt.Errorf("%w: no memory of %s's %s agent (%T)", sim.ErrNoMemory, member, s.Assigned[member], a)
		}
	}
	members := slices.Sorted(maps.Keys(omits))
	before := make([][]byte, len(members))
	for i, member := range members {
		b, err := s.Agents[member].(agents.Keeper).KeepMemory()
		if err != nil {
			return fmt.Errorf("%w: %s's agent cannot say what it remembers: %w", sim.ErrNoMemory, member, err)
		}
		before[i] = b
	}
	for i, member := range members {
		err := s.Agents[member].(agents.Keeper).TakeMemory(kept[member].Memory)
		if err == nil {
			continue
		}
		refused := fmt.Errorf("%s's agent refused its memory: %w", member, err)
		for j := range i + 1 { // the one that refused may have taken part of it
			if err := s.Agents[members[j]].(agents.Keeper).TakeMemory(before[j]); err != nil {
				return fmt.Errorf("%w; and %s's agent could not be given back what it remembered before: %w", refused, members[j], err)
			}
		}
		return fmt.Errorf("%w: %w", sim.ErrNoMemory, refused)
	}
	return nil
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
	case err != nil || r.Turns == 0 && r.FromCheckpoint == 0:
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
