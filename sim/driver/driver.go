// Package driver runs a sim.Engine: it owns the goroutines, the event log
// and the bus, and does the engine's I/O in the documented order — persist
// each batch of events in one synced append, publish them on NATS, then ask
// the members due to decide and Step their answers.
//
// It asks members through Seats, an interface it declares: one turn in,
// one answer out. BusSeats (the default) sends each turn as a NATS request
// on the member's turn subject, where agents/natshost or a remote agent
// answers; agents/inprocess gives the observation to an agents.Agent in
// this process, with no JSON and no bus. Either way the answers are applied
// in member-ID order, so the log does not depend on the path.
//
//	d := driver.New(driver.Config{Log: log, Conn: nc, Seats: inprocess.New(agents, inprocess.Options{})})
//	meta, err := d.Run(ctx, meta, engine)
//
// Nothing is published, and no agent sees anything, before the batch that
// produced it is durable.
package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/workers"
)

// Config configures a Driver. Log and Conn are required.
type Config struct {
	Log  events.Log
	Conn *nats.Conn // the event feed and the history responder are on it
	// Seats answer the members' turns; nil asks every member over Conn
	// (BusSeats).
	Seats       Seats
	Logger      hclog.Logger  // nil: silent
	TurnTimeout time.Duration // wall-clock budget of one turn; 0 means 30s
	// Progress, if set, is called after every durable batch with the session's last seq and simulated time.
	Progress func(seq uint64, simTime int64)
	// Gate, if set, is called before each step that follows a durable
	// batch, once the batches made so far are durable; it may block (a
	// paused session) and its error ends the run as if ctx were
	// cancelled.
	Gate func(ctx context.Context) error
	// Open, if set with Gate, says without blocking whether Gate would
	// let the session go on at once. While it does, the seats that answer
	// at once (ImmediateSeats) of a gated session are asked within a
	// batch, as in a session with no Gate; once it does not, the batch
	// lands and Gate is called before they are asked. When Open says no,
	// Gate must block or fail (a pause, a stop); were it to return at
	// once, the round is asked after it all the same. nil: a gated
	// session lands a batch before every round of turns.
	Open func() bool
	// Begun, if set, is called by Run once, when the session's first batch
	// (session.started and what the engine made up to its first turns) is
	// durable and published, before any member is asked; it may block (a
	// session waiting for its seats) and its error ends the run as the
	// Gate's does. A caller that must not hand out a session before it can
	// be resumed waits for it. Continue does not call it.
	Begun func(ctx context.Context) error
	// CheckpointEvery takes a checkpoint whenever the log passes a multiple
	// of this many events; negative means never. 0 means the default: at
	// least DefaultCheckpointEvery events apart, and further apart when the
	// state is large (see checkpointer).
	CheckpointEvery int
	// Interest, if set, reports whether anyone subscribes to a subject; the
	// event feed is not encoded or published while nobody listens (late
	// subscribers read what they missed from the history responder).
	Interest func(subject string) bool
	// MaxBatch bounds the events persisted in one append while no agent
	// outside the process has to be asked (group commit; the seats that
	// answer at once are asked within a batch); 0 means DefaultMaxBatch.
	// A batch may pass it by what the step that reached it made.
	MaxBatch int
	// Observer, if set, is told of every durable batch and every agent
	// turn (for metrics); nil means none.
	Observer Observer
	// Replica, if set, receives every batch after it is durable in Log and
	// before it is published or shown to an agent (a cluster-wide copy of
	// the log, such as a JetStream stream); its error ends the run.
	Replica Replica
	// MaxInFlight bounds the turn requests out at once when many members
	// are due at one instant; the others wait their turn to be sent, and a
	// member's budget (TurnTimeout) starts when its request is sent. 0 means
	// DefaultMaxInFlight. The bound changes only wall time and memory (each
	// request holds its observation's JSON on both ends of the bus), never
	// the log: answers are applied in member order.
	MaxInFlight int
	// MaxEvents, if not 0, is the session's budget of events, given to the
	// engine (sim.Engine.SetMaxEvents) before it runs or continues: once it
	// is spent the session ends "event_limit". 0 keeps the engine's (by
	// default sim.DefaultMaxEvents).
	MaxEvents int
	// Memory, if set, returns what the session's agents remember now (a
	// JSON value, or nil when it cannot be said), and each checkpoint
	// keeps it (sim.Engine.CheckpointWith): a fork or resume from far
	// into the session shows its agents only the turns since (sim/app's
	// Recall). It is called on the driver's goroutine between turns, when
	// no agent decides, and no more after a turn of a member that
	// remembers (Remembers) timed out or failed: its agent may have
	// changed what it remembers for a turn the log does not record.
	Memory func() (json.RawMessage, error)
	// Remembers, if set, says which members' agents remember what they
	// are shown: only a turn of theirs that timed out or failed stops
	// Memory being asked (a remote seat's, or a colleague's that
	// remembers nothing, changes no memory Memory reports). nil means
	// every member's.
	Remembers func(member string) bool
}

