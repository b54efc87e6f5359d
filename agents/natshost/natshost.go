// Package natshost plays members' seats over NATS: it answers the engine's
// turn requests on each seat's subject by asking an agents.Agent.
//
//	h, err := natshost.Serve(nc, session, map[string]agents.Agent{"alice": greedy}, natshost.Options{})
//	defer h.Close()
package natshost

import (
	"context"
	"fmt"
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
			if err := msg.Respond(s.answer(msg.Data)); err != nil {
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
// read, or an agent that fails, gets a reply with no actions (turn 0 when
// the turn is unknown).
func (s *seat) answer(data []byte) []byte {
	var obs org.Observation
	reply := org.Reply{Actions: []org.Action{}}
	if err := decodeObservation(data, &obs); err != nil {
		s.log.Error("bad observation", "error", err)
	} else {
		reply.Turn = obs.Turn
		ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
		acts, err := s.agent.Decide(ctx, obs)
		cancel()
		if err != nil {
			s.log.Warn("agent failed to decide", "error", err)
		}
		if acts != nil {
			reply.Actions = acts
		}
	}
	s.buf = wire.AppendReply(s.buf[:0], &reply)
	return s.buf
}
