// Package natshost plays members' seats over NATS: it answers the engine's
// turn requests on each seat's subject by asking an agents.Agent.
//
//	h, err := natshost.Serve(nc, session, map[string]agents.Agent{"alice": greedy}, natshost.Options{})
//	defer h.Close()
package natshost

import (
	"context"
	"fmt"
	"runtime/debug"
	"sort"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/org"
)

// Options configure a Host.
type Options struct {
	Logger  hclog.Logger  // nil: silent
	Timeout time.Duration // per decision; 0 means 30s
}

// Host answers turns for a set of seats. Each seat's turns are handled in
// order on its own goroutine (one NATS subscription per seat).
type Host struct {
	subs []*nats.Subscription
}

// Serve subscribes every seat's turn subject and answers with its agent.
func Serve(nc *nats.Conn, session string, seats map[string]agents.Agent, o Options) (*Host, error) {
	logger := o.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	ids := make([]string, 0, len(seats))
	for id := range seats {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	h := &Host{}
	for _, id := range ids {
		s := &seat{agent: seats[id], timeout: timeout, log: logger.With("member", id)}
		sub, err := nc.Subscribe(wire.TurnSubject(session, id), func(msg *nats.Msg) {
			reply, ok := s.answer(msg.Data)
			if !ok {
				return // no answer within the budget: the engine records a timeout
			}
			if err := msg.Respond(reply); err != nil {
				s.log.Warn("reply not sent", "error", err)
			}
		})
		if err != nil {
			h.Close()
			return nil, fmt.Errorf("natshost: subscribe %s: %w", id, err)
		}
		h.subs = append(h.subs, sub)
	}
	if err := nc.Flush(); err != nil {
		h.Close()
		return nil, fmt.Errorf("natshost: %w", err)
	}
	return h, nil
}

// Close unsubscribes every seat.
func (h *Host) Close() {
	for _, s := range h.subs {
		_ = s.Unsubscribe()
	}
	h.subs = nil
}

// seat is one member's agent. Its turns come one at a time, on its
// subscription's goroutine.
type seat struct {
	agent   agents.Agent
	timeout time.Duration
	log     hclog.Logger
	buf     []byte // the last reply; NATS copies it out before the next turn
}

// answer decodes one turn's observation, asks the agent and returns the
// encoded reply, valid until the next call. An observation that cannot be
// read gets a reply with no actions (turn 0: the turn is unknown). An agent
// that fails (its Decide returns an error, or panics) gets a reply with no
// actions whose error says why (the engine records turn.failed); one that
// failed because the host's budget ran out gets no reply (ok false), and
// the engine records a timeout.
func (s *seat) answer(data []byte) (reply []byte, ok bool) {
	var obs org.Observation
	r := org.Reply{Actions: []org.Action{}}
	if err := decodeObservation(data, &obs); err != nil {
		s.log.Error("bad observation", "error", err)
	} else {
		r.Turn = obs.Turn
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		acts, err := s.decide(ctx, obs)
		expired := ctx.Err() != nil
		cancel()
		switch {
		case err != nil && expired:
			s.log.Warn("agent did not decide within the budget", "error", err)
			return nil, false
		case err != nil:
			s.log.Warn("agent failed to decide; its turn fails", "error", err)
			r.Error = err.Error()
			if r.Error == "" {
				r.Error = "the agent failed"
			}
		case acts != nil:
			r.Actions = acts
		}
	}
	s.buf = wire.AppendReply(s.buf[:0], &r)
	return s.buf, true
}

// decide asks the agent, turning a panic into an error.
func (s *seat) decide(ctx context.Context, obs org.Observation) (acts []org.Action, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("agent panicked deciding; its turn fails", "panic", p, "stack", string(debug.Stack()))
			acts, err = nil, fmt.Errorf("agent panicked: %v", p)
		}
	}()
	return s.agent.Decide(ctx, obs)
}