// Seats are how the driver asks members to decide: a turn (its member and
// observation) in, an answer out. The driver calls Ask concurrently for the
// members due at one instant (at most MaxInFlight at once), each with a ctx
// that ends when the turn's budget (TurnTimeout) is spent, and applies the
// answers in member-ID order once all are in. Ask owns obs.
//
// Ask returns the member's answer to obs.Turn: its actions (possibly none),
// Malformed saying why its reply could not be read, or Failed saying why
// its agent could not decide (recorded as turn.failed). An error — ctx's
// once the budget is spent, or any other — records the turn as timed out.
// Ask may be called for a member while its previous turn, already timed
// out, is still with its agent: an implementation that hosts agents must
// not give one agent two turns at once.
type Seats interface {
	Ask(ctx context.Context, session, member string, obs org.Observation) (sim.Answer, error)
}

// PartialSeats are Seats that say, for each member, which parts of an
// observation its agent never reads (agents played in process can; an
// observation sent over the bus is always whole). The driver has the
// engine leave them out (org.Omit): the agent decides the same, and the
// engine does not build what nobody reads.
type PartialSeats interface {
	Seats
	Omits(member string) org.Omit
}

// ImmediateSeats are Seats that say, for each member, whether its agent
// answers at once (played in process by an agent that neither waits nor
// calls out: agents/inprocess.Immediate). The driver asks those in turn on
// its own goroutine, instead of handing each to a worker and being woken
// with the answer, which costs more than their decisions; the others are
// asked at once, each on a worker, as before.
type ImmediateSeats interface {
	Seats
	Immediate(member string) bool
}

// DefaultMaxInFlight is the bound on turn requests out at once when none is
// configured: far more than the cores that answer in-process agents, and
// than the concurrency most model endpoints allow.
const DefaultMaxInFlight = 1024

// Replica keeps a second copy of the log. Replicate must return only when
// the batch is durable there; it is called once per batch, in order, and a
// batch it was given before may be given again after a restart (it must
// be idempotent: the events' IDs and seqs identify them).
type Replica interface {
	Replicate(ctx context.Context, session string, batch []events.Event) error
}

// CheckpointReplica is a Replica that also keeps checkpoints: the driver
// gives it each checkpoint once the log stores it, after the batch the
// checkpoint ends is replicated, so that whoever restores the session from
// the replica rebuilds its state, and its agents' memory, from there
// instead of from the first event. A failure is logged and the run goes
// on: the replica's events are whole without it.
type CheckpointReplica interface {
	Replica
	ReplicateCheckpoint(ctx context.Context, session string, cp events.Checkpoint) error
}

// Observer watches a running session, for metrics. The driver calls it
// from its own goroutines (Turn concurrently for the members asked at one
// instant), so it must be safe for concurrent use, must not block, and
// must not keep or modify the events it is shown. What it does never
// reaches the log.
type Observer interface {
	// Appended reports a batch made durable by one append that took d.
	Appended(session string, batch []events.Event, d time.Duration)
	// Turn reports one request to a member and how long its answer took;
	// timedOut when no answer came within the budget.
	Turn(session, member string, d time.Duration, timedOut bool)
}

// DefaultCheckpointEvery is the checkpoint interval when none is configured.
const DefaultCheckpointEvery = 1000

// NewSequencer is sim.Config's NewSequencer for the engines of the
// driver and the application: a workers.Chain, so that a state hashes the
// tickets it retires on goroutines beside the engine's.
func NewSequencer() org.Sequencer { return workers.NewChain() }

// DefaultMaxBatch is the group-commit bound when none is configured.
const DefaultMaxBatch = 4096

// eventOverhead approximates an event's stored bytes besides its payload.
const eventOverhead = 48

// checkpointer decides when to take a checkpoint. With an interval set,
// whenever the log passes a multiple of it. By default: at least
// DefaultCheckpointEvery events after the last one, and not before the log has grown by snapshotRatio
// times the bytes the last snapshot took. A snapshot holds the whole state,
// which grows with the session (every task ever created); spacing by bytes
// keeps the checkpoints' total size (and the time spent encoding them) a
// fraction of the log's instead of quadratic in it, while the events to
// replay after the last checkpoint stay proportional to the state.
//
// When the last checkpoint kept what the agents remember (remember), a
// fork or resume after it shows them the turns since (sim/app's Recall),
// a view and a decision each: the default rule then also takes one once
// the turns asked since are worth its bytes at recalledTurnBytes a turn.
// Without it, a 2,000-planner session with a 5.7 MB state took two
// checkpoints in 373,000 events, and a fork just before the second
// recalled 110,000 turns.
type checkpointer struct {
	every     int    // the configured interval (0: the default rule)
	last      uint64 // seq of the last checkpoint (or where the run began)
	grown     int    // bytes logged since then
	snapBytes int    // size of the last snapshot
	turns     int    // turns asked since then
	remember  bool   // the last checkpoint kept the agents' memory
}

