// Package server is the corpsim server, the composition root of
// corpsim serve: Serve wires the event log, the process's NATS server (or
// an external one), the Service that runs sessions for clients on the bus,
// the HTTP gateway and the metrics listener, and Soak runs one under
// injected faults. It owns goroutines, the bus and the wall clock (session
// IDs, creation times, how long to wait for remote seats); the engines it
// runs stay pure. It builds each session's seats as the command line does
// (sim/app, the application's use cases): built-in and llm seats are
// played in process, remote seats over the bus.
//
// Clients (with the operator token) create sessions on
// corpsim.v1.sessions.create, naming a world, a seed and which seats are
// built-in agents and which are remote; the reply carries each remote
// seat's own credentials. Remote agents connect with them and answer turns
// on their seat's subject; the embedded server's permissions (natsserver.Auth)
// keep each seat to its own subject. Sessions are controlled on their
// control subject (start, pause, stop, status).
//
// Limits: at most MaxSessions sessions run at once and a session has at
// most MaxSeats seats; a create request beyond either is refused with
// ErrTooManySessions or ErrTooManySeats and a sentence naming the limit.
// Its world and load are checked against WorldLimits (worlds.Limits)
// before anything is made; a create request with a field the protocol
// does not have is refused, naming it.
//
// Shutdown stops taking sessions and lets each running one finish the
// batch it is on: its driver stops before the next step, so the log ends
// at a batch boundary and the session is recorded interrupted. With a
// StateFile, the service remembers the sessions it runs (and their remote
// seats' credentials); ResumeSaved, on a service started later on the same
// data, continues them, with built-in seats re-created from the agents
// the session recorded and remote seats admitted again with the tokens
// they had.
//
// Worker mode (NewWorker, `corpsim serve --nats URL --worker NAME`) runs
// the same service as one of several workers on a NATS cluster: create
// requests come through the WorkerQueue group (a full worker leaves it),
// every session's log is replicated to JetStream (events/jsreplica), the
// worker running a session holds a lease on it in LeaseBucket, and the
// sessions of a worker that dies are adopted by the others from the
// stream (see Worker).
//
//	svc, err := server.New(server.Config{Log: log, Bus: bus, Auth: auth})
//	reply, err := svc.Create(ctx, wire.CreateRequest{World: "startup", Seed: 7, Agents: "greedy,bob=remote"})
//	…
//	svc.Shutdown(ctx) // ctx bounds how long running sessions may take to stop
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
	"github.com/oklog/ulid/v2"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/httpgw"
	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/worlds"
)

// Config configures a Service. Log and Bus are required.
type Config struct {
	Log             events.Log
	Bus             Bus
	Auth            *natsserver.Auth // nil: remote seats get no credentials (an unauthenticated bus)
	Logger          hclog.Logger
	TurnTimeout     time.Duration // default per turn; 0 means 30s
	JoinTimeout     time.Duration // how long a session waits for its remote seats; 0 means 60s
	CheckpointEvery int
	MaxEvents       int // events one session may append; 0 means sim.DefaultMaxEvents
	MaxSessions     int // running at once; 0 means DefaultMaxSessions
	MaxSeats        int // seats (members played) of one session; 0 means DefaultMaxSeats
	// KeepEnded bounds the ended sessions whose records the service keeps
	// (Status, Wait, the listing's overlay of how they ended), the latest
	// to end; 0 means DefaultKeepEnded. An older one is answered as one
	// that ended before a restart: from its log. Without the bound a
	// server that runs sessions for weeks (a NeMo Gym or OpenEnv trainer's
	// rollouts) grows by every session it ever ran.
	KeepEnded int
	// MaxWorldMemory bounds the estimated memory of the worlds the running
	// sessions play (driver.WorldWeight; a world several sessions play
	// counts once): a create beyond it is refused. 0 means
	// DefaultMaxWorldMemory.
	MaxWorldMemory int64
	// WorldLimits bound every create request's world and load (zero
	// fields: the defaults), checked before the session is made.
	WorldLimits worlds.Limits
	// Secret keys the draws of every session created fresh
	// (payload.NewDrawKey; app.RunOptions.Secret): the agents cannot work
	// a session's hidden rules and facts out from its seed. A cluster's
	// workers must share it. Forks and resumes use the key their log
	// recorded.
	Secret []byte
	// LLM plays the seats a create request gives to "llm"; nil refuses them.
	LLM agents.Agent
	// Observer, if set, watches every session's driver (metrics).
	Observer driver.Observer
	// StateFile, if set, is where the service records the sessions it runs
	// and their remote seats' credentials (a JSON file, mode 0600), so that
	// ResumeSaved can continue them after a restart. "" keeps nothing.
	StateFile string
	// Replica, if set, is given to every session's driver (a cluster-wide
	// copy of the log; see Worker).
	Replica driver.Replica
	// Queue, if set, takes create and list requests through this NATS
	// queue group, so that one of several services answers each; while
	// MaxSessions sessions run, the service leaves the group (see Worker).
	Queue string
	// Hooks let a Worker follow the sessions the service runs; nil fields
	// do nothing.
	Hooks Hooks
}

// Launched describes a session being launched, for Hooks.Starting.
type Launched struct {
	Meta                     events.SessionMeta
	TurnTimeout, JoinTimeout time.Duration
	Wait                     bool    // held until a start control message
	Load                     float64 // the create request's load (a new session)
	// DrawKey is the session's draw key (sim.Config.DrawKey; nil: none),
	// so that a worker that starts it in another's stead draws what its
	// creator would have, whatever its own secret.
	DrawKey []byte
}

// Hooks are called by a Service around the sessions it runs.
type Hooks struct {
	// Starting is called when a session is launched, before it runs; its
	// error refuses the launch.
	Starting func(ctx context.Context, l Launched) error
	// Gate is called before each step of a session; its error stops the
	// session at once.
	Gate func(ctx context.Context, session string) error
	// Ended is called once a launched session stops: finished, failed,
	// stopped by an operator, or (handoff) interrupted by a shutdown or
	// refused after Starting accepted it.
	Ended func(meta events.SessionMeta, err error, handoff bool)
	// List, if set, answers corpsim.v1.sessions.list instead of the Log.
	List func(ctx context.Context) ([]events.SessionMeta, error)
	// Fetch, if set, is asked to bring a session the Log lacks into it
	// (a fork's parent run by another worker).
	Fetch func(ctx context.Context, session string) error
}

// Defaults of Config's limits.
const (
	DefaultMaxSessions = 1000
	// DefaultMaxWorldMemory is Config.MaxWorldMemory's default: 8 GiB.
	DefaultMaxWorldMemory = 8 << 30
	DefaultMaxSeats       = 1000
	// DefaultKeepEnded is Config.KeepEnded's default.
	DefaultKeepEnded = 10000
)

// Errors of Create.
var (
	ErrTooManySessions = errors.New("server: too many sessions")
	ErrTooManySeats    = errors.New("server: too many seats")
	ErrShuttingDown    = errors.New("server: shutting down")
)

// ErrPanicked is the error of a session that panicked (see guard):
// driver.ErrPanicked.
var ErrPanicked = driver.ErrPanicked

// Bus is where the service runs: the embedded server (*natsserver.Server) or
// an external one (natsserver.External).
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
	conn   *nats.Conn // drivers (the event feed, remote seats' turns) and control
	subs   []*nats.Subscription

	// damageSaid is the damage List last warned of (a DamagedError's text).
	damageSaid atomic.Pointer[string]

	mu       sync.Mutex
	sessions map[string]*session
	// forking are the forks Create has put in the log and not yet
	// launched (or given up): a delete of their parent with its forks
	// must refuse them as it refuses a running one, not delete them
	// under the launch.
	forking   map[string]bool
	discarded []string // sessions a shutdown discarded (Discarded)
	// ended are the sessions that ended here whose records are kept, the
	// earliest to end first (Config.KeepEnded).
	ended   []*session
	closed  bool
	wg      sync.WaitGroup
	menders sync.WaitGroup // see mend
	// stopping is closed by Shutdown: drivers stop before their next step.
	stopping chan struct{}
	state    *stateFile

	qmu    sync.Mutex
	create *nats.Subscription // the create subscription while in the queue group
}

