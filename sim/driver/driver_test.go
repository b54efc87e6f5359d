package driver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

// slowLog makes every append take a while and remembers the last durable
// seq, so that a test sees anything published before its batch is durable.
type slowLog struct {
	events.Log
	durable atomic.Uint64
	appends atomic.Int64
	early   atomic.Int64 // checkpoints stored before the events they stand at were durable
}

func (l *slowLog) PutCheckpoint(ctx context.Context, session string, cp events.Checkpoint) error {
	if cp.Seq > l.durable.Load() {
		l.early.Add(1)
	}
	return l.Log.PutCheckpoint(ctx, session, cp)
}

func (l *slowLog) Append(ctx context.Context, session string, last uint64, batch []events.Event) error {
	time.Sleep(2 * time.Millisecond)
	if err := l.Log.Append(ctx, session, last, batch); err != nil {
		return err
	}
	l.durable.Store(batch[len(batch)-1].Seq)
	l.appends.Add(1)
	return nil
}

// slowPipelinedLog is a slowLog that takes a session's next batch before the
// last is durable (events.Pipeliner): a batch is ordered at once and
// becomes durable a while later, after the batch before it, as a WAL
// syncs, whether or not anyone waits for it. A checkpoint is a synced
// write: it is stored once everything ordered before it is durable, and
// one that stands beyond what was ordered is counted. It remembers the most
// batches that were ordered and not yet durable.
type slowPipelinedLog struct {
	slowLog
	mu         sync.Mutex
	synced     *sync.Cond
	ordered    uint64 // the last seq ordered
	unordered  int    // checkpoints stored beyond the last seq ordered
	pending    int
	maxPending int
}

func newSlowPipelinedLog(l events.Log) *slowPipelinedLog {
	p := &slowPipelinedLog{slowLog: slowLog{Log: l}}
	p.synced = sync.NewCond(&p.mu)
	return p
}

func (l *slowPipelinedLog) AppendPipelined(ctx context.Context, session string, last uint64, batch []events.Event) (func() error, error) {
	if err := l.Log.Append(ctx, session, last, batch); err != nil {
		return nil, err
	}
	end := batch[len(batch)-1].Seq
	l.mu.Lock()
	l.ordered = end
	l.pending++
	l.maxPending = max(l.maxPending, l.pending)
	l.mu.Unlock()
	synced := make(chan struct{})
	go func() {
		time.Sleep(2 * time.Millisecond)
		l.mu.Lock()
		for l.durable.Load() != last {
			l.synced.Wait()
		}
		l.durable.Store(end)
		l.appends.Add(1)
		l.pending--
		l.synced.Broadcast()
		l.mu.Unlock()
		close(synced)
	}()
	return func() error { <-synced; return nil }, nil
}

func (l *slowPipelinedLog) PutCheckpoint(ctx context.Context, session string, cp events.Checkpoint) error {
	l.mu.Lock()
	if cp.Seq > l.ordered {
		l.unordered++ // it would wait for ever: store it now, to be counted
	} else {
		for l.durable.Load() < l.ordered {
			l.synced.Wait()
		}
	}
	l.mu.Unlock()
	return l.slowLog.PutCheckpoint(ctx, session, cp)
}

// startBus starts an embedded NATS server for the test.
func startBus(t *testing.T) *natsserver.Server {
	t.Helper()
	bus, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bus.Shutdown)
	return bus
}