func (c *checkpointer) logged(n int) { c.grown += n }

func (c *checkpointer) asked(n int) { c.turns += n }

func (c *checkpointer) due(seq uint64) bool {
	switch {
	case c.every < 0:
		return false
	case c.every > 0:
		return seq/uint64(c.every) > c.last/uint64(c.every)
	}
	return seq-c.last >= DefaultCheckpointEvery &&
		(c.grown >= snapshotRatio*c.snapBytes || c.remember && c.turns*recalledTurnBytes >= c.snapBytes)
}

// snapshotRatio is how many bytes of log a checkpoint's bytes must be worth.
const snapshotRatio = 8

// recalledTurnBytes is how many bytes of a checkpoint a turn to recall is
// worth. In a 2,000-member world, recalling a turn (its view rebuilt, its
// decision made again) took about 40 µs, and a checkpoint of its 5.7 MB
// state 28 ms to encode on the engine's goroutine (then stored beside
// it): at 512 bytes a turn, one is taken every 11,000 turns at most, and
// a fork recalls at most those (about 0.45 s), where it recalled up to
// 110,000.
const recalledTurnBytes = 512

func (c *checkpointer) taken(seq uint64, size int, remember bool) {
	c.last, c.grown, c.snapBytes, c.turns, c.remember = seq, 0, size, 0, remember
}

// Driver runs sessions. It is safe to run several sessions with one Driver.
type Driver struct {
	cfg    Config
	logger hclog.Logger
	seats  Seats
}