type session struct {
	id      string
	held    bool // created with wait: held for a start message
	cancel  context.CancelFunc
	done    chan struct{}
	started chan struct{}
	// begun is closed once the session is resumable: at once for one in
	// the log already or waiting for a start message, after its first
	// durable batch for a new one (see launch).
	begun chan struct{}
	// driving is closed when its driver starts, which then answers its
	// history subject (see handleHistory).
	driving chan struct{}
	once    sync.Once

	mu     sync.Mutex
	paused bool
	resume chan struct{}
	meta   events.SessionMeta
	engine *sim.Engine   // nil once the session ended
	world  *worlds.World // the world it plays (read-only), for MaxWorldMemory
	weight int64         // driver.WorldWeight(world)
	err    error
	// endTime and endScore are the ended session's simulated time and team score.
	endTime  int64
	endScore float64
	// progress is the running session's, once it runs (nil before).
	progress *progress
	// stopped: an operator's stop, not a shutdown, ended the session.
	stopped bool
	// stopAsked: the session ended cancelled by an operator's stop (set
	// as it ends): its error is what was asked, not reported.
	stopAsked bool
	kinds     map[string]int // seats by kind (builtin, remote, llm)
	// probation, for a resumed session, clears its resuming mark once it
	// has shown it runs; nil otherwise.
	probation *probation
}

// New starts a service on the bus.
func New(cfg Config) (*Service, error) {
	if cfg.Log == nil || cfg.Bus == nil {
		return nil, errors.New("server: Log and Bus are required")
	}
	if cfg.TurnTimeout == 0 {
		cfg.TurnTimeout = 30 * time.Second
	}
	if cfg.JoinTimeout == 0 {
		cfg.JoinTimeout = 60 * time.Second
	}
	if cfg.MaxSessions == 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.KeepEnded == 0 {
		cfg.KeepEnded = DefaultKeepEnded
	}
	if cfg.MaxWorldMemory == 0 {
		cfg.MaxWorldMemory = DefaultMaxWorldMemory
	}
	if cfg.MaxSeats == 0 {
		cfg.MaxSeats = DefaultMaxSeats
	}
	if cfg.MaxSessions < 0 || cfg.MaxSeats < 0 || cfg.MaxWorldMemory < 0 {
		return nil, errors.New("server: MaxSessions, MaxSeats and MaxWorldMemory may not be negative")
	}
	if err := cfg.WorldLimits.Validate(); err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	s := &Service{cfg: cfg, logger: logger, sessions: map[string]*session{}, stopping: make(chan struct{})}
	var err error
	if s.state, err = openState(cfg.StateFile); err != nil {
		return nil, err
	}
	if s.conn, err = cfg.Bus.Connect("corpsim-service"); err != nil {
		return nil, err
	}
	if cfg.Queue != "" {
		list, err := s.conn.QueueSubscribe(wire.ListSubject, cfg.Queue, s.handleList)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.subs = append(s.subs, list)
		if err := s.updateQueue(); err != nil {
			s.Close()
			return nil, err
		}
		return s, s.conn.Flush()
	}
	create, err := s.conn.Subscribe(wire.CreateSubject, s.handleCreate)
	if err != nil {
		s.Close()
		return nil, err
	}
	list, err := s.conn.Subscribe(wire.ListSubject, s.handleList)
	if err != nil {
		s.Close()
		return nil, err
	}
	history, err := s.conn.Subscribe(wire.HistorySubject("*"), s.handleHistory)
	if err != nil {
		s.Close()
		return nil, err
	}
	del, err := s.conn.Subscribe(wire.DeleteSubject, s.handleDelete)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.subs = append(s.subs, create, list, history, del)
	return s, s.conn.Flush()
}

// isClosed reports whether ch is closed.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// handleHistory answers a history request for a session whose driver is
// not running here from the log: one that ended (everything it stored is
// durable), one stored and not resumed here, one held for its start or its
// seats (nothing of it is stored yet, or only what it stored before a
// restart). A running session's driver answers its own, up to what has
// landed: the service stays silent. A session the log does not hold gets
// NoSession. A worker of a cluster does not subscribe: its log is not the
// cluster's.
func (s *Service) handleHistory(msg *nats.Msg) {
	id, ok := wire.HistorySession(msg.Subject)
	if !ok {
		return
	}
	s.mu.Lock()
	ss := s.sessions[id]
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), listFor)
	defer cancel()
	upTo := uint64(math.MaxUint64)
	if ss != nil && !isClosed(ss.done) {
		// Its driver starts under ss.mu (see launch): what the log holds
		// now was stored before, durable, and its own batches, which may
		// be read before they are synced, come after.
		ss.mu.Lock()
		if isClosed(ss.driving) {
			ss.mu.Unlock()
			return
		}
		last, err := s.cfg.Log.LastSeq(ctx, id)
		ss.mu.Unlock()
		if err == nil {
			upTo = last
		}
	}
	var req wire.HistoryRequest
	_ = json.Unmarshal(msg.Data, &req)
	driver.RespondHistory(msg, driver.HistoryPage(ctx, s.cfg.Log, id, req, upTo))
}

func (s *Service) handleCreate(msg *nats.Msg) {
	if s.cfg.Queue != "" && s.passOn(msg) {
		return
	}
	var reply wire.CreateReply
	if req, err := httpgw.DecodeCreate(msg.Data); err != nil { // as POST /v1/sessions decodes it
		reply.Error = err.Error()
	} else if r, err := s.Create(context.Background(), req); err != nil {
		reply.Error = err.Error()
	} else {
		reply = r
	}
	b, _ := json.Marshal(reply)
	_ = msg.Respond(b)
}

func (s *Service) handleList(msg *nats.Msg) {
	// Bounded: a request of the listing lost with a node is never answered.
	ctx, cancel := context.WithTimeout(context.Background(), listFor)
	defer cancel()
	metas, err := s.List(ctx)
	reply := nats.NewMsg(msg.Reply)
	switch {
	case errors.As(err, new(*events.DamagedError)):
		reply.Header.Set(wire.DamagedHeader, err.Error()) // the list is not whole
		reply.Data, _ = json.Marshal(metas)
	case err != nil:
		reply.Data, _ = json.Marshal(map[string]string{"error": err.Error()})
	default:
		reply.Data, _ = json.Marshal(metas)
	}
	_ = msg.RespondMsg(reply)
}

func (s *Service) handleDelete(msg *nats.Msg) {
	var req wire.DeleteRequest
	var reply wire.DeleteReply
	if err := json.Unmarshal(msg.Data, &req); err != nil {
		reply.Error = "malformed request: " + err.Error()
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), listFor)
		reply.Deleted, err = s.Delete(ctx, req.Sessions, req.Forks)
		cancel()
		if err != nil {
			reply.Error = err.Error()
			switch {
			case errors.Is(err, events.ErrNoSession):
				reply.Code = wire.DeleteNoSession
			case errors.Is(err, ErrRunning):
				reply.Code = wire.DeleteRunning
			case errors.Is(err, events.ErrBadSession):
				reply.Code = wire.DeleteRefused
			}
		}
	}
	if reply.Deleted == nil {
		reply.Deleted = []wire.Deleted{}
	}
	b, _ := json.Marshal(reply)
	_ = msg.Respond(b)
}

