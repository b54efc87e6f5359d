package app

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/inprocess"
	"github.com/corpsim/corpsim/agents/natshost"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/worlds"
)

// Seats are a session's seats as this process plays them: the members it
// plays with an agent of its own, and those remote agents play over the
// bus. BuildSeats makes them; Host gives them to the driver.
type Seats struct {
	Agents map[string]agents.Agent // member -> the agent that plays it here: built in, llm or custom
	Remote []string                // members played by remote agents over the bus, sorted
	// Assigned is what the session records for each member: its agents
	// spec's choice, "custom" for an agent given in SeatOptions.Custom
	// (an llm seat stays "llm").
	Assigned map[string]string
	Kinds    map[string]int // seats by kind: builtin, llm, custom, remote
	// World is the world the seats' session plays, loaded (BuildSeats'
	// w): Recall rebuilds the past states on it rather than loading it
	// again from the log (seconds for the largest worlds). Nil: loaded.
	World *worlds.World
}

// SeatOptions are what BuildSeats cannot read from a session's metadata.
type SeatOptions struct {
	LLM agents.Agent // plays the seats assigned "llm"
	// Custom plays these members instead of the agent they are assigned
	// (each must be a seat of the session); the session records them
	// "custom", except llm seats.
	Custom map[string]agents.Agent
	// Lenient leaves a seat whose built-in agent this process cannot make
	// (a "custom" seat of a resumed session) unplayed: it is asked over the
	// bus like a remote seat, and its turns time out if nobody answers.
	// Without it such a seat is an error. Seats assigned "llm" without LLM
	// are an error either way (NoLLMError): nobody would answer them.
	Lenient bool
	// Truth are the draws the session's hidden rules and facts come from
	// (sim.Engine.Truth), which the agents told them (the oracle) read;
	// nil: the session's seed's, unkeyed.
	Truth *worlds.Draws
}

// ErrNoLLM is BuildSeats' error for a seat assigned "llm" without an
// llm agent to play it.
var ErrNoLLM = errors.New("the agents name llm, but no llm agent is configured")

// NoLLMError is BuildSeats' error for seats assigned "llm" without an llm
// agent to play them: it names them, and is ErrNoLLM.
type NoLLMError struct{ Seats []string } // sorted

func (e *NoLLMError) Error() string {
	return ErrNoLLM.Error() + " (seats " + strings.Join(e.Seats, ", ") + ")"
}

func (e *NoLLMError) Unwrap() error { return ErrNoLLM }

// AssignSeats reads an agents spec for world w — one agent for every seat
// ("greedy"), or a default and per-member choices
// ("planner,alice=idle,bob=llm", and "bob=remote" if allowRemote) — into
// the agent name of every seat, "llm" for the seats the llm agent plays.
// It returns ErrNoLLM if the spec names llm and there is no llm agent
// (haveLLM false), and agents.Assign's errors.
func AssignSeats(spec string, w *worlds.World, allowRemote, haveLLM bool) (map[string]string, error) {
	spec, llmSeats := agents.SplitLLM(spec, w)
	if len(llmSeats) > 0 && !haveLLM {
		return nil, ErrNoLLM
	}
	seats, err := agents.Assign(spec, w, allowRemote)
	if err != nil {
		return nil, err
	}
	for _, m := range llmSeats {
		seats[m] = "llm"
	}
	return seats, nil
}