// New makes a Driver.
func New(cfg Config) *Driver {
	if cfg.TurnTimeout == 0 {
		cfg.TurnTimeout = 30 * time.Second
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	l := cfg.Logger
	if l == nil {
		l = hclog.NewNullLogger()
	}
	seats := cfg.Seats
	if seats == nil {
		seats = BusSeats(cfg.Conn)
	}
	return &Driver{cfg: cfg, logger: l, seats: seats}
}

// Run creates the session described by meta, starts e, and runs it to its
// end. It returns the final metadata (status finished, last seq and state
// hash; status failed, with no error, when the session ended because its
// agents failed every turn, sim.EndAgentsFailed). If ctx is cancelled the
// session is left interrupted.
func (d *Driver) Run(ctx context.Context, meta events.SessionMeta, e *sim.Engine) (events.SessionMeta, error) {
	if err := d.budget(e); err != nil {
		return meta, err
	}
	meta.Status = events.StatusRunning
	e.Start()
	// The session is founded with its first batch (events.Found): one
	// durable write, and no session in the log without its session.started.
	return d.loop(ctx, meta, e, 0, d.cfg.Begun, true)
}

// Fork runs fork meta (Parent and ForkSeq set, not yet in the log) from
// where e stands — e was built with LoadFork — to its end. The fork is
// founded with its first batch, in one durable write; a fork that makes no
// event before it ends is created when it ends.
func (d *Driver) Fork(ctx context.Context, meta events.SessionMeta, e *sim.Engine) (events.SessionMeta, error) {
	if err := d.budget(e); err != nil {
		return meta, err
	}
	if meta.Parent == "" || e.State().LastSeq != meta.ForkSeq {
		return meta, fmt.Errorf("driver: fork %s of %q at seq %d: the engine stands at seq %d", meta.ID, meta.Parent, meta.ForkSeq, e.State().LastSeq)
	}
	meta.Status = events.StatusRunning
	e.Resume()
	return d.loop(ctx, meta, e, meta.ForkSeq, nil, true)
}

// Continue runs an existing session from where e stands — e was rebuilt from
// the session's log with Load, for a resume or a fork — to its end.
func (d *Driver) Continue(ctx context.Context, meta events.SessionMeta, e *sim.Engine) (events.SessionMeta, error) {
	if err := d.budget(e); err != nil {
		return meta, err
	}
	meta.Status = events.StatusRunning
	if err := d.cfg.Log.UpdateSession(ctx, meta); err != nil {
		return meta, fmt.Errorf("driver: %w", err)
	}
	// The last durable seq, read before Resume: Resume may already emit
	// events (an NPC due alone decides at once) that are not yet stored.
	last := e.State().LastSeq
	e.Resume()
	return d.loop(ctx, meta, e, last, nil, false)
}

// budget gives e the configured budget of events, if any.
func (d *Driver) budget(e *sim.Engine) error {
	if d.cfg.MaxEvents == 0 {
		return nil
	}
	if err := e.SetMaxEvents(d.cfg.MaxEvents); err != nil {
		return fmt.Errorf("driver: %w", err)
	}
	return nil
}

// loop runs e from last to its end; begun, if not nil, is called once the
// first batch has landed (see Config.Begun). If found, the session is not
// in the log yet: its first batch founds it (events.Found), or, if it
// fails before it made one, its metadata is created then (one stopped
// before it made one stays out of the log).
func (d *Driver) loop(ctx context.Context, meta events.SessionMeta, e *sim.Engine, last uint64, begun func(context.Context) error, found bool) (events.SessionMeta, error) {
	log := d.logger.With("session", meta.ID)
	subject := wire.EventsSubject(meta.ID)
	// record stores meta: creates the session if nothing founded it yet.
	record := func(ctx context.Context, meta events.SessionMeta) error {
		if found {
			if err := d.cfg.Log.CreateSession(ctx, meta); err != nil {
				return err
			}
			found = false
			return nil
		}
		return d.cfg.Log.UpdateSession(ctx, meta)
	}
	fail := func(err error) (events.SessionMeta, error) {
		if st := e.State(); st.EndReason != "" && st.LastSeq == last && last > 0 && e.EndStateHash() != "" {
			// Stopped just as it ended, its end durable (session.ended
			// stored, a stop coming before it was recorded): finished,
			// whatever asked it to stop.
			meta.Status, meta.LastSeq, meta.StateHash = EndStatus(st.EndReason), last, e.EndStateHash()
			if uerr := record(context.WithoutCancel(ctx), meta); uerr != nil {
				return meta, fmt.Errorf("driver: %w", uerr)
			}
			log.Info("session finished as it was stopped", "events", last, "state_hash", meta.StateHash)
			return meta, nil
		}
		// Stopped from outside, or by a full disk (the store refused a
		// write; nothing acknowledged is lost and the session can be
		// resumed once there is room): interrupted. Anything else: failed.
		meta.Status = events.StatusInterrupted
		if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, syscall.ENOSPC) {
			meta.Status = events.StatusFailed
		}
		meta.LastSeq = last
		if found && meta.Status == events.StatusInterrupted {
			// Stopped before its first batch was stored: nothing of it
			// is in the log, and an empty session could not be resumed
			// (a session is never in the log without its first events).
			return meta, err
		}
		if uerr := record(context.WithoutCancel(ctx), meta); uerr != nil {
			log.Error("cannot record session status", "error", uerr)
		}
		return meta, err
	}
	var landed atomic.Uint64 // the last seq the history may serve: durable, replicated, and published next (see land)
	landed.Store(last)
	hist, err := d.serveHistory(meta.ID, &landed)
	if err != nil {
		return fail(err)
	}
	defer hist.Unsubscribe()
	var buf []byte
	cps := checkpointer{every: d.cfg.CheckpointEvery, last: last}
	forgot := false // a turn of a member that remembers timed out or failed: Memory is not asked again
	// Batches in flight: appended (and replicated) by their own goroutines
	// while the engine makes the next one, one at a time, or two when the
	// log takes a session's next batch before the last is durable (see
	// depth). A batch's checkpoint is stored by its append, after the batch
	// is ordered, so never durable before it. The batches land in order —
	// are published, their progress reported — before a batch beyond the
	// depth leaves, before anyone outside this process is asked, and
	// before the run ends, so nothing is shown outside before it is
	// durable. The seats that answer at once (ImmediateSeats) of a session
	// with no Gate, or with a Gate that is Open, are asked within a batch.
	var (
		flying []*flight
		spares [][]events.Event // copies of landed batches, reused
		issued = last           // last seq handed to an append
		depth  = d.depth()
	)
	// tally counts a batch made durable in the session's last seq (and
	// its founding, if it founded the session).
	tally := func(f *flight) {
		last = f.batch[len(f.batch)-1].Seq
		if f.found != nil {
			found = false
		}
	}
	land := func() error {
		if len(flying) == 0 {
			return nil
		}
		f := flying[0]
		flying = flying[1:]
		err := <-f.done
		if f.stored {
			tally(f)
		}
		if err != nil {
			return err
		}
		// The history serves the batch before the feed carries it: a
		// watcher that the feed dropped an event for, and that asks the
		// history once told, finds it there. Stored after the publishing,
		// a request made while the rest of the batch was being published
		// stopped short of what the feed had already dropped.
		landed.Store(last)
		if d.cfg.Interest == nil || d.cfg.Interest(subject) {
			for i := range f.batch {
				buf = events.AppendJSON(buf[:0], &f.batch[i])
				if err := d.cfg.Conn.Publish(subject, buf); err != nil {
					return fmt.Errorf("driver: publish: %w", err)
				}
			}
		}
		if d.cfg.Progress != nil {
			d.cfg.Progress(last, f.batch[len(f.batch)-1].Time)
		}
		clear(f.batch) // drop the references to the payloads
		spares = append(spares, f.batch)
		return nil
	}
	landAll := func() error {
		for len(flying) > 0 {
			if err := land(); err != nil {
				return err
			}
		}
		return nil
	}
	defer func() {
		// Whatever ends the loop (an engine panic included), the appends
		// in flight are waited for: nothing writes after the run returned.
		for _, f := range flying {
			<-f.done
		}
	}()
	failLanding := func(err error) (events.SessionMeta, error) {
		// Wait for the appends in flight, so nothing writes after the run
		// returns; the session's last seq counts those made durable, in
		// order, up to the first that failed.
		ok := true
		for _, f := range flying {
			<-f.done
			if ok = ok && f.stored; ok {
				tally(f)
			}
		}
		flying = nil
		return fail(err)
	}
	// gated: Gate let this step go on, so its round is asked, open or
	// not. open: the gate, if any, lets a round of immediate seats be
	// asked now, without the batch landing first.
	gated := false
	open := func() bool {
		if d.cfg.Gate == nil || gated {
			return true
		}
		return d.cfg.Open()
	}
	for {
		if err := ctx.Err(); err != nil {
			return failLanding(err)
		}
		gated = false
		if d.cfg.Gate != nil && issued > 0 {
			// Not before the session's first batch, so that every session
			// that was created begins its log with session.started (a
			// session paused at once can then be resumed after a restart).
			// A paused session shows everything it made before it waits.
			if err := landAll(); err != nil {
				return failLanding(err)
			}
			if err := d.cfg.Gate(ctx); err != nil {
				return failLanding(err)
			}
			gated = true
		}
		rd := e.ReadyIDs() // observations are built as the turns are sent (ask)
		// Group commit: while nobody outside this process has to be asked,
		// let the engine run on and persist what it made in one batch. The
		// seats that answer at once are asked here, in the batch: an agent
		// in this process that shows nobody what it saw needs nothing
		// durable first (were the process to crash, it and what it saw
		// would go together, and a resume asks it again from the log).
		// Nothing is published (so nothing is acknowledged) before it is
		// durable.
		// A batch also ends before a round of turns where a checkpoint
		// falls due, as it did when every round ended one: the checkpoints
		// stay where they were, but where a batch reaches MaxBatch between
		// two rounds (its cut then falls elsewhere than before).
		counted := 0 // rd.Events counted by cps
		count := func() bool {
			for ; counted < len(rd.Events); counted++ {
				cps.logged(len(rd.Events[counted].Payload) + eventOverhead)
			}
			return counted > 0 && cps.due(rd.Events[counted-1].Seq)
		}
		closed := false // the gate was not open for the round of turns ready
		for !rd.Done && len(rd.Events) < d.cfg.MaxBatch && ctx.Err() == nil {
			if len(rd.Turns) == 0 {
				e.Tick()
			} else if begun == nil && d.immediate(rd.Turns) && !count() {
				if closed = !open(); closed {
					break
				}
				forgot = d.answer(ctx, log, meta.ID, e, &cps, rd.Turns, forgot)
				gated = false
			} else {
				break
			}
			rd = e.ReadyIDs()
		}
		// held: a round of immediate seats that a gate not open holds back
		// until the batch has landed and the gate has let it go on (Open
		// asked once a round).
		imm := len(rd.Turns) > 0 && d.immediate(rd.Turns)
		held := imm && (closed || !open())
		// The batch lands before the loop goes on when something waits for
		// it to be durable: a seat outside to ask, the end, a session to
		// begin, a gate; and when it founds the session, which the next
		// batch appends to.
		landNow := rd.Done || begun != nil || found || (len(rd.Turns) > 0 && !imm) || held
		if len(rd.Events) > 0 {
			for len(flying) >= depth {
				if err := land(); err != nil {
					return failLanding(err)
				}
			}
			f := &flight{done: make(chan error, 1), ordered: make(chan struct{})}
			if found {
				// The first batch (found is cleared once it lands): it
				// founds the session.
				m := meta
				f.found = &m
			}
			var spare []events.Event
			if n := len(spares); n > 0 {
				spare, spares = spares[n-1], spares[:n-1]
			}
			f.batch = append(spare[:0], rd.Events...) // the engine reuses its array after Advance
			count()
			if end := f.batch[len(f.batch)-1].Seq; cps.due(end) {
				// The engine stands at the batch's end: its checkpoint is
				// taken now and stored once the batch is durable.
				var mem json.RawMessage
				if d.cfg.Memory != nil && !forgot {
					var err error
					if mem, err = d.cfg.Memory(); err != nil {
						log.Warn("the checkpoint keeps no memory of the agents", "seq", end, "error", err)
						mem = nil
					}
				}
				hash, data := e.CheckpointWith(mem)
				f.cp = &events.Checkpoint{Seq: end, StateHash: hash, Data: data}
				cps.taken(end, len(data), mem != nil)
			}
			var before *flight
			if n := len(flying); n > 0 {
				before = flying[n-1]
			}
			after := issued
			if landNow {
				// Landed at once below (landAll): flown from here, it hands
				// no work to a worker and waits for no wake-up, which in a
				// world of many seats cost more than an in-memory append.
				d.fly(ctx, meta.ID, after, f, before)
			} else {
				workerPool.Run(func() { d.fly(ctx, meta.ID, after, f, before) })
			}
			issued = f.batch[len(f.batch)-1].Seq
			flying = append(flying, f)
		}
		e.Advance()
		if landNow {
			// Landing the first batch at once when begun waits for it
			// changes when it is published, not what is logged: the
			// batches and checkpoints were cut above.
			if err := landAll(); err != nil {
				return failLanding(err)
			}
		}
		if begun != nil && len(flying) == 0 && last > 0 {
			if err := begun(ctx); err != nil {
				return failLanding(err)
			}
			begun = nil
		}
		if rd.Done {
			break
		}
		if held || (len(rd.Turns) > 0 && d.cfg.Gate != nil && issued > 0 && !gated) {
			// Asked once the gate lets them (above): a round held back, or
			// one whose seats are outside the process after rounds asked
			// within the batch since Gate last ran. The batch has landed.
			continue
		}
		if len(rd.Turns) > 0 {
			forgot = d.answer(ctx, log, meta.ID, e, &cps, rd.Turns, forgot)
		} else {
			e.Tick()
		}
	}
	if err := d.cfg.Conn.Flush(); err != nil {
		log.Warn("flush of the event feed failed", "error", err)
	}
	meta.Status = EndStatus(e.State().EndReason)
	meta.LastSeq = last
	meta.StateHash = e.EndStateHash()
	// Its end is durable: a stop asked now does not make it interrupted.
	if err := record(context.WithoutCancel(ctx), meta); err != nil {
		return meta, fmt.Errorf("driver: %w", err)
	}
	if meta.Status == events.StatusFailed {
		log.Warn("session failed: its agents failed every turn they were asked (turn.failed events)", "events", last, "state_hash", meta.StateHash)
	} else {
		log.Info("session finished", "events", last, "state_hash", meta.StateHash)
	}
	return meta, nil
}