// ErrRunning is Delete's error for a session that runs here.
var ErrRunning = errors.New("server: session running")

// endingWait is how long Delete waits for a session whose end is in the
// log to finish here before it refuses it as running.
const endingWait = 10 * time.Second

// Delete removes sessions ids from the service's log (app.DeleteFrom:
// forks first; a session with a fork not named is refused unless
// withForks) and forgets them. A session that runs here, or is held for
// its start, is refused before anything is deleted: stop it first. The
// space returns as the store compacts. A worker of a cluster deletes
// nothing: its log is the cluster's.
func (s *Service) Delete(ctx context.Context, ids []string, withForks bool) ([]wire.Deleted, error) {
	if s.cfg.Queue != "" {
		return nil, errors.New("server: a worker of a cluster does not delete sessions (the log is the cluster's)")
	}
	if len(ids) == 0 {
		return nil, errors.New("server: no session to delete")
	}
	// A session that has ended but is still finishing here (its state
	// file, its seats; a client that saw it finished asks at once) is
	// waited for, before s.mu, which its finish takes: each named, and
	// with withForks every session held here, since the forks deleted with
	// them are found only under s.mu (a reset a client saw finish, deleted
	// with its parent at once, was refused as running).
	wait := ids
	if withForks {
		s.mu.Lock()
		wait = slices.Sorted(maps.Keys(s.sessions))
		s.mu.Unlock()
	}
	limit, stop := context.WithTimeout(ctx, endingWait) // one wait for them all
	defer stop()
	for _, id := range wait {
		s.mu.Lock()
		ss := s.sessions[id]
		s.mu.Unlock()
		if ss == nil || isClosed(ss.done) {
			continue
		}
		ss.mu.Lock()
		ending := ss.engine == nil // let go of once it ended
		ss.mu.Unlock()
		expired := limit.Done()
		if ending {
			expired = nil
		} else {
			// Its end is in the log (finished, failed, or interrupted by a
			// stop) before the engine is let go of: a client that saw it
			// asks in between. One held for its start, whose driver has
			// not begun (a fork made to wait, a session resumed from an
			// interrupted end), is running, though its log says
			// interrupted: refused below, not waited for.
			if !isClosed(ss.driving) {
				continue
			}
			meta, err := s.cfg.Log.Session(ctx, id)
			if ending = err == nil && meta.Status != events.StatusRunning; !ending {
				continue
			}
		}
		select {
		case <-ss.done:
		case <-expired: // still running: refused below
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	stop()
	// Under s.mu: no session is launched meanwhile, so none of those
	// found not running starts before it is gone.
	s.mu.Lock()
	defer s.mu.Unlock()
	busy := func(id string) error {
		if ss := s.sessions[id]; ss != nil && !isClosed(ss.done) {
			return fmt.Errorf("%w: %s runs here; stop it first (control op stop), then delete it", ErrRunning, id)
		}
		if s.forking[id] {
			return fmt.Errorf("%w: %s is a fork being created here; stop it once it runs, then delete it", ErrRunning, id)
		}
		return nil
	}
	for _, id := range ids { // also one held for its start, not in the log yet
		if err := busy(id); err != nil {
			return nil, err
		}
	}
	done, err := app.DeleteFrom(ctx, s.cfg.Log, ids, withForks, busy)
	for _, d := range done {
		if ss := s.sessions[d.Session]; ss != nil && isClosed(ss.done) {
			delete(s.sessions, d.Session)
		}
		if rerr := s.state.remove(d.Session); rerr != nil {
			s.logger.Warn("cannot update the state file", "session", d.Session, "error", rerr)
		}
	}
	if len(done) > 0 {
		s.logger.Info("sessions deleted", "sessions", len(done), "first", done[0].Session)
	}
	return done, err
}

// List returns the sessions the service lists (wire.ListSubject): those of
// its store, with how the sessions it ran ended, a session it holds for
// its start running at seq 0, a paused one wire.StatusPaused. Beside a
// session whose metadata cannot be read it lists the others, with the
// store's *events.DamagedError.
func (s *Service) List(ctx context.Context) ([]events.SessionMeta, error) {
	list := s.cfg.Log.Sessions
	if s.cfg.Hooks.List != nil {
		list = s.cfg.Hooks.List
	}
	metas, err := list(ctx)
	if errors.As(err, new(*events.DamagedError)) {
		// The other sessions are listed; the damage is the operator's to
		// see (verify, sessions on the stopped server's folder, the live
		// page), said once rather than at every listing.
		msg := err.Error()
		if said := s.damageSaid.Swap(&msg); said == nil || *said != msg {
			s.logger.Warn("sessions left out of the list: their metadata cannot be read", "error", err)
		}
		return s.overlayEnded(metas, true), err
	}
	if err != nil {
		return nil, err
	}
	return s.overlayEnded(metas, false), nil
}

// markPaused sets m's status to wire.StatusPaused if an operator holds
// session ss paused and the list says so: a lone server's does; a worker
// of a cluster's does not, since one worker answers each listing (a queue
// group) and knows only the sessions it runs: the listing would name some
// paused sessions and not others, differently each time.
func (s *Service) markPaused(ss *session, m *events.SessionMeta) {
	if s.cfg.Queue != "" {
		return
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.paused {
		m.Status = wire.StatusPaused
	}
}

// held returns the metadata of session id if the service holds it for its
// start (created with wait): not in the store yet.
func (s *Service) held(id string) (events.SessionMeta, bool) {
	s.mu.Lock()
	ss := s.sessions[id]
	s.mu.Unlock()
	if ss == nil {
		return events.SessionMeta{}, false
	}
	return ss.heldMeta()
}

// heldMeta returns the session's metadata, running at seq 0, if it is
// held for its start (created with wait); ok is false otherwise.
func (ss *session) heldMeta() (m events.SessionMeta, ok bool) {
	if isClosed(ss.done) || isClosed(ss.started) || isClosed(ss.driving) {
		return m, false
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	m = ss.meta
	m.Status, m.LastSeq = events.StatusRunning, 0
	return m, true
}

// overlayEnded replaces, in metas, the stored metadata of a session still
// recorded running that this service ran and saw end with how it ended:
// the driver's record of the end can fail (a disk full to the last byte)
// while the service knows the session stopped. The store catches up at
// the next read-write open, which records such a session interrupted. A
// session that still runs here gets its events so far (its stored
// metadata's LastSeq is the one it resumed from), and is listed
// wire.StatusPaused while an operator holds it paused. A session this service
// ran that ended before its first batch was stored (a full disk) is not in
// the store at all: it is added, as it ended, so that a client given its
// id by Create can learn how it ended once its control subject is gone.
// One held for its start (created with wait), not in the store yet, is
// added running at seq 0.
func (s *Service) overlayEnded(metas []events.SessionMeta, damaged bool) []events.SessionMeta {
	for i := range metas {
		if metas[i].Status != events.StatusRunning && metas[i].Status != events.StatusInterrupted {
			continue
		}
		s.mu.Lock()
		ss := s.sessions[metas[i].ID]
		s.mu.Unlock()
		if ss == nil {
			continue
		}
		if metas[i].Status == events.StatusInterrupted {
			// A fork held for its start is stored interrupted until it
			// runs: listed running, as a new session held is.
			if _, held := ss.heldMeta(); held {
				metas[i].Status = events.StatusRunning
				s.markPaused(ss, &metas[i])
			}
			continue
		}
		select {
		case <-ss.done:
		default:
			if last, err := s.cfg.Log.LastSeq(context.Background(), metas[i].ID); err == nil {
				metas[i].LastSeq = last
			}
			s.markPaused(ss, &metas[i])
			continue
		}
		ss.mu.Lock()
		if m := ss.meta; m.Status != events.StatusRunning && m.Status != "" {
			metas[i].Status, metas[i].LastSeq, metas[i].Reason = m.Status, m.LastSeq, m.Reason
		}
		ss.mu.Unlock()
	}
	listed := make(map[string]bool, len(metas))
	for _, m := range metas {
		listed[m.ID] = true
	}
	s.mu.Lock()
	var missing []*session
	for id, ss := range s.sessions {
		if !listed[id] {
			missing = append(missing, ss)
		}
	}
	s.mu.Unlock()
	added := false
	for _, ss := range missing {
		if damaged && s.cfg.Queue == "" {
			// Stored, but hidden from the store's list by a damaged block
			// (new IDs sort after it): listed from its own metadata. A
			// lone server only: a cluster's list is answered by any worker,
			// and only the one running a session could add it.
			if m, ok := s.storedMeta(ss); ok {
				metas, added = append(metas, m), true
				continue
			}
		}
		if m, ok := ss.heldMeta(); ok {
			// Held for a start (created with wait): listed running at
			// seq 0, so that its creator finds it before it starts.
			s.markPaused(ss, &m)
			metas, added = append(metas, m), true
			continue
		}
		if !isClosed(ss.done) || !isClosed(ss.driving) {
			// Its first batch is on its way; or it stopped before it ran
			// (nothing of it was to be stored).
			continue
		}
		if damaged && s.cfg.Queue != "" {
			// A worker: any worker answers the list, so it adds nothing
			// the damage may hide (it ran this one; the others did not).
			continue
		}
		ss.mu.Lock()
		if m := ss.meta; m.Status != events.StatusRunning && m.Status != "" {
			metas, added = append(metas, m), true
		}
		ss.mu.Unlock()
	}
	if added {
		slices.SortStableFunc(metas, func(a, b events.SessionMeta) int { return strings.Compare(a.ID, b.ID) })
	}
	return metas
}

// storedMeta is the stored metadata of session ss, which this service
// runs or ran, as the store's list would give it: a running one with its
// events so far; ok is false when the store holds none (its first batch
// is on its way) or it ended (overlayEnded adds it as it ended).
func (s *Service) storedMeta(ss *session) (events.SessionMeta, bool) {
	if isClosed(ss.done) {
		return events.SessionMeta{}, false
	}
	m, err := s.cfg.Log.Session(context.Background(), ss.id)
	if err != nil {
		return m, false
	}
	if m.Status == events.StatusRunning {
		if last, err := s.cfg.Log.LastSeq(context.Background(), ss.id); err == nil {
			m.LastSeq = last
		}
	}
	s.markPaused(ss, &m)
	return m, true
}

// runningLocked counts the sessions not yet ended; s.mu is held.
func (s *Service) runningLocked() int {
	n := 0
	for _, ss := range s.sessions {
		select {
		case <-ss.done:
		default:
			n++
		}
	}
	return n
}

// worldsOverLocked refuses a session of world w when the worlds of the
// running sessions and w would take more than MaxWorldMemory: a world
// several sessions play (by hash: loaded once or not) counts once, so
// thousands of sessions of one world take its memory once, and a
// stranger's distinct large worlds cannot add up past the bound. s.mu is
// held.
func (s *Service) worldsOverLocked(ns *session) error {
	counted := map[string]bool{ns.world.Hash: true}
	total := ns.weight
	for _, ss := range s.sessions {
		select {
		case <-ss.done:
			continue
		default:
		}
		if ss.world == nil {
			continue // ended, and finishing (keepEnded let its world go)
		}
		if !counted[ss.world.Hash] {
			counted[ss.world.Hash] = true
			total += ss.weight
		}
	}
	if total <= s.cfg.MaxWorldMemory {
		return nil
	}
	return fmt.Errorf("%w: the worlds of the running sessions and this one would take about %.1f MiB, above the %.1f MiB this server holds (serve --max-world-memory); try again when one ends",
		ErrTooManySessions, float64(total)/(1<<20), float64(s.cfg.MaxWorldMemory)/(1<<20))
}

func tooMany(running, limit int) error {
	return fmt.Errorf("%w: %d running; this server runs at most %d at once (serve --max-sessions); try again when one ends",
		ErrTooManySessions, running, limit)
}

// Create makes a session and starts running it in the background: at once
// if every seat is built in, once its remote seats are subscribed (or the
// join timeout passes) otherwise, or on a start control message with Wait.
// Unless created with Wait, the session has begun when Create returns: its
// first batch (session.started first) is durable and it is in the state
// file, so a restarted service resumes it however soon this one stops.
func (s *Service) Create(ctx context.Context, req wire.CreateRequest) (_ wire.CreateReply, refused error) {
	s.mu.Lock()
	running := s.runningLocked()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return wire.CreateReply{}, fmt.Errorf("%w: not taking new sessions", ErrShuttingDown)
	}
	if running >= s.cfg.MaxSessions {
		return wire.CreateReply{}, tooMany(running, s.cfg.MaxSessions)
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
			return wire.CreateReply{}, fmt.Errorf("server: bad duration %q", d.s)
		}
		*d.dst = v
	}
	// The load first, on every path (a fork's is its parent's, but a
	// request that names one must name a load).
	lim := s.cfg.WorldLimits
	load := req.Load
	if load == 0 {
		load = 1
	}
	fresh := req.Parent == ""
	check := worlds.CheckLoad
	if fresh {
		check = worlds.CheckNewLoad
	}
	if err := check(load, lim.WithDefaults().MaxLoad); err != nil {
		return wire.CreateReply{}, err
	}
	id := ulid.Make().String()
	var e *sim.Engine
	var meta events.SessionMeta
	var w *worlds.World
	if fresh && req.World != "" && req.Source != "" {
		return wire.CreateReply{}, errors.New("server: give a world's name (world) or its text (source), not both")
	}
	if fresh {
		src := []byte(req.Source)
		name := "request.yaml"
		if req.Source == "" {
			var err error
			if src, err = worlds.Source(req.World); err != nil {
				return wire.CreateReply{}, err
			}
			name = req.World + ".yaml"
		}
		var err error
		if w, err = driver.LoadWorld(name, src, lim); err != nil { // read once for all its sessions
			return wire.CreateReply{}, err
		}
		if err = w.Admit(load, lim); err != nil {
			return wire.CreateReply{}, err
		}
		if e, err = sim.New(sim.Config{World: w, Source: src, Seed: req.Seed, Session: id, Load: req.Load, WorldLimits: s.cfg.WorldLimits,
			DrawKey: payload.NewDrawKey(domainSecret(s.cfg.Secret, req.DrawDomain), req.Seed), NewSequencer: driver.NewSequencer}); err != nil {
			return wire.CreateReply{}, err
		}
		meta = events.SessionMeta{ID: id, World: w.Name, WorldHash: w.Hash, Seed: req.Seed, MaxEvents: app.RecordedBudget(s.budget(0))}
	} else {
		parent, err := s.cfg.Log.Session(ctx, req.Parent)
		if errors.Is(err, events.ErrNoSession) && s.cfg.Hooks.Fetch != nil {
			if err = s.cfg.Hooks.Fetch(ctx, req.Parent); err == nil {
				parent, err = s.cfg.Log.Session(ctx, req.Parent)
			}
		}
		if err != nil {
			return wire.CreateReply{}, err
		}
		at := req.ForkSeq
		if at == 0 {
			at = 1
		}
		if last, err := s.cfg.Log.LastSeq(ctx, parent.ID); err != nil {
			return wire.CreateReply{}, err
		} else if at > last {
			return wire.CreateReply{}, fmt.Errorf("%w: fork_seq %d is beyond the end of session %s, which has %d events", events.ErrBadSession, at, parent.ID, last)
		}
		var inside *driver.InsideTurnError
		if err := driver.CheckForkPoint(ctx, s.cfg.Log, parent.ID, at); errors.As(err, &inside) {
			return wire.CreateReply{}, fmt.Errorf("%w: fork_seq %d: %v", events.ErrBadSession, at, inside)
		} else if err != nil {
			return wire.CreateReply{}, err
		}
		seed := req.Seed
		if seed == 0 {
			seed = parent.Seed
		}
		if req.Agents == "" {
			// The parent's agents, as its metadata records them: a reset
			// without agents, from a client that does not know them.
			req.Agents = agentSpec(parent.Agents)
		}
		meta = events.SessionMeta{ID: id, World: parent.World, WorldHash: parent.WorldHash, Seed: seed, Parent: parent.ID,
			ForkSeq: at, Status: events.StatusInterrupted, LastSeq: at, Created: time.Now().UTC().Format(time.RFC3339),
			MaxEvents: app.RecordedBudget(s.budget(parent.MaxEvents))}
		s.mu.Lock()
		if s.forking == nil {
			s.forking = map[string]bool{}
		}
		s.forking[id] = true // until launched: below, launch has it in s.sessions
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.forking, id)
			s.mu.Unlock()
		}()
		if err := s.cfg.Log.CreateSession(ctx, meta); err != nil {
			return wire.CreateReply{}, err
		}
		// The fork's metadata is stored before its agents, seats and
		// launch are checked: a fork refused after it is taken back, or
		// every refused reset left an interrupted session with no agents.
		defer func() {
			if refused != nil {
				s.discardFork(id)
			}
		}()
		if e, _, err = driver.Load(ctx, s.cfg.Log, id, 0, seed); err != nil {
			return wire.CreateReply{}, err
		}
		w = e.State().World
	}
	seats, err := app.AssignSeats(req.Agents, w, true, s.cfg.LLM != nil)
	if errors.Is(err, app.ErrNoLLM) {
		return wire.CreateReply{}, errors.New("server: the agents name llm, but this server has no llm agent (serve --llm-model)")
	}
	if err != nil {
		return wire.CreateReply{}, err
	}
	if n := len(seats); n > s.cfg.MaxSeats {
		return wire.CreateReply{}, fmt.Errorf("%w: world %s has %d seats to play and this server allows at most %d per session (serve --max-seats)",
			ErrTooManySeats, w.Name, n, s.cfg.MaxSeats)
	}
	meta.Agents = seats
	meta.Created = time.Now().UTC().Format(time.RFC3339)
	reply := wire.CreateReply{Session: id, Seats: map[string]wire.Seat{}}
	for member, name := range seats {
		if name != agents.Remote {
			continue
		}
		if s.cfg.Auth != nil {
			reply.Seats[member] = s.cfg.Auth.AddSeat(id, member)
		} else {
			reply.Seats[member] = wire.Seat{Session: id, Member: member, Subject: wire.TurnSubject(id, member)}
		}
	}
	if len(reply.Seats) > 0 {
		reply.Tools = agents.ToolsJSONFor(w)
	}
	run := launch{meta: meta, engine: e, fresh: fresh, forked: !fresh, wait: req.Wait, turnTimeout: turnTimeout, joinTimeout: joinTimeout,
		seats: reply.Seats, limited: true, load: req.Load, via: req.Via}
	if err := s.launch(run); err != nil {
		if s.cfg.Auth != nil {
			s.cfg.Auth.RemoveSession(id)
		}
		return wire.CreateReply{}, err
	}
	s.logger.Info("session created", "session", id, "world", meta.World, "seed", meta.Seed, "parent", meta.Parent,
		"seats", len(seats), "remote", len(reply.Seats))
	return reply, nil
}

