// Package service runs many sessions for clients on the bus: corpsim serve.
// It is an edge package, like sim/driver: it owns goroutines, the bus and the
// wall clock (session IDs, creation times, how long to wait for remote seats);
// the engines it runs stay pure.
//
// Clients (with the operator token) create sessions on
// corpsim.v1.sessions.create, naming a world, a seed and which seats are
// built-in agents and which are remote; the reply carries each remote
// seat's own credentials. Remote agents connect with them and answer turns
// on their seat's subject; the embedded server's permissions (natsbus.Auth)
// keep each seat to its own subject. Sessions are controlled on their
// control subject (start, pause, stop, status).
//
//	svc, err := service.New(service.Config{Log: log, Bus: bus, Auth: auth})
//	reply, err := svc.Create(ctx, proto.CreateRequest{World: "startup", Seed: 7, Agents: "greedy,bob=remote"})
package service

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
	"github.com/oklog/ulid/v2"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/natsbus"
	"github.com/corpsim/corpsim/agents/natshost"
	"github.com/corpsim/corpsim/agents/proto"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/worlds"
)

// Config configures a Service. Log and Bus are required.
type Config struct {
	Log             events.Log
	Bus             Bus
	Auth            *natsbus.Auth // nil: remote seats get no credentials (an unauthenticated bus)
	Logger          hclog.Logger
	TurnTimeout     time.Duration // default per turn; 0 means 30s
	JoinTimeout     time.Duration // how long a session waits for its remote seats; 0 means 60s
	CheckpointEvery int
	MaxSessions     int // running at once; 0 means 1000
	// LLM plays the seats a create request gives to "llm"; nil refuses them.
	LLM agents.Agent
}

// Bus is where the service runs: the embedded server (*natsbus.Server) or
// an external one (natsbus.External).
type Bus interface {
	Connect(name string, opts ...nats.Option) (*nats.Conn, error)
	// Interest reports whether anyone subscribes to subject; a bus that
	// cannot tell says true.
	Interest(subject string) bool
}

// Service runs sessions. Safe for concurrent use.
type Service struct {
	cfg    Config
	logger hclog.Logger
	conn   *nats.Conn // driver and control
	host   *nats.Conn // built-in agents
	subs   []*nats.Subscription

	mu       sync.Mutex
	sessions map[string]*session
	closed   bool
	wg       sync.WaitGroup
}

type session struct {
	id      string
	cancel  context.CancelFunc
	done    chan struct{}
	started chan struct{}
	once    sync.Once

	mu     sync.Mutex
	paused bool
	resume chan struct{}
	meta   events.SessionMeta
	engine *sim.Engine
	err    error
}

// New starts a service on the bus.
func New(cfg Config) (*Service, error) {
	if cfg.Log == nil || cfg.Bus == nil {
		return nil, errors.New("service: Log and Bus are required")
	}
	if cfg.TurnTimeout == 0 {
		cfg.TurnTimeout = 30 * time.Second
	}
	if cfg.JoinTimeout == 0 {
		cfg.JoinTimeout = 60 * time.Second
	}
	if cfg.MaxSessions == 0 {
		cfg.MaxSessions = 1000
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	s := &Service{cfg: cfg, logger: logger, sessions: map[string]*session{}}
	var err error
	if s.conn, err = cfg.Bus.Connect("corpsim-service"); err != nil {
		return nil, err
	}
	if s.host, err = cfg.Bus.Connect("corpsim-agents"); err != nil {
		s.conn.Close()
		return nil, err
	}
	create, err := s.conn.Subscribe(proto.CreateSubject, s.handleCreate)
	if err != nil {
		s.Close()
		return nil, err
	}
	list, err := s.conn.Subscribe(proto.ListSubject, s.handleList)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.subs = append(s.subs, create, list)
	return s, s.conn.Flush()
}

func (s *Service) handleCreate(msg *nats.Msg) {
	var req proto.CreateRequest
	var reply proto.CreateReply
	if err := json.Unmarshal(msg.Data, &req); err != nil {
		reply.Error = "malformed request: " + err.Error()
	} else if r, err := s.Create(context.Background(), req); err != nil {
		reply.Error = err.Error()
	} else {
		reply = r
	}
	b, _ := json.Marshal(reply)
	_ = msg.Respond(b)
}

func (s *Service) handleList(msg *nats.Msg) {
	metas, err := s.cfg.Log.Sessions(context.Background())
	var b []byte
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": err.Error()})
	} else {
		b, _ = json.Marshal(metas)
	}
	_ = msg.Respond(b)
}

