package server

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/sim/driver"
)

// heldLog is a log whose CreateSession waits for release (or its ctx): a
// new session's driver is held at its first write, as a loaded machine
// can hold it, so that a Create that does not wait for its session's
// first batch returns before anything of the session is in the log.
type heldLog struct {
	events.Log
	release chan struct{}
}

func (l heldLog) CreateSession(ctx context.Context, m events.SessionMeta) error {
	select {
	case <-l.release:
	case <-ctx.Done():
	}
	return l.Log.CreateSession(ctx, m)
}

// TestCreatedSessionIsResumable: the session a Create returned has its
// first events (session.started first) in the log when Create returns, so
// that pausing it and closing the service at once leaves a session that
// a restarted service resumes and that runs to its end.
func TestCreatedSessionIsResumable(t *testing.T) {
	bus := mustBus(t)
	log := memlog.New()
	held := heldLog{Log: log, release: make(chan struct{})}
	stateFile := filepath.Join(t.TempDir(), "serve-state.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	svc, err := New(Config{Log: held, Bus: bus, Logger: hclog.NewNullLogger(), StateFile: stateFile})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()

	type result struct {
		reply wire.CreateReply
		err   error
		last  uint64 // the session's last seq in the log as Create returned
	}
	created := make(chan result, 1)
	go func() {
		r, err := svc.Create(ctx, wire.CreateRequest{World: "support-desk", Seed: 20, Agents: "greedy"})
		var last uint64
		if err == nil {
			last, _ = log.LastSeq(ctx, r.Session)
		}
		created <- result{r, err, last}
	}()
	// The driver's first write is held until Create has returned, or for
	// a while if Create waits for it (as it must): either way the check
	// above sees the log as Create left it. The wait only delays a right
	// Create; a Create that returns early is seen whatever it lasts.
	var res result
	select {
	case res = <-created:
		close(held.release)
	case <-time.After(200 * time.Millisecond):
		close(held.release)
		res = <-created
	}
	if res.err != nil {
		t.Fatal(res.err)
	}
	id := res.reply.Session
	if res.last == 0 {
		t.Errorf("Create returned session %s with nothing of it in the log; want its first batch (session.started first) durable", id)
	}

	// Paused and the service closed at once, as savedSessions does.
	op, err := bus.Connect("operator")
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	control := func(op2 wire.ControlOp) {
		t.Helper()
		req, _ := json.Marshal(wire.ControlRequest{Op: op2})
		if _, err := op.Request(wire.ControlSubject(id), req, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	control(wire.OpPause)
	svc.Close()
	if saved := svc.Saved(); len(saved) != 1 || saved[0] != id {
		t.Fatalf("the state file keeps %v, want [%s]", saved, id)
	}

	again, err := New(Config{Log: log, Bus: bus, Logger: hclog.NewNullLogger(), StateFile: stateFile})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	resumed, err := again.ResumeSaved(ctx)
	if err != nil || len(resumed) != 1 || resumed[0] != id {
		t.Fatalf("resumed %v, %v; want [%s]", resumed, err, id)
	}
	control(wire.OpStart)
	m, err := again.Wait(ctx, id)
	if err != nil || m.Status != events.StatusFinished {
		t.Fatalf("the resumed session: %s, %v; want finished", m.Status, err)
	}
	if r := driver.Verify(ctx, log, m); !r.OK {
		t.Fatalf("the resumed session does not verify: %v", r.Problems)
	}
}

// TestCloseRacingCreate: a service closed while a Create is making its
// session's first batch lets that batch finish; the Create either is
// refused (shutting down) or returns a session that a restarted service
// resumes.
func TestCloseRacingCreate(t *testing.T) {
	bus := mustBus(t)
	log := memlog.New()
	held := heldLog{Log: log, release: make(chan struct{})}
	stateFile := filepath.Join(t.TempDir(), "serve-state.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	svc, err := New(Config{Log: held, Bus: bus, Logger: hclog.NewNullLogger(), StateFile: stateFile})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		reply wire.CreateReply
		err   error
	}
	created := make(chan result, 1)
	go func() {
		r, err := svc.Create(ctx, wire.CreateRequest{World: "support-desk", Seed: 21, Agents: "greedy"})
		created <- result{r, err}
	}()
	// Closed once the session is registered (its driver is held at its
	// first write, or Create already returned it).
	for {
		svc.mu.Lock()
		n := len(svc.sessions)
		svc.mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	closed := make(chan struct{})
	go func() {
		svc.Close()
		close(closed)
	}()
	<-svc.stopping
	close(held.release)
	res := <-created
	<-closed
	if res.err != nil {
		t.Fatalf("Create: %v; want the session (it was admitted before the service closed)", res.err)
	}
	id := res.reply.Session
	again, err := New(Config{Log: log, Bus: bus, Logger: hclog.NewNullLogger(), StateFile: stateFile})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	resumed, err := again.ResumeSaved(ctx)
	if err != nil || len(resumed) != 1 || resumed[0] != id {
		t.Fatalf("resumed %v, %v; want [%s]", resumed, err, id)
	}
	m, err := again.Wait(ctx, id)
	if err != nil || m.Status != events.StatusFinished {
		t.Fatalf("the resumed session: %s, %v; want finished", m.Status, err)
	}
	if r := driver.Verify(ctx, log, m); !r.OK {
		t.Fatalf("the resumed session does not verify: %v", r.Problems)
	}
}

// TestWaitingSessionDiscardedByShutdown: a session created with wait and
// never started has nothing in the log, so a shutdown cannot leave it for
// a restart: it is discarded and said so (Discarded), not kept in the
// state file as one the next serve resumes (a restart dropped it
// silently, after the stop had promised to resume it). A session created
// with wait and started is kept as before.
func TestWaitingSessionDiscardedByShutdown(t *testing.T) {
	bus := mustBus(t)
	log := memlog.New()
	stateFile := filepath.Join(t.TempDir(), "serve-state.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	svc, err := New(Config{Log: log, Bus: bus, Logger: hclog.NewNullLogger(), StateFile: stateFile})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	waiting, err := svc.Create(ctx, wire.CreateRequest{World: "startup", Seed: 7, Agents: "greedy,bob=remote", Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	started, err := svc.Create(ctx, wire.CreateRequest{World: "support-desk", Seed: 20, Agents: "greedy", Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	control := operatorControl(t, bus)
	control(started.Session, wire.OpStart)
	control(started.Session, wire.OpPause)
	waitFor := time.Now().Add(time.Minute)
	for last, _ := log.LastSeq(ctx, started.Session); last == 0; last, _ = log.LastSeq(ctx, started.Session) {
		if time.Now().After(waitFor) {
			t.Fatal("the started session logged nothing")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := svc.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if saved := svc.Saved(); len(saved) != 1 || saved[0] != started.Session {
		t.Fatalf("the state file keeps %v; want only the started session %s", saved, started.Session)
	}
	if gone := svc.Discarded(); len(gone) != 1 || gone[0] != waiting.Session {
		t.Fatalf("discarded %v; want the session never started, %s", gone, waiting.Session)
	}
}