// agentSpec is the --agents spec that assigns each seat its agent.
func agentSpec(seats map[string]string) string {
	parts := make([]string, 0, len(seats))
	for _, m := range slices.Sorted(maps.Keys(seats)) {
		parts = append(parts, m+"="+seats[m])
	}
	return strings.Join(parts, ",")
}

// discardFork deletes fork id, which Create stored and then refused. A
// worker of a cluster deletes nothing (the log is the cluster's): its
// refused fork stays, interrupted, and says so.
func (s *Service) discardFork(id string) {
	d, ok := s.cfg.Log.(events.Deleter)
	if !ok || s.cfg.Queue != "" {
		s.logger.Warn("a refused fork stays in the log, interrupted", "session", id)
		return
	}
	if _, err := d.DeleteSession(context.Background(), id); err != nil {
		s.logger.Warn("a refused fork stays in the log, interrupted", "session", id, "error", err)
	}
}

// budget is the budget of events of a session whose metadata records
// recorded (0: none): the server's own (--max-events), or the recorded one
// when smaller, so that a fork, a reset or a resume keeps the budget its
// session was given, and no session goes past the server's.
func (s *Service) budget(recorded int) int {
	n := s.cfg.MaxEvents
	if n == 0 {
		n = sim.DefaultMaxEvents
	}
	if recorded > 0 && recorded < n {
		n = recorded
	}
	return n
}

