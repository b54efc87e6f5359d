package driver_test

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

// foundLog is a memlog that counts how sessions are created, and can make
// founding fail.
type foundLog struct {
	*memlog.Log
	creates, founds atomic.Int64
	failFound       error
}

func (l *foundLog) CreateSession(ctx context.Context, m events.SessionMeta) error {
	l.creates.Add(1)
	return l.Log.CreateSession(ctx, m)
}

func (l *foundLog) CreateSessionWith(ctx context.Context, m events.SessionMeta, batch []events.Event) error {
	l.founds.Add(1)
	if l.failFound != nil {
		return l.failFound
	}
	return l.Log.CreateSessionWith(ctx, m, batch)
}

// parent is a desk session run to its end on a foundLog, with the driver,
// bus connection and world that ran it.
type parent struct {
	log  *foundLog
	d    *driver.Driver
	conn *nats.Conn
	w    *worlds.World
	meta events.SessionMeta
}

// runParent runs session id of the desk world cut to n tickets, seed 5,
// with a driver of cfg (its Log and Conn set here).
func runParent(t *testing.T, n int, id string, cfg driver.Config) parent {
	t.Helper()
	w, src := simtest.DeskWorld(t, n)
	cfg.Conn = connect(t, startBus(t), "driver")
	log := &foundLog{Log: memlog.New()}
	cfg.Log = log
	d := driver.New(cfg)
	sub := answerWatcher(t, cfg.Conn, id)
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: 5, Session: id})
	if err != nil {
		t.Fatal(err)
	}
	m, err := d.Run(context.Background(), events.SessionMeta{ID: id, World: w.Name, WorldHash: w.Hash, Seed: 5}, e)
	if err != nil {
		t.Fatal(err)
	}
	return parent{log: log, d: d, conn: cfg.Conn, w: w, meta: m}
}

// same reports whether two runs' events say the same things (their IDs,
// drawn from the session, may differ).
func same(a, b []events.Event) bool {
	return slices.EqualFunc(a, b, func(x, y events.Event) bool {
		return x.Seq == y.Seq && x.Time == y.Time && x.Type == y.Type && x.Actor == y.Actor && x.Cause == y.Cause &&
			string(x.Payload) == string(y.Payload)
	})
}

