package server

import (
	"encoding/json"
	"strconv"

	"github.com/nats-io/nats.go"

	"github.com/corpsim/corpsim/agents/wire"
)

// hopHeader counts how many services passed a create request on.
const hopHeader = "Corpsim-Hops"

// maxHops bounds how often a create request is passed on before the
// service that has it refuses it.
const maxHops = 4

// updateQueue joins the create queue group while the service runs fewer
// than MaxSessions sessions and is not shutting down, and leaves it
// otherwise. Leaving drains the subscription: a request already delivered
// is passed on (passOn), not dropped.
func (s *Service) updateQueue() error {
	s.mu.Lock()
	want := !s.closed && s.runningLocked() < s.cfg.MaxSessions
	s.mu.Unlock()
	s.qmu.Lock()
	defer s.qmu.Unlock()
	switch {
	case want && s.create == nil:
		sub, err := s.conn.QueueSubscribe(wire.CreateSubject, s.cfg.Queue, s.handleCreate)
		if err != nil {
			return err
		}
		s.create = sub
		s.logger.Debug("joined the create queue group", "queue", s.cfg.Queue)
	case !want && s.create != nil:
		_ = s.create.Drain()
		s.create = nil
		s.logger.Debug("left the create queue group", "queue", s.cfg.Queue)
	}
	return nil
}

// queueChanged updates the queue group membership after a session started
// or ended (a no-op without Config.Queue).
func (s *Service) queueChanged() {
	if s.cfg.Queue == "" {
		return
	}
	if err := s.updateQueue(); err != nil {
		s.logger.Warn("cannot update the create queue subscription", "error", err)
	}
}

// passOn hands a create request this service cannot take (it is full or
// shutting down, and has left or is leaving the queue group) back to the
// group, with the client's reply subject, so that another member answers
// it. It reports false if the service should answer it itself (it has
// room, or the request was passed on too often; it is then refused).
func (s *Service) passOn(msg *nats.Msg) bool {
	s.mu.Lock()
	full := s.closed || s.runningLocked() >= s.cfg.MaxSessions
	s.mu.Unlock()
	if !full || msg.Reply == "" {
		return false
	}
	s.queueChanged()
	hops := 0
	if msg.Header != nil {
		hops, _ = strconv.Atoi(msg.Header.Get(hopHeader))
	}
	if hops >= maxHops {
		return false
	}
	fwd := &nats.Msg{Subject: msg.Subject, Reply: msg.Reply, Data: msg.Data, Header: nats.Header{}}
	fwd.Header.Set(hopHeader, strconv.Itoa(hops+1))
	if err := s.conn.PublishMsg(fwd); err != nil {
		b, _ := json.Marshal(wire.CreateReply{Error: "server: cannot pass the request on: " + err.Error()})
		_ = msg.Respond(b)
	}
	return true
}