// Create makes a session and starts running it in the background: at once
// if every seat is built in, once its remote seats are subscribed (or the
// join timeout passes) otherwise, or on a start control message with Wait.
func (s *Service) Create(ctx context.Context, req proto.CreateRequest) (proto.CreateReply, error) {
	s.mu.Lock()
	running := 0
	for _, ss := range s.sessions {
		select {
		case <-ss.done:
		default:
			running++
		}
	}
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return proto.CreateReply{}, errors.New("service: closed")
	}
	if running >= s.cfg.MaxSessions {
		return proto.CreateReply{}, fmt.Errorf("service: %d sessions are running, the limit", running)
	}
	turnTimeout, joinTimeout := s.cfg.TurnTimeout, s.cfg.JoinTimeout
	for _, d := range []struct {
		s   string
		dst *time.Duration
	}{{req.TurnTimeout, &turnTimeout}, {req.JoinTimeout, &joinTimeout}} {
		if d.s == "" {
			continue
		}
		v, err := time.ParseDuration(d.s)
		if err != nil || v <= 0 {
			return proto.CreateReply{}, fmt.Errorf("service: bad duration %q", d.s)
		}
		*d.dst = v
	}
	id := ulid.Make().String()
	var e *sim.Engine
	var meta events.SessionMeta
	var w *worlds.World
	fresh := req.Parent == ""
	if fresh {
		src := []byte(req.Source)
		name := "request.yaml"
		if req.Source == "" {
			var err error
			if src, err = worlds.Source(req.World); err != nil {
				return proto.CreateReply{}, err
			}
			name = req.World + ".yaml"
		}
		var err error
		if w, err = worlds.Load(name, src); err != nil {
			return proto.CreateReply{}, err
		}
		if e, err = sim.New(sim.Config{World: w, Source: src, Seed: req.Seed, Session: id, Load: req.Load}); err != nil {
			return proto.CreateReply{}, err
		}
		meta = events.SessionMeta{ID: id, World: w.Name, WorldHash: w.Hash, Seed: req.Seed}
	} else {
		parent, err := s.cfg.Log.Session(ctx, req.Parent)
		if err != nil {
			return proto.CreateReply{}, err
		}
		at := req.ForkSeq
		if at == 0 {
			at = 1
		}
		seed := req.Seed
		if seed == 0 {
			seed = parent.Seed
		}
		meta = events.SessionMeta{ID: id, World: parent.World, WorldHash: parent.WorldHash, Seed: seed, Parent: parent.ID,
			ForkSeq: at, Status: events.StatusInterrupted, LastSeq: at, Created: time.Now().UTC().Format(time.RFC3339)}
		if err := s.cfg.Log.CreateSession(ctx, meta); err != nil {
			return proto.CreateReply{}, err
		}
		if e, _, err = driver.Load(ctx, s.cfg.Log, id, 0, seed); err != nil {
			return proto.CreateReply{}, err
		}
		w = e.State().World
	}
	spec, llmSeats := agents.SplitLLM(req.Agents, w)
	if len(llmSeats) > 0 && s.cfg.LLM == nil {
		return proto.CreateReply{}, errors.New("service: the agents name llm, but this server has no llm agent (serve --llm-model)")
	}
	seats, err := agents.Assign(spec, w, true)
	if err != nil {
		return proto.CreateReply{}, err
	}
	for _, m := range llmSeats {
		seats[m] = "llm"
	}
	meta.Agents = seats
	meta.Created = time.Now().UTC().Format(time.RFC3339)
	reply := proto.CreateReply{Session: id, Seats: map[string]proto.Seat{}}
	hosted := map[string]agents.Agent{}
	var remote []string
	for member, name := range seats {
		if name == agents.Remote {
			remote = append(remote, member)
			if s.cfg.Auth != nil {
				reply.Seats[member] = s.cfg.Auth.AddSeat(id, member)
			} else {
				reply.Seats[member] = proto.Seat{Session: id, Member: member, Subject: proto.TurnSubject(id, member)}
			}
			continue
		}
		if name == "llm" {
			hosted[member] = s.cfg.LLM
			continue
		}
		a, _ := agents.New(name, agents.Options{Seed: meta.Seed, Member: member})
		hosted[member] = a
	}
	sort.Strings(remote)
	host, err := natshost.Serve(s.host, id, hosted, natshost.Options{Logger: s.logger, Timeout: turnTimeout})
	if err != nil {
		return proto.CreateReply{}, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	ss := &session{id: id, cancel: cancel, done: make(chan struct{}), started: make(chan struct{}), meta: meta, engine: e}
	ctl, err := s.conn.Subscribe(proto.ControlSubject(id), func(msg *nats.Msg) { s.handleControl(ss, msg) })
	if err != nil {
		host.Close()
		cancel()
		return proto.CreateReply{}, err
	}
	s.mu.Lock()
	s.sessions[id] = ss
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(ss.done)
		defer host.Close()
		defer ctl.Unsubscribe()
		defer cancel()
		if s.cfg.Auth != nil {
			defer s.cfg.Auth.RemoveSession(id)
		}
		log := s.logger.With("session", id)
		if req.Wait {
			select {
			case <-ss.started:
			case <-runCtx.Done():
			}
		} else if len(remote) > 0 {
			s.waitForSeats(runCtx, id, remote, joinTimeout, log)
		}
		d := driver.New(driver.Config{Log: s.cfg.Log, Conn: s.conn, Logger: s.logger, TurnTimeout: turnTimeout,
			CheckpointEvery: s.cfg.CheckpointEvery, Gate: ss.gate, Interest: s.cfg.Bus.Interest})
		var m events.SessionMeta
		var err error
		if fresh {
			m, err = d.Run(runCtx, meta, e)
		} else {
			m, err = d.Continue(runCtx, meta, e)
		}
		ss.mu.Lock()
		ss.meta, ss.err = m, err
		ss.mu.Unlock()
		if err != nil {
			log.Warn("session stopped", "error", err)
		}
	}()
	return reply, nil
}