// launch describes a session to run: a new one, a fork, or one a previous
// service left interrupted.
type launch struct {
	meta                     events.SessionMeta // Agents set
	engine                   *sim.Engine
	fresh                    bool // Run (a new session) rather than Continue
	forked                   bool // a fork Create made (not a resume): only its metadata is stored until it runs
	wait                     bool // hold until a start control message
	turnTimeout, joinTimeout time.Duration
	seats                    map[string]wire.Seat // remote seats' credentials
	limited                  bool                 // counts against MaxSessions (a create; a resume does not)
	load                     float64              // the create request's load, for Hooks.Starting
	paused                   bool                 // resumed paused (it was paused when the service stopped)
	via                      string               // the client playing the remote seats (wire.CreateRequest.Via)
	probation                *probation           // a resumed session's, until it has shown it runs; nil otherwise
}

// launch hosts a session's built-in seats and runs it in the background.
func (s *Service) launch(l launch) error {
	id, meta, e := l.meta.ID, l.meta, l.engine
	truth := e.Truth()
	seats, err := app.BuildSeats(meta, e.State().World, app.SeatOptions{LLM: s.cfg.LLM, Truth: &truth})
	if errors.Is(err, app.ErrNoLLM) {
		return errors.New("server: the agents name llm, but this server has no llm agent (serve --llm-model)")
	}
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	remote, kinds := seats.Remote, seats.Kinds
	log := s.logger.With("session", id)
	if s.cfg.Hooks.Starting != nil {
		if err := s.cfg.Hooks.Starting(context.Background(), Launched{Meta: meta, TurnTimeout: l.turnTimeout, JoinTimeout: l.joinTimeout, DrawKey: e.DrawKey(),
			Wait: l.wait, Load: l.load}); err != nil {
			return err
		}
	}
	// abandon tells the hooks of a launch refused after Starting.
	abandon := func(err error) {
		if s.cfg.Hooks.Ended != nil {
			m := meta
			m.Status = events.StatusFailed
			s.cfg.Hooks.Ended(m, err, !l.fresh)
		}
	}
	// Built-in and llm seats are played in process; remote ones answer
	// on the bus.
	asker, stopHosted, err := seats.Host(app.HostOptions{Session: id, Conn: s.conn, Logger: log, Timeout: l.turnTimeout})
	if err != nil {
		abandon(err)
		return err
	}
	stopSeats := func() {
		stopHosted()
		seats.Forget(id) // the llm agent serves every session: it drops this one's conversations
	}
	runCtx, cancel := context.WithCancel(context.Background())
	ss := &session{id: id, held: l.wait, cancel: cancel, done: make(chan struct{}), started: make(chan struct{}), begun: make(chan struct{}), driving: make(chan struct{}), meta: meta, engine: e, world: e.State().World, weight: int64(driver.WorldWeight(e.State().World)), kinds: kinds,
		probation: l.probation}
	if l.paused {
		ss.paused, ss.resume = true, make(chan struct{})
	}
	ctl, err := s.conn.Subscribe(wire.ControlSubject(id), func(msg *nats.Msg) { s.handleControl(ss, msg) })
	if err == nil {
		// The server knows of the subscription before Create returns, so
		// a client's first control request finds its responder.
		if err = s.conn.Flush(); err != nil {
			_ = ctl.Unsubscribe()
		}
	}
	if err != nil {
		stopSeats()
		cancel()
		abandon(err)
		return err
	}
	s.mu.Lock()
	var refused error
	if s.closed {
		refused = fmt.Errorf("%w: not taking new sessions", ErrShuttingDown)
	} else if running := s.runningLocked(); l.limited && running >= s.cfg.MaxSessions {
		// Checked again under the lock: creates racing past Create's check.
		refused = tooMany(running, s.cfg.MaxSessions)
	} else if l.limited {
		refused = s.worldsOverLocked(ss)
	}
	if refused != nil {
		s.mu.Unlock()
		_ = ctl.Unsubscribe()
		stopSeats()
		cancel()
		abandon(refused)
		return refused
	}
	s.sessions[id] = ss
	s.wg.Add(1)
	s.mu.Unlock()
	s.queueChanged()
	// record puts the session in the state file, for a restart.
	record := func() {
		if err := s.state.put(id, savedSession{Seats: l.seats, TurnTimeout: l.turnTimeout.String(), JoinTimeout: l.joinTimeout.String(), Paused: l.paused, Via: l.via,
			Resuming: l.probation.resuming()}); err != nil {
			log.Warn("cannot record the session for a restart; it will not be resumed automatically", "error", err)
		}
		ss.mu.Lock()
		paused := ss.paused // a pause may have come in before the record was made
		ss.mu.Unlock()
		if paused != l.paused {
			_ = s.state.setPaused(id, paused)
		}
	}
	// A new session that runs without a start message begins before
	// launch returns: its driver makes the first batch (session.started
	// and what follows up to the first turns) durable, the session is
	// recorded in the state file, and only then does Create hand it out.
	// So a session Create returned is resumable however soon the process
	// stops after it (a pause and a Close at once, or a kill): the state
	// file never names a session whose log is empty. Its remote seats are
	// waited for after that batch (Begun), before anyone is asked. Until
	// it has begun, a shutdown does not cancel it (see shutdown): it stops
	// at its first gate, interrupted after that batch. A session created
	// with wait logs nothing until it is started (a restart before that
	// finds it not in the log: nothing to resume); a resumed or forked one
	// is in the log already.
	early := l.fresh && !l.wait
	// What status says of the session until it ends: where it stands now
	// (a resumed or forked one not at 0), then as its batches land.
	st := e.State()
	// Its score as the log's rewards hold it: the rubric's less what the
	// next reward pays (a resumed session's first reward pays the change
	// since the last one before the resume, which the rubric's score
	// already counts).
	prog := newProgress(nil, int64(st.Now), policies.Score(st).TeamScore-e.Unpaid())
	ss.mu.Lock()
	ss.progress = prog
	ss.mu.Unlock()
	if !early {
		record()
		close(ss.begun)
	}
	go func() {
		defer s.wg.Done()
		defer s.queueChanged()
		defer close(ss.done)
		defer stopSeats()
		defer ctl.Unsubscribe()
		defer cancel()
		m, err := meta, error(nil)
		unlogged := false // a new session stopped before its first batch
		pr := l.probation
		if pr != nil && (l.wait || len(remote) > 0) {
			pr.hold() // nothing of it runs while it waits
		}
		var begun func(ctx context.Context) error
		if early {
			begun = func(ctx context.Context) error {
				record()
				close(ss.begun)
				if !s.waitToStart(ctx, ss, l, remote, log) {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					return fmt.Errorf("%w: %w", ErrShuttingDown, context.Canceled)
				}
				return nil
			}
		}
		if early || s.waitToStart(runCtx, ss, l, remote, log) {
			observer := s.cfg.Observer
			if pr != nil {
				pr.run()
				pr.inner, observer = observer, pr
			}
			prog.inner, observer = observer, prog
			dc := driver.Config{Log: s.cfg.Log, Conn: s.conn, Seats: withProbation(asker, pr, remote), Logger: s.logger, TurnTimeout: l.turnTimeout,
				CheckpointEvery: s.cfg.CheckpointEvery, MaxEvents: s.budget(meta.MaxEvents), Gate: func(ctx context.Context) error { return s.gate(ctx, ss) },
				Begun: begun, Interest: s.cfg.Bus.Interest, Observer: observer, Replica: s.cfg.Replica, Memory: seats.Memory, Remembers: seats.Remembers}
			if s.cfg.Hooks.Gate == nil {
				// Nothing but a pause or a stop holds it (a worker's
				// gate also asks whether it still holds the lease): its
				// in-process seats are asked within a batch while open.
				dc.Open = func() bool { return s.open(ss) }
			}
			d := driver.New(dc)
			ss.mu.Lock()
			close(ss.driving) // see handleHistory
			ss.mu.Unlock()
			log.Info("session running", "from_seq", e.State().LastSeq, "remote_seats", len(remote))
			m, err = s.guard(log, meta, func() (events.SessionMeta, error) {
				if l.fresh {
					return d.Run(runCtx, meta, e)
				}
				// A resume, a fork or a hand-off: the agents made here
				// that remember are shown their members' turns so far,
				// in the background of Create and of a restart.
				app.RecallOrWarn(runCtx, s.cfg.Log, id, id, e.State().LastSeq, seats, log)
				return d.Continue(runCtx, meta, e)
			})
		} else {
			// Stopped before it began: nothing ran, nothing was logged
			// (of a new session, nothing at all: see early; of a fork
			// Create made, its metadata alone, without its agents, from
			// which a restart could not resume it as it was asked for).
			unlogged = l.fresh || l.forked
			m.Status, err = events.StatusInterrupted, context.Canceled
			if s.isStopping() {
				err = fmt.Errorf("%w: the session had not started", ErrShuttingDown)
			}
		}
		ss.mu.Lock()
		ss.meta, ss.err = m, err
		// Ended by an operator's stop, as asked: not an error to report.
		ss.stopAsked = ss.stopped && errors.Is(err, context.Canceled) && !errors.Is(err, ErrShuttingDown)
		// Keep what status reports of an ended session, not its engine: a
		// server runs sessions for days, and each engine holds its whole
		// state and payload buffers.
		if !errors.Is(err, ErrPanicked) { // else the state may be half-changed
			st := ss.engine.State()
			ss.endTime, ss.endScore = int64(st.Now), policies.Score(st).TeamScore
			if ss.progress != nil {
				// The time of the log's last event; and its score where
				// the engine went on past what the log holds (a stop
				// cancels the batch in flight).
				var score float64
				ss.endTime, score = ss.progress.now()
				if st.LastSeq != m.LastSeq {
					ss.endScore = score
				}
			}
		}
		ss.engine = nil
		stopped, asked := ss.stopped, ss.stopAsked
		ss.mu.Unlock()
		s.keepEnded(ss)
		pr.end() // the process outlived it
		byShutdown := m.Status == events.StatusInterrupted && s.isStopping() && !stopped
		// A new session stopped before it logged anything cannot be
		// resumed from the log; a worker of a cluster (Queue) hands it
		// off all the same (another worker adopts it from its request).
		discard := byShutdown && unlogged && s.cfg.Queue == ""
		if unlogged && l.forked && !byShutdown && s.cfg.Queue == "" {
			// A fork stopped before its start: its metadata alone is in
			// the log, without its agents; nothing of it ran.
			s.discardFork(id)
		}
		if s.cfg.Hooks.Ended != nil {
			s.cfg.Hooks.Ended(m, err, byShutdown && !discard)
		}
		switch {
		case byShutdown && !discard:
			// Kept in the state file (with its seats' tokens) for a restart.
			log.Info("session interrupted by shutdown; a restarted serve on the same data resumes it", "status", m.Status, "last_seq", m.LastSeq)
			return
		case discard:
			// Created to wait for a start that never came: nothing of it
			// is in the log, so no restart could resume it.
			if l.forked {
				s.discardFork(id)
			}
			log.Warn("session created with wait and never started: discarded by shutdown (nothing of it was logged)")
			s.mu.Lock()
			s.discarded = append(s.discarded, id)
			s.mu.Unlock()
		case asked:
			log.Info("session stopped by an operator", "status", m.Status, "last_seq", m.LastSeq)
		case err != nil:
			log.Warn("session stopped", "status", m.Status, "last_seq", m.LastSeq, "error", err)
		default:
			log.Info("session ended", "status", m.Status, "events", m.LastSeq)
		}
		if s.cfg.Auth != nil {
			s.cfg.Auth.RemoveSession(id)
		}
		unsaved := false
		if err := s.state.remove(id); err != nil {
			log.Warn("cannot update the state file", "error", err)
			unsaved = true
		}
		unrecorded := false
		// A worker of a cluster (Queue) leaves it to the lease and the
		// hand-off.
		if err != nil && s.cfg.Queue == "" {
			// The driver's record of the end can fail (a disk that another
			// program filled to the last byte): the log still says running.
			stored, serr := s.cfg.Log.Session(context.Background(), id)
			unrecorded = serr == nil && stored.Status == events.StatusRunning && m.Status != events.StatusRunning
		}
		if unrecorded || unsaved {
			s.menders.Add(1)
			go s.mend(log, ss, m, unrecorded, unsaved)
		}
	}()
	// A session whose first batch failed has ended (failed, or
	// interrupted by a full disk) without being recorded; Status and Wait
	// tell how, as for any session that stops.
	select {
	case <-ss.begun:
	case <-ss.done:
	}
	return nil
}