// answer asks the members of turns and steps the engine with their
// answers. It returns whether Memory is no longer asked: forgot, or a turn
// of a member that remembers timed out or failed.
func (d *Driver) answer(ctx context.Context, log hclog.Logger, session string, e *sim.Engine, cps *checkpointer, turns []sim.Turn, forgot bool) bool {
	cps.asked(len(turns))
	answers := d.ask(ctx, log, session, turns, d.observer(e))
	for i := 0; i < len(answers) && !forgot; i++ {
		a := &answers[i]
		forgot = (a.TimedOut || a.Failed != "" || a.Malformed != "") && (d.cfg.Remembers == nil || d.cfg.Remembers(a.Member))
	}
	e.Step(answers)
	return forgot
}

// immediate reports whether the members of turns are asked within a
// batch: every one is played by a seat that answers at once
// (ImmediateSeats), the session has no Replica (whose copy comes before
// anything is shown to an agent), and no Gate or one that says when it is
// Open (a served session, paused or stopped before a turn).
func (d *Driver) immediate(turns []sim.Turn) bool {
	imm, ok := d.seats.(ImmediateSeats)
	if !ok || (d.cfg.Gate != nil && d.cfg.Open == nil) || d.cfg.Replica != nil {
		return false
	}
	for i := range turns {
		if !imm.Immediate(turns[i].Member) {
			return false
		}
	}
	return true
}

