package worlds

import (
	"github.com/corpsim/corpsim/clock"
)

// Default action costs and message latency: what every version 1 world
// uses, and what a version 2 world's costs section changes.
const (
	DefaultTurnCost       = 1 * clock.Minute // every turn takes at least this long
	DefaultClaimCost      = 5 * clock.Minute
	DefaultWorkSpan       = 2 * clock.Hour // work without "for" lasts this long, or until the effort is spent
	DefaultCompleteCost   = 15 * clock.Minute
	DefaultRequestCost    = 10 * clock.Minute
	DefaultDecideCost     = 10 * clock.Minute
	DefaultMessageCost    = 5 * clock.Minute
	DefaultHandoffCost    = 5 * clock.Minute
	DefaultEscalateCost   = 5 * clock.Minute
	DefaultMessageLatency = 10 * clock.Minute // from sending to delivery
)

// Costs are the working time each action takes the member who does it, and
// how long a message takes to arrive. NPCs' bookkeeping takes no time.
type Costs struct {
	Turn            clock.Duration // every turn takes at least this long
	Claim           clock.Duration
	Work            clock.Duration // how long a work action without "for" lasts (at most the effort left)
	Complete        clock.Duration
	RequestApproval clock.Duration
	Decide          clock.Duration // approve or reject
	Message         clock.Duration
	Handoff         clock.Duration
	Escalate        clock.Duration
	MessageLatency  clock.Duration // from sending to delivery
}

// DefaultCosts returns the costs of a world that sets none.
func DefaultCosts() Costs {
	return Costs{Turn: DefaultTurnCost, Claim: DefaultClaimCost, Work: DefaultWorkSpan, Complete: DefaultCompleteCost,
		RequestApproval: DefaultRequestCost, Decide: DefaultDecideCost, Message: DefaultMessageCost,
		Handoff: DefaultHandoffCost, Escalate: DefaultEscalateCost, MessageLatency: DefaultMessageLatency}
}

// ActionCosts returns the world's action costs: its own when its file sets
// them, else DefaultCosts.
func (w *World) ActionCosts() Costs {
	if w.Costs != nil {
		return *w.Costs
	}
	return DefaultCosts()
}

// fileCosts is a version 2 world's costs section: an action's name and its
// working time. An action it leaves out keeps its default.
type fileCosts struct {
	Turn            string `yaml:"turn"`
	Claim           string `yaml:"claim"`
	Work            string `yaml:"work"`
	Complete        string `yaml:"complete"`
	RequestApproval string `yaml:"request_approval"`
	Decide          string `yaml:"decide"`
	Message         string `yaml:"message"`
	Handoff         string `yaml:"handoff"`
	Escalate        string `yaml:"escalate"`
}

// costs reads the costs section and message_latency (version 2) into w.
// A turn and a work span must be more than zero (a turn of no time could
// repeat forever at one instant); the others may be zero.
func (v *validator) costs(f *file, w *World) {
	if f.Costs == nil && f.MessageLatency == "" {
		return
	}
	okC := f.Costs == nil || v.needs(2, "costs", "costs")
	okL := f.MessageLatency == "" || v.needs(2, "message_latency", "message_latency")
	if !okC || !okL {
		return
	}
	c := DefaultCosts()
	dayLen := w.Calendar.DayLength()
	set := func(path, s string, d *clock.Duration, positive bool) {
		if s == "" {
			return
		}
		if x, ok := v.duration(path, s, dayLen, positive); ok {
			*d = x
		}
	}
	if fc := f.Costs; fc != nil {
		set("costs.turn", fc.Turn, &c.Turn, true)
		set("costs.claim", fc.Claim, &c.Claim, false)
		set("costs.work", fc.Work, &c.Work, true)
		set("costs.complete", fc.Complete, &c.Complete, false)
		set("costs.request_approval", fc.RequestApproval, &c.RequestApproval, false)
		set("costs.decide", fc.Decide, &c.Decide, false)
		set("costs.message", fc.Message, &c.Message, false)
		set("costs.handoff", fc.Handoff, &c.Handoff, false)
		set("costs.escalate", fc.Escalate, &c.Escalate, false)
	}
	set("message_latency", f.MessageLatency, &c.MessageLatency, false)
	w.Costs = &c
}