// domainSecret is the secret of a draw domain (wire.CreateRequest.
// DrawDomain): the secret itself for the operator's (empty), else the
// secret and the domain's name; nil without a secret.
func domainSecret(secret []byte, domain string) []byte {
	if len(secret) == 0 || domain == "" {
		return secret
	}
	return append(append(append([]byte{}, secret...), 0), domain...)
}

// keepEnded adds ended session ss to the records kept, and forgets the
// earliest ended ones beyond Config.KeepEnded: a session answered as one
// that ended before a restart (its log says how). It lets go of the world
// ss played (MaxWorldMemory counts the running sessions' only).
func (s *Service) keepEnded(ss *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss.world = nil
	s.ended = append(s.ended, ss)
	for len(s.ended) > s.cfg.KeepEnded {
		old := s.ended[0]
		if !isClosed(old.done) {
			break // still finishing (its state file, its mend): next time
		}
		s.ended[0] = nil
		s.ended = s.ended[1:]
		if s.sessions[old.id] == old { // not the same ID running again (a hand-off back)
			delete(s.sessions, old.id)
		}
	}
}

// mendEvery is how often mend tries again.
const mendEvery = time.Second

// mend records what a session's end could not (a full disk): its status
// in the log (status), its removal from the state file (state). It tries
// every mendEvery until both are done, and once more when the service
// shuts down (Shutdown waits for it). Until then the listing shows the
// session as it ended (overlayEnded), and a read-write open of the store
// records a session left running interrupted. It gives up when the
// session runs again here (a resume): its records are the new run's.
func (s *Service) mend(log hclog.Logger, ss *session, m events.SessionMeta, status, state bool) {
	defer s.menders.Done()
	try := func() {
		// Under s.mu: a resume registers its run under it, before it
		// writes anything, so this write comes either before the new
		// run's or not at all.
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.sessions[m.ID] != ss {
			status, state = false, false
			return
		}
		if status {
			ctx, cancel := context.WithTimeout(context.Background(), listFor)
			err := s.cfg.Log.UpdateSession(ctx, m)
			cancel()
			if err == nil {
				status = false
				log.Info("recorded the session's end once the log took it", "status", m.Status, "last_seq", m.LastSeq)
			}
		}
		if state && s.state.remove(m.ID) == nil {
			state = false
		}
	}
	t := time.NewTicker(mendEvery)
	defer t.Stop()
	for status || state {
		select {
		case <-t.C:
			try()
		case <-s.stopping:
			try()
			if status || state {
				log.Warn("the session's end is still not recorded; the next read-write open of the store records it interrupted", "log_recorded", !status, "state_file_updated", !state)
			}
			return
		}
	}
}