// observer is how ask builds a member's observation from e: whole, or
// without what the member's seat says its agent never reads.
func (d *Driver) observer(e *sim.Engine) func(member string) org.Observation {
	p, ok := d.seats.(PartialSeats)
	if !ok {
		return e.Observe
	}
	return func(member string) org.Observation {
		if omit := p.Omits(member); omit != 0 {
			return e.ObserveOmitting(member, omit)
		}
		return e.Observe(member)
	}
}

// ask sends the turns, at most MaxInFlight at once, and waits for the
// answers, each within the turn budget (but those of seats that answer at
// once, ImmediateSeats, asked here in turn with none). It owns turns: each observation is
// built with observe when its turn is about to be asked (on the caller's
// goroutine, which owns the engine) and handed to Seats, so that a round of
// thousands of members holds at most MaxInFlight of them.
func (d *Driver) ask(ctx context.Context, log hclog.Logger, session string, turns []sim.Turn, observe func(member string) org.Observation) []sim.Answer {
	answers := make([]sim.Answer, len(turns))
	imm, _ := d.seats.(ImmediateSeats)
	var wg sync.WaitGroup
	slots := make(chan struct{}, d.cfg.MaxInFlight)
	for i := range turns {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			// Not sent: it times out, as a request cut short by ctx does.
			answers[i] = sim.Answer{Member: turns[i].Member, TimedOut: true}
			continue
		}
		// Built here, on the engine's goroutine, once a slot is free: at
		// most MaxInFlight observations exist at once.
		obs := observe(turns[i].Member)
		immediate := imm != nil && imm.Immediate(turns[i].Member)
		wg.Add(1)
		one := func(obs org.Observation) {
			defer func() { <-slots; wg.Done() }()
			member := turns[i].Member
			rctx := ctx // an agent that answers at once waits for nothing: no budget to time
			if !immediate {
				var cancel context.CancelFunc
				rctx, cancel = context.WithTimeout(ctx, d.cfg.TurnTimeout)
				defer cancel()
			}
			start := time.Now()
			a, err := d.seats.Ask(rctx, session, member, obs)
			if d.cfg.Observer != nil {
				d.cfg.Observer.Turn(session, member, time.Since(start), err != nil)
			}
			if err != nil {
				log.Warn("turn not answered", "member", member, "error", err)
				a = sim.Answer{TimedOut: true}
			}
			a.Member = member
			answers[i] = a
		}
		if i == len(turns)-1 || immediate {
			// The last is asked from here, where the answers would be
			// waited for: a round of one turn (most rounds) hands no
			// work to another goroutine and waits for no wake-up (nor
			// copies its observation to the heap). So is an agent that
			// answers at once (ImmediateSeats).
			one(obs)
		} else {
			held := obs // on the heap only here, for the worker
			workerPool.Run(func() { one(held) })
		}
	}
	wg.Wait()
	return answers
}