func readAll(t *testing.T, l events.Log, id string, from uint64) []events.Event {
	t.Helper()
	var evs []events.Event
	for ev, err := range l.Read(context.Background(), id, from) {
		if err != nil {
			t.Fatalf("Read(%s, %d): %v", id, from, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// A new session is founded with its first batch (one write, no
// CreateSession), and a fork that goes on is founded the same way from an
// engine built on its parent's prefix: it continues exactly as the old way
// (CreateSession, Load, Continue) does, verifies, and leaves its parent
// alone.
func TestRunAndForkFoundTheirSessions(t *testing.T) {
	const id = "01J0000000000000000000FNDP"
	f := runParent(t, 300, id, driver.Config{MaxBatch: 64, CheckpointEvery: 100})
	ctx, log, d, conn, w, pm := context.Background(), f.log, f.d, f.conn, f.w, f.meta
	if got, want := [2]int64{log.creates.Load(), log.founds.Load()}, [2]int64{0, 1}; got != want {
		t.Fatalf("Run: (CreateSession, CreateSessionWith) calls: got %v, want %v", got, want)
	}
	parent := readAll(t, log, id, 1)
	if len(parent) < 200 || parent[0].Type != "session.started" || pm.Status != events.StatusFinished || pm.LastSeq != uint64(len(parent)) {
		t.Fatalf("Run: %d events from %q, status %s, last seq %d", len(parent), parent[0].Type, pm.Status, pm.LastSeq)
	}

	const at = 150
	fork := events.SessionMeta{ID: id + "F", World: w.Name, WorldHash: w.Hash, Seed: 5, Parent: id, ForkSeq: at, Status: events.StatusInterrupted}
	defer answerWatcher(t, conn, fork.ID).Unsubscribe()
	fe, _, err := driver.LoadFork(ctx, log, fork)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := log.Session(ctx, fork.ID); !errors.Is(err, events.ErrNoSession) {
		t.Fatalf("Session(fork) before its first batch: %v, want ErrNoSession", err)
	}
	fm, err := d.Fork(ctx, fork, fe)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := [2]int64{log.creates.Load(), log.founds.Load()}, [2]int64{0, 2}; got != want {
		t.Fatalf("Fork: (CreateSession, CreateSessionWith) calls: got %v, want %v", got, want)
	}
	if stored, err := log.Session(ctx, fork.ID); err != nil || stored.Parent != id || stored.ForkSeq != at || stored.Status != events.StatusFinished {
		t.Fatalf("the fork's metadata: %+v, %v", stored, err)
	}
	if r := driver.Verify(ctx, log, fm); !r.OK {
		t.Fatalf("verify the fork: %+v", r)
	}

	// The old way, on the same log under another ID.
	old := fork
	old.ID = id + "O"
	defer answerWatcher(t, conn, old.ID).Unsubscribe()
	if err := log.Log.CreateSession(ctx, old); err != nil {
		t.Fatal(err)
	}
	oe, _, err := driver.Load(ctx, log, old.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Continue(ctx, old, oe); err != nil {
		t.Fatal(err)
	}
	founded, continued := readAll(t, log, fork.ID, at+1), readAll(t, log, old.ID, at+1)
	if len(founded) == 0 || !same(founded, continued) {
		t.Fatalf("the founded fork made %d events after seq %d, the created and continued one %d, or they differ", len(founded), at, len(continued))
	}
	if got := readAll(t, log, id, 1); !same(got, parent) {
		t.Fatal("the parent changed")
	}
}

// A fork whose founding write fails is still recorded, failed and without
// events of its own, so that nobody is told of a session that is not
// there; a fork at its parent's end, which makes no event, is created when
// it ends.
func TestForkFoundingFailsOrHasNothingToFound(t *testing.T) {
	const id = "01J0000000000000000000FNDQ"
	f := runParent(t, 100, id, driver.Config{})
	ctx, log, d, conn, w, pm := context.Background(), f.log, f.d, f.conn, f.w, f.meta

	t.Run("founding fails", func(t *testing.T) {
		fork := events.SessionMeta{ID: id + "X", World: w.Name, WorldHash: w.Hash, Seed: 5, Parent: id, ForkSeq: 40, Status: events.StatusInterrupted}
		defer answerWatcher(t, conn, fork.ID).Unsubscribe()
		fe, _, err := driver.LoadFork(ctx, log, fork)
		if err != nil {
			t.Fatal(err)
		}
		log.failFound = errors.New("the disk is on fire")
		defer func() { log.failFound = nil }()
		fm, err := d.Fork(ctx, fork, fe)
		if err == nil || !errors.Is(err, log.failFound) {
			t.Fatalf("Fork: %v, want the founding's error", err)
		}
		stored, serr := log.Session(ctx, fork.ID)
		if serr != nil || stored.Status != events.StatusFailed || fm.Status != events.StatusFailed || stored.LastSeq != 40 {
			t.Fatalf("the fork after a failed founding: %+v, %v (returned %s)", stored, serr, fm.Status)
		}
		if last, err := log.LastSeq(ctx, fork.ID); err != nil || last != 40 {
			t.Fatalf("LastSeq(fork): %d, %v; want 40, its fork point", last, err)
		}
	})

	t.Run("nothing to found", func(t *testing.T) {
		fork := events.SessionMeta{ID: id + "E", World: w.Name, WorldHash: w.Hash, Seed: 5, Parent: id, ForkSeq: pm.LastSeq, Status: events.StatusInterrupted}
		fe, _, err := driver.LoadFork(ctx, log, fork)
		if err != nil {
			t.Fatal(err)
		}
		creates := log.creates.Load()
		fm, err := d.Fork(ctx, fork, fe)
		if err != nil {
			t.Fatal(err)
		}
		stored, serr := log.Session(ctx, fork.ID)
		if serr != nil || stored.Status != events.StatusFinished || fm.LastSeq != pm.LastSeq || log.creates.Load() != creates+1 {
			t.Fatalf("a fork at its parent's end: %+v, %v; returned %+v", stored, serr, fm)
		}
	})

	if _, _, err := driver.LoadFork(ctx, log, events.SessionMeta{ID: "notafork"}); err == nil {
		t.Fatal("LoadFork of a session with no parent: no error")
	}
}