// connect connects to bus for the rest of the test.
func connect(t *testing.T, bus *natsserver.Server, name string) *nats.Conn {
	t.Helper()
	conn, err := bus.Connect(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// answerWatcher plays the desk world's one seat, which only watches: it
// answers every turn with a wait.
func answerWatcher(t *testing.T, conn *nats.Conn, session string) *nats.Subscription {
	t.Helper()
	sub, err := conn.Subscribe(wire.TurnSubject(session, "watcher"), func(m *nats.Msg) {
		_ = m.Respond([]byte(`{"actions":[{"type":"wait"}]}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

// The engine runs on while a batch is being appended, but nothing is
// published before it is durable, the feed comes in order without gaps,
// checkpoints are stored only for durable events and verify against a
// replay, and the log is the one a run without overlap writes.
func TestBatchInFlightIsPublishedOnlyOnceDurable(t *testing.T) {
	w, src := simtest.DeskWorld(t, 600)
	bus := startBus(t)

	run := func(t *testing.T, maxBatch int, log events.Log, watch func(seq uint64)) events.SessionMeta {
		t.Helper()
		const id = "01J0000000000000000000PIPE"
		conn := connect(t, bus, "driver")
		defer answerWatcher(t, conn, id).Unsubscribe()
		if watch != nil {
			sub, err := conn.Subscribe(wire.EventsSubject(id), func(m *nats.Msg) {
				var ev struct {
					Seq uint64 `json:"seq"`
				}
				if err := json.Unmarshal(m.Data, &ev); err != nil {
					t.Error(err)
				}
				watch(ev.Seq)
			})
			if err != nil {
				t.Fatal(err)
			}
			defer sub.Unsubscribe()
			if err := conn.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		e, err := sim.New(sim.Config{World: w, Source: src, Seed: 5, Session: id})
		if err != nil {
			t.Fatal(err)
		}
		d := driver.New(driver.Config{Log: log, Conn: conn, MaxBatch: maxBatch, CheckpointEvery: 700})
		meta, err := d.Run(context.Background(), events.SessionMeta{ID: id, World: w.Name, WorldHash: w.Hash, Seed: 5}, e)
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.Flush(); err != nil {
			t.Fatal(err)
		}
		if watch != nil {
			watch(0) // wait for the feed, before the subscription goes
		}
		return meta
	}

	// check runs the desk with batches of 32 over log and checks its feed
	// and log; slow is log's slowLog, whose appends take a while and which
	// remembers the durable seq.
	check := func(t *testing.T, log events.Log, slow *slowLog) events.SessionMeta {
		t.Helper()
		var mu sync.Mutex
		var got []uint64
		early := 0
		meta := run(t, 32, log, func(seq uint64) {
			if seq == 0 { // the run ended: wait until the feed carried the whole log
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
					mu.Lock()
					n := len(got)
					mu.Unlock()
					if uint64(n) >= slow.durable.Load() {
						return
					}
				}
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if seq > slow.durable.Load() {
				early++
			}
			got = append(got, seq)
		})
		mu.Lock()
		defer mu.Unlock()
		if early > 0 {
			t.Errorf("%d events were published before their batch was durable", early)
		}
		if uint64(len(got)) != meta.LastSeq {
			seen := map[uint64]bool{}
			for _, s := range got {
				seen[s] = true
			}
			var missing []uint64
			for s := uint64(1); s <= meta.LastSeq; s++ {
				if !seen[s] {
					missing = append(missing, s)
				}
			}
			t.Fatalf("the feed carried %d events, the log has %d; missing %v", len(got), meta.LastSeq, missing[:min(len(missing), 20)])
		}
		for i, seq := range got {
			if seq != uint64(i+1) {
				t.Fatalf("feed event %d has seq %d", i, seq)
			}
		}
		if slow.appends.Load() < 40 {
			t.Fatalf("only %d appends: the test did not run many batches", slow.appends.Load())
		}
		if n := slow.early.Load(); n > 0 {
			t.Errorf("%d checkpoints were stored before their batch was durable", n)
		}
		r := driver.Verify(context.Background(), log, meta)
		if !r.OK || r.Checkpoints < 2 {
			t.Fatalf("verify: %+v", r)
		}
		return meta
	}
	slow := &slowLog{Log: memlog.New()}
	var meta events.SessionMeta
	t.Run("one batch in flight", func(t *testing.T) { meta = check(t, slow, slow) })
	pipelined := newSlowPipelinedLog(memlog.New())
	t.Run("two batches in flight", func(t *testing.T) {
		pmeta := check(t, pipelined, &pipelined.slowLog)
		if pmeta.LastSeq != meta.LastSeq || pmeta.StateHash != meta.StateHash {
			t.Fatalf("one in flight: %d events, %s; two: %d events, %s", meta.LastSeq, meta.StateHash, pmeta.LastSeq, pmeta.StateHash)
		}
		pipelined.mu.Lock()
		defer pipelined.mu.Unlock()
		if pipelined.maxPending != 2 {
			t.Fatalf("at most %d batches were ordered and not yet durable at once, want 2 (the driver's depth)", pipelined.maxPending)
		}
		if pipelined.unordered > 0 {
			t.Fatalf("%d checkpoints were stored before their batch was ordered", pipelined.unordered)
		}
	})
	if t.Failed() {
		return
	}

	// One event per batch (every append waited for) writes the same log.
	one := memlog.New()
	meta1 := run(t, 1, one, nil)
	if meta1.LastSeq != meta.LastSeq || meta1.StateHash != meta.StateHash {
		t.Fatalf("batches of 32: %d events, %s; of 1: %d events, %s", meta.LastSeq, meta.StateHash, meta1.LastSeq, meta1.StateHash)
	}
	var a, b []byte
	for ev, err := range slow.Read(context.Background(), meta.ID, 1) {
		if err != nil {
			t.Fatal(err)
		}
		a = events.AppendEncode(a, &ev)
	}
	for ev, err := range one.Read(context.Background(), meta1.ID, 1) {
		if err != nil {
			t.Fatal(err)
		}
		b = events.AppendEncode(b, &ev)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("the logs of batches of 32 and of 1 differ")
	}
}

// slowReplica takes a while to replicate and remembers the last seq it holds.
type slowReplica struct{ replicated atomic.Uint64 }

func (r *slowReplica) Replicate(_ context.Context, _ string, batch []events.Event) error {
	time.Sleep(3 * time.Millisecond)
	r.replicated.Store(batch[len(batch)-1].Seq)
	return nil
}

// The history responder serves only what has landed: an event stored in
// the local log but not yet replicated is shown to no one.
func TestHistoryStopsAtReplicated(t *testing.T) {
	w, src := simtest.DeskWorld(t, 300)
	bus := startBus(t)
	conn := connect(t, bus, "driver")
	reader := connect(t, bus, "reader")
	const id = "01J0000000000000000000HIST"
	defer answerWatcher(t, conn, id).Unsubscribe()

	replica := &slowReplica{}
	done := make(chan struct{})
	var asked, ahead, served atomic.Int64
	go func() {
		req, _ := json.Marshal(wire.HistoryRequest{From: 1, Limit: wire.MaxHistoryPage})
		for {
			select {
			case <-done:
				return
			default:
			}
			msg, err := reader.Request(wire.HistorySubject(id), req, time.Second)
			if err != nil {
				continue // not serving yet, or already gone
			}
			held := replica.replicated.Load() // read after the answer: it only grows
			var resp wire.HistoryResponse
			if err := json.Unmarshal(msg.Data, &resp); err != nil || resp.Error != "" {
				continue
			}
			asked.Add(1)
			if resp.Last > held {
				ahead.Add(1)
			}
			for _, ev := range resp.Events {
				if ev.Seq > held {
					ahead.Add(1)
				}
			}
			served.Add(int64(len(resp.Events)))
		}
	}()
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: 5, Session: id})
	if err != nil {
		t.Fatal(err)
	}
	d := driver.New(driver.Config{Log: memlog.New(), Conn: conn, MaxBatch: 16, Replica: replica})
	meta, err := d.Run(context.Background(), events.SessionMeta{ID: id, World: w.Name, WorldHash: w.Hash, Seed: 5}, e)
	close(done)
	if err != nil {
		t.Fatal(err)
	}
	if asked.Load() < 3 || served.Load() == 0 {
		t.Fatalf("history asked %d times, %d events served: the test saw too little (%d events in the session)", asked.Load(), served.Load(), meta.LastSeq)
	}
	if ahead.Load() > 0 {
		t.Fatalf("history served %d answers or events beyond what the replica held", ahead.Load())
	}
}

// panicLog panics in the append that would store seq past.
type panicLog struct {
	events.Log
	past uint64
}

func (l *panicLog) Append(ctx context.Context, session string, last uint64, batch []events.Event) error {
	if batch[len(batch)-1].Seq > l.past {
		panic("a defect in the log")
	}
	return l.Log.Append(ctx, session, last, batch)
}

// A panic in the append, which runs on its own goroutine while the engine
// goes on, ends the run with an error instead of the process.
func TestPanicInAppendIsTheRunsError(t *testing.T) {
	w, src := simtest.DeskWorld(t, 300)
	bus := startBus(t)
	conn := connect(t, bus, "driver")
	const id = "01J0000000000000000000PANC"
	defer answerWatcher(t, conn, id).Unsubscribe()
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: 5, Session: id})
	if err != nil {
		t.Fatal(err)
	}
	log := &panicLog{Log: memlog.New(), past: 500}
	d := driver.New(driver.Config{Log: log, Conn: conn, MaxBatch: 64})
	meta, err := d.Run(context.Background(), events.SessionMeta{ID: id, World: w.Name, WorldHash: w.Hash, Seed: 5}, e)
	if err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("run ended with %v, want the append's panic as its error", err)
	}
	if last, _ := log.LastSeq(context.Background(), id); meta.Status != events.StatusFailed || meta.LastSeq != last || last == 0 || last > 500 {
		t.Fatalf("recorded %s at seq %d; the log holds %d", meta.Status, meta.LastSeq, last)
	}
}

// cpFailLog refuses every checkpoint.
type cpFailLog struct{ events.Log }

func (cpFailLog) PutCheckpoint(context.Context, string, events.Checkpoint) error {
	return errors.New("no room for checkpoints")
}

// A checkpoint that cannot be stored ends the run with its error, and the
// session's last seq still counts the batch it stood at, which is durable.
func TestFailedCheckpointKeepsItsBatch(t *testing.T) {
	w, src := simtest.DeskWorld(t, 300)
	bus := startBus(t)
	conn := connect(t, bus, "driver")
	const id = "01J0000000000000000000CKPT"
	defer answerWatcher(t, conn, id).Unsubscribe()
	for _, c := range []struct {
		name string
		log  events.Log
	}{
		{"one batch in flight", cpFailLog{memlog.New()}},
		{"two batches in flight", cpFailPipelined{cpFailLog{newSlowPipelinedLog(memlog.New())}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, err := sim.New(sim.Config{World: w, Source: src, Seed: 5, Session: id})
			if err != nil {
				t.Fatal(err)
			}
			d := driver.New(driver.Config{Log: c.log, Conn: conn, MaxBatch: 64, CheckpointEvery: 200})
			meta, err := d.Run(context.Background(), events.SessionMeta{ID: id, World: w.Name, WorldHash: w.Hash, Seed: 5}, e)
			if err == nil || !strings.Contains(err.Error(), "no room for checkpoints") {
				t.Fatalf("run ended with %v, want the checkpoint's error", err)
			}
			last, _ := c.log.LastSeq(context.Background(), id)
			if meta.Status != events.StatusFailed || meta.LastSeq != last || last < 200 {
				t.Fatalf("recorded %s at seq %d; the log holds %d", meta.Status, meta.LastSeq, last)
			}
		})
	}
}

// cpFailPipelined is a cpFailLog over a log that takes two batches at once.
type cpFailPipelined struct{ cpFailLog }

func (l cpFailPipelined) AppendPipelined(ctx context.Context, session string, last uint64, batch []events.Event) (func() error, error) {
	return l.Log.(events.Pipeliner).AppendPipelined(ctx, session, last, batch)
}

// The driver's MaxEvents is the session's budget, also for a session it
// continues: a run that spends it ends "event_limit" with its log within
// the budget and verified, and Continue gives a rebuilt engine the budget.
func TestMaxEventsEndsTheSession(t *testing.T) {
	const id, max = "01J0000000000000000000BUDG", 700
	w, src, e, conn, log := deskSession(t, id, 5000)
	d := driver.New(driver.Config{Log: log, Conn: conn, MaxEvents: max, CheckpointEvery: 100})
	meta, err := d.Run(context.Background(), events.SessionMeta{ID: id, World: w.Name, WorldHash: w.Hash, Seed: 5}, e)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Status != events.StatusFinished || meta.LastSeq > max || meta.LastSeq < max-20 || e.State().EndReason != sim.EndEventLimit {
		t.Fatalf("status %s, %d events, ended %q; want finished, at most %d events, ended %q", meta.Status, meta.LastSeq, e.State().EndReason, max, sim.EndEventLimit)
	}
	if r := driver.Verify(context.Background(), log, meta); !r.OK {
		t.Fatalf("verify: %+v", r)
	}

	// A bad budget is refused before anything is written.
	e2, _ := sim.New(sim.Config{World: w, Source: src, Seed: 5, Session: id + "X"})
	if _, err := driver.New(driver.Config{Log: log, Conn: conn, MaxEvents: 1}).Run(context.Background(), events.SessionMeta{ID: id + "X"}, e2); err == nil {
		t.Fatal("MaxEvents 1: no error")
	}

	// A fork of it at event 300, rebuilt (with the default budget) and
	// continued: the driver's budget holds for it too.
	fork := events.SessionMeta{ID: id + "F", World: w.Name, WorldHash: w.Hash, Seed: 5, Parent: id, ForkSeq: 300, Status: events.StatusInterrupted}
	if err := log.CreateSession(context.Background(), fork); err != nil {
		t.Fatal(err)
	}
	c, _, err := driver.Load(context.Background(), log, fork.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer answerWatcher(t, conn, fork.ID).Unsubscribe()
	fm, err := d.Continue(context.Background(), fork, c)
	if err != nil {
		t.Fatal(err)
	}
	if fm.LastSeq > max || fm.LastSeq < max-20 || c.State().EndReason != sim.EndEventLimit {
		t.Fatalf("continued from 300: %d events, ended %q; want at most %d, ended %q", fm.LastSeq, c.State().EndReason, max, sim.EndEventLimit)
	}
}

// checkpointReplica is a slowReplica that also keeps checkpoints, and
// fails to when fail is set.
type checkpointReplica struct {
	slowReplica
	fail    bool
	mu      sync.Mutex
	given   []uint64 // the checkpoints' seqs
	beyond  int      // checkpoints given past the events replicated
	written int      // checkpoints kept
}

func (r *checkpointReplica) ReplicateCheckpoint(_ context.Context, _ string, cp events.Checkpoint) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.given = append(r.given, cp.Seq)
	if cp.Seq > r.replicated.Load() {
		r.beyond++
	}
	if r.fail {
		return errors.New("the object store is down")
	}
	r.written++
	return nil
}

// A replica that keeps checkpoints is given each one after the batch it
// ends is replicated; one that fails to keep them does not stop the run,
// whose log is the same.
func TestCheckpointsAreReplicatedAfterTheirBatch(t *testing.T) {
	w, src := simtest.DeskWorld(t, 300)
	bus := startBus(t)
	conn := connect(t, bus, "driver")
	var hashes []string
	for _, fail := range []bool{false, true} {
		id := "01J0000000000000000000CPR" + map[bool]string{false: "A", true: "B"}[fail]
		sub := answerWatcher(t, conn, id)
		replica := &checkpointReplica{fail: fail}
		e, err := sim.New(sim.Config{World: w, Source: src, Seed: 5, Session: id})
		if err != nil {
			t.Fatal(err)
		}
		log := memlog.New()
		d := driver.New(driver.Config{Log: log, Conn: conn, MaxBatch: 16, CheckpointEvery: 100, Replica: replica})
		meta, err := d.Run(context.Background(), events.SessionMeta{ID: id, World: w.Name, WorldHash: w.Hash, Seed: 5}, e)
		sub.Unsubscribe()
		if err != nil {
			t.Fatalf("replica failing: %v: %v", fail, err)
		}
		cps, err := log.Checkpoints(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		replica.mu.Lock()
		if len(cps) == 0 || len(replica.given) != len(cps) || replica.beyond > 0 || replica.written != map[bool]int{false: len(cps), true: 0}[fail] {
			t.Errorf("replica failing: %v: %d checkpoints stored, %d given to the replica (%d past its events), %d kept", fail, len(cps), len(replica.given), replica.beyond, replica.written)
		}
		replica.mu.Unlock()
		hashes = append(hashes, meta.StateHash)
	}
	if hashes[0] != hashes[1] {
		t.Fatalf("state hashes %v: a failing checkpoint replica changed the run", hashes)
	}
}

// deskSession is the engine of session id of the bench desk cut to
// tickets tickets (seed 5), with its world and source, the driver's
// connection to a bus of its own (watched for answers) and an in-memory log.
func deskSession(t *testing.T, id string, tickets int) (*worlds.World, []byte, *sim.Engine, *nats.Conn, *memlog.Log) {
	t.Helper()
	w, src := simtest.DeskWorld(t, tickets)
	conn := connect(t, startBus(t), "driver")
	watch := answerWatcher(t, conn, id)
	t.Cleanup(func() { _ = watch.Unsubscribe() })
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: 5, Session: id})
	if err != nil {
		t.Fatal(err)
	}
	return w, src, e, conn, memlog.New()
}

// cancelAtEnd is a driver.Observer that cancels the run's context once a
// batch holding session.ended is durable: a stop that comes just as the
// session ends.
type cancelAtEnd struct{ cancel context.CancelFunc }

func (c cancelAtEnd) Appended(_ string, batch []events.Event, _ time.Duration) {
	if batch[len(batch)-1].Type == payload.EvSessionEnded {
		c.cancel()
	}
}
func (cancelAtEnd) Turn(string, string, time.Duration, bool) {}

// A session stopped once its end is durable is finished, with no error:
// its log is whole (it was recorded interrupted, and run exited 1 with no
// scorecard for a complete episode).
func TestStopAtTheEndFinishes(t *testing.T) {
	const id = "01J0000000000000000000STEN"
	w, _, e, conn, log := deskSession(t, id, 300)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := driver.New(driver.Config{Log: log, Conn: conn, Observer: cancelAtEnd{cancel}})
	meta, err := d.Run(ctx, events.SessionMeta{ID: id, World: w.Name, WorldHash: w.Hash, Seed: 5}, e)
	if err != nil || meta.Status != events.StatusFinished {
		t.Fatalf("stopped at its end: %s, %v; want finished", meta.Status, err)
	}
	stored, err := log.Session(context.Background(), id)
	if err != nil || stored.Status != events.StatusFinished || stored.StateHash == "" {
		t.Fatalf("recorded %+v, %v; want finished with its hash", stored, err)
	}
	if r := driver.Verify(context.Background(), log, stored); !r.OK {
		t.Fatalf("verify: %+v", r)
	}
}

// A session stopped before its first batch is stored stays out of the log
// (it was recorded interrupted and empty: resume, replay and score could
// not read it, and verify took it for damage).
func TestStopBeforeTheFirstBatchStoresNothing(t *testing.T) {
	const id = "01J0000000000000000000STBF"
	w, _, e, conn, log := deskSession(t, id, 300)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	meta, err := driver.New(driver.Config{Log: log, Conn: conn}).Run(ctx, events.SessionMeta{ID: id, World: w.Name, WorldHash: w.Hash, Seed: 5}, e)
	if !errors.Is(err, context.Canceled) || meta.Status != events.StatusInterrupted {
		t.Fatalf("stopped at once: %s, %v; want interrupted, context canceled", meta.Status, err)
	}
	if m, err := log.Session(context.Background(), id); !errors.Is(err, events.ErrNoSession) {
		t.Fatalf("the log holds %+v, %v; want no such session", m, err)
	}
}

// A session stored before a check was added to the world format (here a
// budget with a fraction, which the YAML library read as its whole part)
// still verifies: its recorded world is read as it was then.
func TestRecordedWorldReadsAsItWasThen(t *testing.T) {
	_, src := simtest.DeskWorld(t, 300)
	src = bytes.Replace(src, []byte("budget: 0}"), []byte("budget: 0.5}"), 1)
	if _, err := worlds.Load("bench.yaml", src); err == nil {
		t.Fatal("a budget of 0.5 loads today; the test needs a world that does not")
	}
	w, err := worlds.LoadLimited("bench.yaml", src, worlds.Limits{Recorded: true})
	if err != nil {
		t.Fatal(err)
	}
	const id = "01J0000000000000000000RECW"
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: 5, Session: id})
	if err != nil {
		t.Fatal(err)
	}
	conn := connect(t, startBus(t), "driver")
	defer answerWatcher(t, conn, id).Unsubscribe()
	log := memlog.New()
	meta, err := driver.New(driver.Config{Log: log, Conn: conn}).Run(context.Background(), events.SessionMeta{ID: id, World: w.Name, WorldHash: w.Hash, Seed: 5}, e)
	if err != nil || meta.Status != events.StatusFinished {
		t.Fatalf("run: %s, %v", meta.Status, err)
	}
	if r := driver.Verify(context.Background(), log, meta); !r.OK {
		t.Fatalf("a session of a world recorded before the check does not verify: %+v", r)
	}
}