// BuildSeats makes the seats of the session meta (world w) from the agents
// it assigns (meta.Agents, as agents.Assign makes them from a spec):
// built-in agents seeded from the session's seed and their member, the
// llm agent, custom agents, and remote seats.
func BuildSeats(meta events.SessionMeta, w *worlds.World, o SeatOptions) (*Seats, error) {
	s := &Seats{Agents: map[string]agents.Agent{}, Assigned: maps.Clone(meta.Agents), Kinds: map[string]int{}, World: w}
	if s.Assigned == nil {
		s.Assigned = map[string]string{}
	}
	var noLLM []string
	for _, member := range slices.Sorted(maps.Keys(meta.Agents)) {
		name := meta.Agents[member]
		if _, ok := w.Member(member); !ok {
			return nil, fmt.Errorf("session %s assigns an agent to %q, which world %s does not have", meta.ID, member, w.Name)
		}
		if a, ok := o.Custom[member]; ok {
			s.Agents[member] = a
			if name != "llm" {
				s.Assigned[member] = "custom"
			}
			s.Kinds["custom"]++
			continue
		}
		switch name {
		case agents.Remote:
			s.Remote = append(s.Remote, member)
			s.Kinds["remote"]++
			continue
		case "llm":
			if o.LLM == nil {
				noLLM = append(noLLM, member)
				continue
			}
			s.Agents[member] = o.LLM
			if in, ok := o.LLM.(worldly); ok {
				s.Agents[member] = in.In(w, meta.ID, member)
			}
			s.Kinds["llm"]++
			continue
		}
		a, err := agents.New(name, agents.Options{Seed: meta.Seed, Truth: o.Truth, Member: member, World: w})
		if err != nil {
			if o.Lenient {
				continue
			}
			return nil, fmt.Errorf("seat %s: %w", member, err)
		}
		s.Agents[member] = a
		s.Kinds["builtin"]++
	}
	if len(noLLM) > 0 {
		return nil, &NoLLMError{Seats: noLLM}
	}
	for member := range o.Custom {
		if _, ok := meta.Agents[member]; !ok {
			return nil, Usagef("no agent seat %q in world %s", member, w.Name)
		}
	}
	return s, nil
}

// worldly is an agent that plays each seat with what fits it (the llm
// agent: the world's tools, agents.ToolDefsFor, and the member's
// conversation kept at checkpoints).
type worldly interface {
	In(w *worlds.World, session, member string) agents.Agent
}

// forgetter is an agent that keeps something of each session it plays
// (the llm agent: its conversations) until told the session is over.
type forgetter interface{ Forget(session string) }

// Forget tells the agents of these seats that session is over, so that
// one playing many sessions (a server's llm agent, eval's seeds) drops
// what it kept of it.
func (s *Seats) Forget(session string) {
	for _, a := range s.Agents {
		if f, ok := a.(forgetter); ok {
			f.Forget(session)
		}
	}
}

// HostOptions configure Host.
type HostOptions struct {
	Session string
	// Conn is the bus connection members not played here are asked on
	// (the driver's).
	Conn *nats.Conn
	// OverBus asks the members played here over the bus too: their agents
	// answer through agents/natshost on HostConn, as remote agents do,
	// their observations and replies encoded as JSON.
	OverBus  bool
	HostConn *nats.Conn
	Logger   hclog.Logger
	Timeout  time.Duration // an agent's budget per decision (natshost); 0 means 30s
}

// Host returns how the driver asks these seats (driver.Config.Seats): the
// members played here in process (agents/inprocess: their observations
// given to their agents as they are, no JSON, no bus), or all over the bus
// with OverBus; every other member over the bus. stop releases what Host
// started, once the session's driver returned.
func (s *Seats) Host(o HostOptions) (seats driver.Seats, stop func(), err error) {
	bus := driver.BusSeats(o.Conn)
	if o.OverBus {
		h, err := natshost.Serve(o.HostConn, o.Session, s.Agents, natshost.Options{Logger: o.Logger, Timeout: o.Timeout})
		if err != nil {
			return nil, nil, err
		}
		return bus, h.Close, nil
	}
	local := inprocess.New(s.Agents, inprocess.Options{Logger: o.Logger})
	return hosted{local: local, bus: bus}, func() {}, nil
}

// hosted asks the members local plays in process, and the others on the bus.
type hosted struct {
	local *inprocess.Seats
	bus   driver.Seats
}

// Omits implements driver.PartialSeats: what the agent of a member
// played in process never reads; nothing for the others (over the bus an
// observation is whole).
func (h hosted) Omits(member string) org.Omit { return h.local.Omits(member) }

// Immediate implements driver.ImmediateSeats: a member played in process
// by an agent that decides at once; none over the bus.
func (h hosted) Immediate(member string) bool { return h.local.Immediate(member) }

func (h hosted) Ask(ctx context.Context, session, member string, obs org.Observation) (sim.Answer, error) {
	if h.local.Plays(member) {
		return h.local.Ask(ctx, session, member, obs)
	}
	return h.bus.Ask(ctx, session, member, obs)
}
