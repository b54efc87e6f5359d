// Package inprocess plays members' seats with agents in the driver's own
// process: each turn's org.Observation is given to the member's
// agents.Agent as it is, and the []org.Action it returns come back as the
// answer — no JSON, no bus. It implements the driver's Seats (sim/driver),
// beside the NATS path (driver.BusSeats and agents/natshost), and gives the
// same answers: the limits the NATS path's reply parsing enforces (at most
// org.MaxActions actions, at most org.MaxReplyBytes as JSON) are enforced
// here with the same sentences, and text that is not valid UTF-8 reaches
// the engine as encoding/json would carry it, so that a session gives the
// same log either way.
//
//	seats := inprocess.New(map[string]agents.Agent{"alice": greedy}, inprocess.Options{})
//	d := driver.New(driver.Config{Log: log, Conn: nc, Seats: seats})
//
// The observation is the agent's to read and keep: the engine built it for
// this turn alone, but its strings and the tasks' dependency lists are
// shared with the engine's world, so an agent must not modify them.
package inprocess

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"unicode/utf8"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/workers"
)

// Options configure Seats.
type Options struct {
	Logger hclog.Logger // nil: silent
}

// Seats plays a fixed set of members, each with its own agent. Safe for
// concurrent use: the driver asks the members due at one instant at once.
type Seats struct {
	seats map[string]*seat
}

// seat is one member's agent. busy holds one token while the agent decides,
// so that it is given one turn at a time, as agents.Agent requires, even
// when a turn it did not answer in time is still with it.
type seat struct {
	agent     agents.Agent
	omit      org.Omit // what agent never reads (Partial)
	immediate bool     // agent decides at once (Immediate): asked on the asking goroutine
	busy      chan struct{}
	log       hclog.Logger
}

// ErrNotPlayed is Ask's error for a member these seats do not play: its
// turns time out (there is nobody to wait for).
var ErrNotPlayed = fmt.Errorf("inprocess: no agent plays this member here")

// New makes Seats that play each member of seats with its agent. One agent
// may play several members only if it is safe for concurrent use.
func New(seats map[string]agents.Agent, o Options) *Seats {
	logger := o.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	s := &Seats{seats: make(map[string]*seat, len(seats))}
	for m, a := range seats {
		st := &seat{agent: a, busy: make(chan struct{}, 1), log: logger.With("member", m)}
		if p, ok := a.(Partial); ok {
			st.omit = p.Omits()
		}
		if i, ok := a.(Immediate); ok {
			st.immediate = i.Immediate()
		}
		s.seats[m] = st
	}
	return s
}

// Plays reports whether member is one of these seats.
func (s *Seats) Plays(member string) bool {
	_, ok := s.seats[member]
	return ok
}

// Immediate is implemented by an agent that decides at once: work bounded
// by its observation, no I/O, no waiting (the built-in agents but llm).
// Seats ask it on the goroutine that asks (Ask, and the driver's rounds:
// ImmediateSeats), instead of handing each turn to a worker and waiting
// to be woken with the answer, which costs several times what such an
// agent takes to decide. Its turn budget is then not enforced: it cannot
// be waited past, as it does not wait. An agent that may block or call
// out must not be Immediate.
type Immediate interface {
	Immediate() bool
}

// Immediate reports whether member's agent decides at once (Immediate), so
// that the driver asks it on its own goroutine (driver.ImmediateSeats);
// false for a member these seats do not play.
func (s *Seats) Immediate(member string) bool {
	st, ok := s.seats[member]
	return ok && st.immediate
}

// Partial is implemented by an agent that never reads some parts of an
// observation (org.Omit): the greedy baseline does not look at upcoming
// tasks, projects, queues or its own requests.
type Partial interface {
	Omits() org.Omit
}

// Omits reports the parts of an observation member's agent never reads
// (those its Partial names; none for another agent or a member these seats
// do not play), so that the driver need not have them built
// (driver.PartialSeats).
func (s *Seats) Omits(member string) org.Omit {
	if st, ok := s.seats[member]; ok {
		return st.omit
	}
	return 0
}