// BusSeats asks every member over NATS request/reply on nc: the turn's
// observation as JSON on the member's turn subject (wire.TurnSubject),
// its reply parsed strictly (wire.ParseReply). agents/natshost answers there
// for agents in some process, and remote agents answer for themselves.
func BusSeats(nc *nats.Conn) Seats { return &busSeats{conn: nc} }

type busSeats struct {
	conn *nats.Conn
	bufs sync.Pool // *[]byte: observations' JSON, reused once answered
}

// Ask implements Seats. A seat with no subscriber (its agent dropped its
// connection and has not come back yet) is asked again until the budget is
// spent (see request).
func (b *busSeats) Ask(ctx context.Context, session, member string, obs org.Observation) (sim.Answer, error) {
	buf, _ := b.bufs.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	data, err := wire.AppendObservation((*buf)[:0], &obs) // json.Marshal's bytes, without reflection
	if err != nil {
		panic("driver: observation does not encode: " + err.Error())
	}
	msg, err := b.request(ctx, wire.TurnSubject(session, member), data)
	if err != nil {
		return sim.Answer{}, err // the bus may still hold data: it is not reused
	}
	// Answered: the request has left the connection's buffers.
	*buf = data
	b.bufs.Put(buf)
	r, err := wire.ParseReply(msg.Data)
	if err != nil {
		return sim.Answer{Malformed: err.Error()}, nil
	}
	if r.Error != "" {
		return sim.Answer{Turn: r.Turn, Failed: r.Error}, nil
	}
	return sim.Answer{Turn: r.Turn, Actions: r.Actions}, nil
}

// Backoff of a turn request that finds no responders: asked again after
// retryMin, doubling up to retryMax, until the turn budget is spent.
const (
	retryMin = 50 * time.Millisecond
	retryMax = 500 * time.Millisecond
)