// waitForSeats waits until every remote seat's turn subject has a subscriber.
func (s *Service) waitForSeats(ctx context.Context, id string, remote []string, timeout time.Duration, log hclog.Logger) {
	deadline := time.Now().Add(timeout)
	for _, m := range remote {
		subj := proto.TurnSubject(id, m)
		for !s.cfg.Bus.Interest(subj) {
			if time.Now().After(deadline) || ctx.Err() != nil {
				log.Warn("remote seat did not join in time; its turns will time out", "member", m)
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

func (ss *session) gate(ctx context.Context) error {
	ss.mu.Lock()
	paused, resume := ss.paused, ss.resume
	ss.mu.Unlock()
	if !paused {
		return nil
	}
	select {
	case <-resume:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Service) handleControl(ss *session, msg *nats.Msg) {
	var req proto.ControlRequest
	reply := proto.ControlReply{Session: ss.id}
	if err := json.Unmarshal(msg.Data, &req); err != nil {
		reply.Error = "malformed request: " + err.Error()
	} else {
		switch req.Op {
		case proto.OpStart:
			ss.once.Do(func() { close(ss.started) })
			ss.mu.Lock()
			if ss.paused {
				ss.paused = false
				close(ss.resume)
			}
			ss.mu.Unlock()
		case proto.OpPause:
			ss.mu.Lock()
			if !ss.paused {
				ss.paused, ss.resume = true, make(chan struct{})
			}
			ss.mu.Unlock()
		case proto.OpStop:
			ss.cancel()
			<-ss.done
		case proto.OpStatus:
		default:
			reply.Error = fmt.Sprintf("unknown op %q (expected start, pause, stop or status)", req.Op)
		}
	}
	st := s.Status(ss.id)
	st.Error = reply.Error + st.Error
	b, _ := json.Marshal(st)
	_ = msg.Respond(b)
}

// Status reports where a session stands.
func (s *Service) Status(id string) proto.ControlReply {
	s.mu.Lock()
	ss := s.sessions[id]
	s.mu.Unlock()
	r := proto.ControlReply{Session: id}
	if ss == nil {
		r.Error = "no such session"
		return r
	}
	meta, err := s.cfg.Log.Session(context.Background(), id)
	if err == nil {
		r.Status = string(meta.Status)
	}
	r.Events, _ = s.cfg.Log.LastSeq(context.Background(), id)
	select {
	case <-ss.done:
		ss.mu.Lock()
		if ss.err != nil {
			r.Error = ss.err.Error()
		}
		st := ss.engine.State()
		r.Time, r.Score = int64(st.Now), policies.Score(st).TeamScore
		ss.mu.Unlock()
	default:
		ss.mu.Lock()
		if ss.paused {
			r.Status = "paused"
		}
		ss.mu.Unlock()
	}
	return r
}

// Wait blocks until a session ends and returns its final metadata.
func (s *Service) Wait(ctx context.Context, id string) (events.SessionMeta, error) {
	s.mu.Lock()
	ss := s.sessions[id]
	s.mu.Unlock()
	if ss == nil {
		return events.SessionMeta{}, fmt.Errorf("service: no session %s", id)
	}
	select {
	case <-ss.done:
	case <-ctx.Done():
		return events.SessionMeta{}, ctx.Err()
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.meta, ss.err
}

// Close stops every session (they are left interrupted) and the service.
func (s *Service) Close() {
	s.mu.Lock()
	s.closed = true
	for _, ss := range s.sessions {
		ss.cancel()
	}
	s.mu.Unlock()
	s.wg.Wait()
	for _, sub := range s.subs {
		_ = sub.Unsubscribe()
	}
	if s.conn != nil {
		s.conn.Close()
	}
	if s.host != nil {
		s.host.Close()
	}
}