// Ask gives obs to member's agent and returns its actions. It returns
// ctx's error once ctx ends before the agent answered (the agent, given the
// same ctx, may still be deciding: its answer is dropped, and its next turn
// waits for it within that turn's own budget). An agent that fails (its
// Decide returns an error, or panics) while ctx lasts gives an answer
// whose Failed says why (the engine records turn.failed), as agents/natshost
// answers for it.
func (s *Seats) Ask(ctx context.Context, _, member string, obs org.Observation) (sim.Answer, error) {
	st, ok := s.seats[member]
	if !ok {
		return sim.Answer{}, fmt.Errorf("%w: %s", ErrNotPlayed, member)
	}
	select {
	case st.busy <- struct{}{}:
	case <-ctx.Done():
		return sim.Answer{}, fmt.Errorf("inprocess: the agent is still deciding its previous turn: %w", ctx.Err())
	}
	turn := obs.Turn
	var d decision
	if st.immediate {
		// It decides at once: handing its turn to another goroutine, and
		// waking this one for the answer, would cost more than deciding.
		d = st.decide(ctx, obs)
		<-st.busy
	} else {
		done := make(chan decision, 1)
		decisions.Run(func() {
			defer func() { <-st.busy }()
			done <- st.decide(ctx, obs)
		})
		select {
		case d = <-done:
		case <-ctx.Done():
			return sim.Answer{}, ctx.Err()
		}
	}
	if d.err != nil {
		if ctx.Err() != nil {
			return sim.Answer{}, ctx.Err() // it failed because its budget ran out: a timeout
		}
		why := d.err.Error()
		if why == "" {
			why = "the agent failed"
		}
		return sim.Answer{Turn: turn, Failed: why}, nil
	}
	return answer(turn, d.acts), nil
}

// decision is what an agent's Decide gave.
type decision struct {
	acts []org.Action
	err  error
}

// decide asks the agent, turning a panic into an error.
func (st *seat) decide(ctx context.Context, obs org.Observation) (d decision) {
	defer func() {
		if r := recover(); r != nil {
			st.log.Error("agent panicked deciding; its turn fails", "panic", r, "stack", string(debug.Stack()))
			d = decision{err: fmt.Errorf("agent panicked: %v", r)}
		}
	}()
	acts, err := st.agent.Decide(ctx, obs)
	if err != nil {
		st.log.Warn("agent failed to decide; its turn fails", "error", err)
		return decision{err: err}
	}
	return decision{acts: acts}
}

// answer is the engine's answer to turn made of acts, as it would be had
// acts crossed the bus: encoded as a reply, size-checked and parsed.
func answer(turn uint64, acts []org.Action) sim.Answer {
	if acts == nil {
		acts = []org.Action{}
	}
	for i := range acts {
		if !validUTF8(&acts[i]) {
			acts = wireStrings(acts)
			break
		}
	}
	if maxJSON(acts) > org.MaxReplyBytes {
		// Rare (long texts): measure what the bus would have carried.
		b, err := json.Marshal(org.Reply{Turn: turn, Actions: acts})
		if err == nil && len(b) > org.MaxReplyBytes {
			return sim.Answer{Malformed: fmt.Sprintf("reply is %d bytes; the limit is %d", len(b), org.MaxReplyBytes)}
		}
	}
	if len(acts) > org.MaxActions {
		return sim.Answer{Malformed: fmt.Sprintf("reply has %d actions; the limit is %d", len(acts), org.MaxActions)}
	}
	return sim.Answer{Turn: turn, Actions: acts}
}

// maxJSON bounds from above the bytes of a reply holding acts as JSON: a
// string byte takes at most 6 (an escape such as \u001f), and an action's
// keys, quotes, commas and numbers under 160.
func maxJSON(acts []org.Action) int {
	n := 64
	for i := range acts {
		a := &acts[i]
		n += 160 + 6*(len(a.Type)+len(a.Task)+len(a.Request)+len(a.To)+len(a.Text)+len(a.Reason)+len(a.For)+len(a.ReplyTo)+len(a.Topic))
	}
	return n
}

// strs lists an action's string fields.
func strs(a *org.Action) []*string {
	return []*string{&a.Type, &a.Task, &a.Request, &a.To, &a.Text, &a.Reason, &a.For, &a.ReplyTo, &a.Topic}
}

func validUTF8(a *org.Action) bool {
	for _, p := range strs(a) {
		if !utf8.ValidString(*p) {
			return false
		}
	}
	return true
}

// wireStrings returns a copy of acts whose strings are what encoding/json
// carries: each byte that is not part of valid UTF-8 replaced by U+FFFD.
func wireStrings(acts []org.Action) []org.Action {
	out := make([]org.Action, len(acts))
	copy(out, acts)
	for i := range out {
		for _, p := range strs(&out[i]) {
			if utf8.ValidString(*p) {
				continue
			}
			var b strings.Builder
			for _, r := range *p { // an invalid byte ranges as one utf8.RuneError
				b.WriteRune(r)
			}
			*p = b.String()
		}
	}
	return out
}

// decisions are the workers agents decide on, shared by all Seats.
var decisions = workers.New()