// guard runs a session as driver.Guard does: a panic in it (a defect in
// the engine, a hook or an agent host) is the session's failure, recorded
// with its last durable seq, so that neither a restart nor another worker
// runs it again into the same panic, and the service and its other
// sessions go on.
func (s *Service) guard(log hclog.Logger, meta events.SessionMeta, run func() (events.SessionMeta, error)) (events.SessionMeta, error) {
	return driver.Guard(log, s.cfg.Log, meta, run)
}

// waitToStart holds a session until it may run: a start control message
// when created with wait, else until its remote seats are subscribed (or
// the join timeout passes). It reports false if the service is shutting
// down or the session was stopped meanwhile.
func (s *Service) waitToStart(ctx context.Context, ss *session, l launch, remote []string, log hclog.Logger) bool {
	if l.wait {
		select {
		case <-ss.started:
		case <-ctx.Done():
		case <-s.stopping:
		}
	} else if len(remote) > 0 {
		s.waitForSeats(ctx, ss.id, remote, l.joinTimeout, log)
	}
	return ctx.Err() == nil && !s.isStopping()
}

func (s *Service) isStopping() bool {
	select {
	case <-s.stopping:
		return true
	default:
		return false
	}
}

// waitForSeats waits until every remote seat's turn subject has a subscriber.
func (s *Service) waitForSeats(ctx context.Context, id string, remote []string, timeout time.Duration, log hclog.Logger) {
	deadline := time.Now().Add(timeout)
	for _, m := range remote {
		subj := wire.TurnSubject(id, m)
		for !s.cfg.Bus.Interest(subj) {
			if ctx.Err() != nil || s.isStopping() {
				return
			}
			if time.Now().After(deadline) {
				log.Warn("remote seat did not join in time; its turns will time out", "member", m)
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// open reports whether gate would let session ss go on at once: the
// service is not stopping and the session is not paused.
func (s *Service) open(ss *session) bool {
	if s.isStopping() {
		return false
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return !ss.paused
}

// gate runs before each of a session's steps: it holds a paused session,
// and stops every session once the service is shutting down. The error
// wraps context.Canceled, so the driver records the session interrupted
// (not failed) at the last batch it made durable.
func (s *Service) gate(ctx context.Context, ss *session) error {
	shutdown := fmt.Errorf("%w: %w", ErrShuttingDown, context.Canceled)
	if s.isStopping() {
		return shutdown
	}
	ss.probation.step()
	if s.cfg.Hooks.Gate != nil {
		if err := s.cfg.Hooks.Gate(ctx, ss.id); err != nil {
			return err
		}
	}
	ss.mu.Lock()
	paused, resume := ss.paused, ss.resume
	ss.mu.Unlock()
	if !paused {
		return nil
	}
	ss.probation.hold() // nothing of it runs while it is paused
	defer ss.probation.run()
	select {
	case <-resume:
		// The session may have moved while it was paused (a lost lease).
		if s.cfg.Hooks.Gate != nil {
			return s.cfg.Hooks.Gate(ctx, ss.id)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-s.stopping:
		return shutdown
	}
}

func (s *Service) handleControl(ss *session, msg *nats.Msg) {
	var req wire.ControlRequest
	reply := wire.ControlReply{Session: ss.id}
	if err := json.Unmarshal(msg.Data, &req); err != nil {
		reply.Error = "malformed request: " + err.Error()
	} else {
		switch req.Op {
		case wire.OpStart:
			ss.once.Do(func() { close(ss.started) })
			ss.mu.Lock()
			if ss.paused {
				ss.paused = false
				close(ss.resume)
			}
			ss.mu.Unlock()
			if err := s.state.setPaused(ss.id, false); err != nil {
				s.logger.Warn("cannot record the resume in the state file", "session", ss.id, "error", err)
			}
		case wire.OpPause:
			ss.mu.Lock()
			if !ss.paused {
				ss.paused, ss.resume = true, make(chan struct{})
			}
			ss.mu.Unlock()
			// Kept across a restart: a paused session stays paused.
			if err := s.state.setPaused(ss.id, true); err != nil {
				s.logger.Warn("cannot record the pause in the state file", "session", ss.id, "error", err)
			}
		case wire.OpStop:
			ss.mu.Lock()
			ss.stopped = true
			ss.mu.Unlock()
			ss.cancel()
			<-ss.done
		case wire.OpStatus:
		default:
			reply.Error = fmt.Sprintf("unknown op %q (expected start, pause, stop or status)", req.Op)
		}
	}
	// ss itself, not the service's table: the control subject answers
	// from before the session is registered in it (see launch), as a
	// session adopted by a worker does the moment its lease is taken.
	st := s.status(ss)
	st.Error = reply.Error + st.Error
	b, _ := json.Marshal(st)
	_ = msg.Respond(b)
}

// Status reports where a session stands.
func (s *Service) Status(id string) wire.ControlReply {
	s.mu.Lock()
	ss := s.sessions[id]
	s.mu.Unlock()
	r := wire.ControlReply{Session: id}
	if ss == nil {
		r.Error = "no such session"
		return r
	}
	return s.status(ss)
}

// status reports where session ss stands.
func (s *Service) status(ss *session) wire.ControlReply {
	id := ss.id
	r := wire.ControlReply{Session: id}
	meta, err := s.cfg.Log.Session(context.Background(), id)
	if err == nil {
		r.Status = string(meta.Status)
	} else if errors.Is(err, events.ErrNoSession) {
		r.Status = "created" // waiting for its start message, or its first batch (as the gateway says)
	}
	r.Events, _ = s.cfg.Log.LastSeq(context.Background(), id)
	select {
	case <-ss.done:
		ss.mu.Lock()
		// An operator's stop ends the session by cancelling it: that is
		// what was asked, not an error.
		if ss.err != nil && !ss.stopAsked {
			r.Error = ss.err.Error()
		}
		r.Time, r.Score = ss.endTime, ss.endScore
		if r.Status == "created" {
			// Ended with nothing in the log: stopped while held for its
			// start (or its first batch refused by a full disk). It is
			// over, and no status a client waits out may say otherwise.
			r.Status = string(events.StatusInterrupted)
			if st := ss.meta.Status; st == events.StatusFailed {
				r.Status = string(st)
			}
		}
		ss.mu.Unlock()
	default:
		if _, held := ss.heldMeta(); held && ss.held {
			r.Status = "created" // a fork held for its start is stored interrupted until it runs
		}
		ss.mu.Lock()
		if ss.paused {
			r.Status = wire.StatusPaused
		}
		prog := ss.progress
		ss.mu.Unlock()
		if prog != nil {
			// Events, time and score as of one batch: the log's last seq
			// read beside a progress not caught up yet paired a whole
			// session's events with a time and score of 0.
			var seq uint64
			if seq, r.Time, r.Score = prog.upTo(); seq > 0 {
				r.Events = seq
			}
		}
	}
	return r
}

// Wait blocks until a session ends and returns its final metadata.
func (s *Service) Wait(ctx context.Context, id string) (events.SessionMeta, error) {
	s.mu.Lock()
	ss := s.sessions[id]
	s.mu.Unlock()
	if ss == nil {
		return events.SessionMeta{}, fmt.Errorf("server: no session %s", id)
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

// Shutdown stops taking new sessions and stops every running one before
// its next step: the batch it is on is durable, and it is recorded
// interrupted. It waits for them until ctx is done, then cancels those
// still asking their agents (what they had not stored is asked again on
// resume) and waits for them to stop. The sessions stay in the state file
// for ResumeSaved. It returns ctx's error if the sessions had to be
// cancelled. Then it closes the service's connections.
func (s *Service) Shutdown(ctx context.Context) error { return s.shutdown(ctx, true) }

func (s *Service) shutdown(ctx context.Context, graceful bool) error {
	s.mu.Lock()
	first := !s.closed
	s.closed = true
	running := s.runningLocked()
	s.mu.Unlock()
	if first {
		close(s.stopping)
		s.queueChanged() // leave the queue group: other workers take new sessions
		s.logger.Info("shutting down: not taking new sessions; running sessions stop after their current batch", "running", running)
	}
	all := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(all)
	}()
	var err error
	select {
	case <-all:
	case <-ctx.Done():
		err = ctx.Err()
		if graceful {
			s.logger.Warn("sessions did not stop in time; cancelling their turns", "error", err)
		}
		s.mu.Lock()
		for _, ss := range s.sessions {
			// Not before it has begun: a new session's first batch is
			// made durable (and the session recorded) whatever happens,
			// so that the session its Create returns can be resumed.
			go func() {
				select {
				case <-ss.begun:
				case <-ss.done:
				}
				ss.cancel()
			}()
		}
		s.mu.Unlock()
		<-all
	}
	s.menders.Wait() // each tries once more, now that it is stopping
	if first {
		s.qmu.Lock()
		if s.create != nil {
			_ = s.create.Unsubscribe()
			s.create = nil
		}
		s.qmu.Unlock()
		for _, sub := range s.subs {
			_ = sub.Unsubscribe()
		}
		if s.conn != nil {
			s.conn.Close()
		}
	}
	return err
}

// Close stops every session at once (they are left interrupted, and kept
// in the state file for ResumeSaved) and the service: Shutdown without
// waiting for running turns.
func (s *Service) Close() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = s.shutdown(ctx, false)
}

// Discarded returns the IDs of the sessions a shutdown discarded: those
// created with wait and never started, of which nothing was logged (see
// Saved), in the order they ended.
func (s *Service) Discarded() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.discarded)
}

// Saved returns the sessions ResumeSaved would continue now: those the
// state file keeps (running, or interrupted by shutdown), in order.
func (s *Service) Saved() []string {
	saved := s.state.saved()
	ids := make([]string, 0, len(saved))
	for id := range saved {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// Counts reports the sessions this service holds by status (running,
// paused, finished, interrupted, failed) and the seats of those not yet
// ended by kind (builtin, remote, llm): the metrics' gauges.
func (s *Service) Counts() (sessions, seats map[string]int) {
	sessions, seats = map[string]int{}, map[string]int{}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ss := range s.sessions {
		ss.mu.Lock()
		select {
		case <-ss.done:
			sessions[string(ss.meta.Status)]++
		default:
			if ss.paused {
				sessions[wire.StatusPaused]++
			} else {
				sessions["running"]++
			}
			for k, n := range ss.kinds {
				seats[k] += n
			}
		}
		ss.mu.Unlock()
	}
	return sessions, seats
}