// request sends one turn's request and waits for its reply until ctx ends.
// While nobody subscribes to subject (nats.ErrNoResponders: the seat's agent
// is disconnected, or has not subscribed yet) it sends it again with
// backoff. ErrNoResponders means the server delivered the request to
// nobody, so no agent ever sees one turn's request twice, and the one reply
// a turn waits for is applied at most once: a reply that comes after the
// request ended finds no one waiting on its inbox, and one that names an
// older turn is rejected by the engine.
func (b *busSeats) request(ctx context.Context, subject string, data []byte) (*nats.Msg, error) {
	wait := retryMin
	for tries := 1; ; tries++ {
		msg, err := b.conn.RequestWithContext(ctx, subject, data)
		if !errors.Is(err, nats.ErrNoResponders) {
			return msg, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("no responders in %d tries: %w", tries, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, retryMax)
	}
}

// flight is a batch on its way to the log (and the replica).
type flight struct {
	found *events.SessionMeta // the session the batch founds (its first), or nil
	batch []events.Event
	cp    *events.Checkpoint // taken at the batch's end; stored by fly, durable only with the batch
	// ordered is closed once the batch is ordered in the log (the next
	// batch may be appended after it) or its append failed (orderErr).
	ordered  chan struct{}
	orderErr error
	// stored is set, before done is sent, once the batch is durable and
	// replicated: its checkpoint may still have failed.
	stored bool
	done   chan error // the append's, replication's and checkpoint's result
}

// depth is how many batches a run keeps in flight: two when the log takes
// a session's next batch before the last is durable (events.Pipeliner) and
// no replica has to take them in order, else one.
func (d *Driver) depth() int {
	if _, ok := d.cfg.Log.(events.Pipeliner); ok && d.cfg.Replica == nil {
		return 2
	}
	return 1
}

// fly appends f's batch after last, once before (the batch in flight
// ahead of it, or nil) is ordered, replicates it, tells the observer, and
// reports the result on f.done.
func (d *Driver) fly(ctx context.Context, session string, last uint64, f, before *flight) {
	ordered := false
	order := func(err error) {
		if !ordered {
			ordered = true
			f.orderErr = err
			close(f.ordered)
		}
	}
	defer func() {
		// A panic here (in the log, the replica or the observer) is the
		// run's error, not the end of the process and its other sessions.
		if r := recover(); r != nil {
			err := fmt.Errorf("driver: append of seq %d..%d panicked: %v", f.batch[0].Seq, f.batch[len(f.batch)-1].Seq, r)
			order(err)
			f.done <- err
		}
	}()
	if before != nil {
		if <-before.ordered; before.orderErr != nil {
			err := fmt.Errorf("driver: append of seq %d..%d: not tried, the batch before it failed", f.batch[0].Seq, f.batch[len(f.batch)-1].Seq)
			order(err)
			f.done <- err
			return
		}
	}
	start := time.Now()
	var durable func() error
	var err error
	if f.found != nil {
		if err = events.Found(ctx, d.cfg.Log, *f.found, f.batch); err != nil {
			err = fmt.Errorf("driver: create session: %w", err)
		}
	} else if durable, err = d.append(ctx, session, last, f.batch); err != nil {
		err = fmt.Errorf("driver: append: %w", err)
	}
	order(err)
	var cpErr error
	cpEarly := err == nil && durable != nil && f.cp != nil && d.cfg.Replica == nil
	if cpEarly {
		// Stored at once: the batch is ordered before it (see
		// events.Pipeliner), so the checkpoint's own synced write makes
		// both durable, one sync where storing it after the batch's sync
		// took two.
		cpErr = d.cfg.Log.PutCheckpoint(ctx, session, *f.cp)
	}
	if err == nil && durable != nil {
		if err = durable(); err != nil {
			err = fmt.Errorf("driver: append: %w", err)
		}
	}
	if err != nil {
		f.done <- err
		return
	}
	if d.cfg.Observer != nil {
		d.cfg.Observer.Appended(session, f.batch, time.Since(start))
	}
	if d.cfg.Replica != nil {
		if err := d.cfg.Replica.Replicate(ctx, session, f.batch); err != nil {
			f.done <- fmt.Errorf("driver: replicate: %w", err)
			return
		}
	}
	f.stored = true
	if f.cp != nil && !cpEarly {
		// Stored here, not where the batch lands: a checkpoint is a
		// synced write of its own, which the engine waited for at every
		// checkpoint (160 ms of a 1.3 s durable support-desk-bench run).
		cpErr = d.cfg.Log.PutCheckpoint(ctx, session, *f.cp)
	}
	if cpErr != nil {
		f.done <- fmt.Errorf("driver: checkpoint: %w", cpErr)
		return
	}
	if cr, ok := d.cfg.Replica.(CheckpointReplica); ok && f.cp != nil {
		start := time.Now()
		if err := cr.ReplicateCheckpoint(ctx, session, *f.cp); err != nil && ctx.Err() == nil {
			d.logger.Warn("checkpoint not replicated; a restore of the session will replay from an earlier one",
				"session", session, "seq", f.cp.Seq, "error", err)
		} else if err == nil {
			d.logger.Debug("checkpoint replicated", "session", session, "seq", f.cp.Seq, "bytes", len(f.cp.Data), "took", time.Since(start))
		}
	}
	f.done <- nil
}

// append stores a batch the engine made, with AppendPipelined when the log
// has it (the batch is ordered on return, and durable once the returned
// wait returns), else with AppendTrusted (the engine encoded every payload
// itself), else Append; durable is nil when the batch is durable already.
func (d *Driver) append(ctx context.Context, session string, last uint64, batch []events.Event) (durable func() error, err error) {
	switch l := d.cfg.Log.(type) {
	case events.Pipeliner:
		return l.AppendPipelined(ctx, session, last, batch)
	case events.TrustedAppender:
		return nil, l.AppendTrusted(ctx, session, last, batch)
	}
	return nil, d.cfg.Log.Append(ctx, session, last, batch)
}

// EndStatus is the status of a session whose log ended (session.ended)
// for reason: finished, or failed when its agents failed every turn
// (sim.EndAgentsFailed): its log is whole, but no agent ever decided, so
// it is not a result.
func EndStatus(reason string) events.Status {
	if reason == sim.EndAgentsFailed {
		return events.StatusFailed
	}
	return events.StatusFinished
}

// workerPool runs the turns asked and the batches landed, for all drivers.
var workerPool = workers.New()
