package agents

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// Agent decides what a member does. Decide is called with one observation
// at a time per member; implementations keeping state per member must be
// created per member (New does that). One whose decisions hang on earlier
// observations says so with a Remembers() bool method: a session resumed,
// forked or taken over shows it its member's past turns first.
type Agent interface {
	Decide(ctx context.Context, obs org.Observation) ([]org.Action, error)
}

// Options configure a built-in agent.
type Options struct {
	Seed uint64
	// Truth are the draws the session's hidden rules and facts come from
	// (its seed, and its draw key if an operator's secret keyed it:
	// sim.Engine.Truth); nil means Seed's, unkeyed. Only the oracle reads
	// it.
	Truth  *worlds.Draws
	Member string
	// World is the session's world: the oracle reads its ground truth
	// (the records it draws for Truth, the members' hidden constraints);
	// diligent reads only how members phrase their constraints, to
	// understand their answers (meetings.go). Others ignore it.
	World *worlds.World
}

var builtins = map[string]func(Options) Agent{
	"idle":    func(Options) Agent { return Idle{} },
	"greedy":  func(Options) Agent { return &Greedy{} },
	"cheater": func(Options) Agent { return &Cheater{} },
	"random":  func(o Options) Agent { return NewRandom(o.Seed, o.Member) },
	"planner": func(o Options) Agent { return NewPlanner(o.Member) },
	// diligent works legitimately: it reads the system the policy ranks
	// first; oracle reads the ground truth (content.go).
	"diligent": func(o Options) Agent { return &Greedy{content: content{mode: byPolicy, world: o.World}} },
	"oracle": func(o Options) Agent {
		d := worlds.NewDraws(o.Seed, nil)
		if o.Truth != nil {
			d = *o.Truth
		}
		return &Greedy{content: content{mode: truth, world: o.World, draws: d}}
	},
}

// Names lists the built-in agents.
func Names() []string {
	return slices.Sorted(maps.Keys(builtins))
}

// New makes a built-in agent by name.
func New(name string, o Options) (Agent, error) {
	f, ok := builtins[name]
	if !ok {
		return nil, fmt.Errorf("agents: unknown agent %q (built in: %s)", name, strings.Join(Names(), ", "))
	}
	return f(o), nil
}

// The built-in agents decide at once: from the observation alone, with no
// I/O and no waiting, so that seats may ask them on their own goroutine
// (agents/inprocess.Immediate). The llm agent, which calls a model, is
// not one of them.
func (Idle) Immediate() bool     { return true }
func (*Greedy) Immediate() bool  { return true } // diligent and oracle too
func (*Cheater) Immediate() bool { return true }
func (*Random) Immediate() bool  { return true }
func (*Planner) Immediate() bool { return true }

// Remembers reports whether the agent decides on what earlier observations
// showed it as well as on the one it is given. A session resumed, forked
// or handed to another worker is played by agents made anew; one that
// remembers is first shown the observations of its member's past turns
// (sim.Recall, in sim/app and the server), so that it goes on as the one
// it replaces would have. The planner remembers the purchases it has seen
// (its budget's cutoff) and the tickets it holds unfunded, diligent what
// attendees told it of their availability, the cheater the shortcuts it
// tried and the case steps it held. The others decide on the observation
// alone.
func (*Planner) Remembers() bool  { return true }
func (*Cheater) Remembers() bool  { return true }
func (g *Greedy) Remembers() bool { return g.content.mode == byPolicy }

// Memory says whether agent a remembers what it was shown (its Remembers
// method) and what of an observation it never reads (its Omits method, as
// agents/inprocess leaves out): how a recall of its member's past turns
// shows them to it (sim.Recall).
func Memory(a Agent) (omit org.Omit, remembers bool) {
	if r, ok := a.(interface{ Remembers() bool }); !ok || !r.Remembers() {
		return 0, false
	}
	if p, ok := a.(interface{ Omits() org.Omit }); ok {
		omit = p.Omits()
	}
	return omit, true
}

// Idle always waits.
type Idle struct{}

// Decide implements Agent.
func (Idle) Decide(context.Context, org.Observation) ([]org.Action, error) {
	return []org.Action{{Type: org.ActWait}}, nil
}
