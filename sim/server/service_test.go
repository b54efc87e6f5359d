package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/worlds"
)

// mustService starts a Service on bus and log, closed when the test ends.
func mustService(tb testing.TB, bus *natsserver.Server, log events.Log) *Service {
	tb.Helper()
	return mustServiceWith(tb, Config{Log: log, Bus: bus})
}

// mustServiceWith starts a Service of cfg (silent unless it names a
// logger), closed when the test ends.
func mustServiceWith(tb testing.TB, cfg Config) *Service {
	tb.Helper()
	if cfg.Logger == nil {
		cfg.Logger = hclog.NewNullLogger()
	}
	svc, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { svc.Close() })
	return svc
}

// mustBus starts an in-process NATS server that the test shuts down.
func mustBus(tb testing.TB) *natsserver.Server {
	tb.Helper()
	bus, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(bus.Shutdown)
	return bus
}

// A session that panics (here its gate, after a few steps) is recorded
// failed with its last durable seq; the service and its other sessions go
// on, and a session created afterwards runs to its end.
func TestPanickingSessionFailsAlone(t *testing.T) {
	bus := mustBus(t)
	log := memlog.New()
	var mu sync.Mutex
	poisoned := map[string]bool{}
	steps := map[string]int{}
	hooks := Hooks{
		Starting: func(_ context.Context, l Launched) error {
			mu.Lock()
			defer mu.Unlock()
			poisoned[l.Meta.ID] = l.Meta.Seed == 13
			return nil
		},
		Gate: func(_ context.Context, id string) error {
			mu.Lock()
			steps[id]++
			bad := poisoned[id] && steps[id] > 20
			mu.Unlock()
			if bad {
				panic("a defect in session " + id)
			}
			return nil
		},
	}
	svc, err := New(Config{Log: log, Bus: bus, Logger: hclog.NewNullLogger(), Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	create := func(seed uint64) string {
		r, err := svc.Create(ctx, wire.CreateRequest{World: "support-desk", Seed: seed, Agents: "greedy"})
		if err != nil {
			t.Fatal(err)
		}
		return r.Session
	}
	bad, good := create(13), create(14)
	if _, err := svc.Wait(ctx, bad); !errors.Is(err, ErrPanicked) {
		t.Fatalf("the panicking session ended with %v, want ErrPanicked", err)
	}
	meta, err := log.Session(ctx, bad)
	if err != nil {
		t.Fatal(err)
	}
	last, _ := log.LastSeq(ctx, bad)
	if meta.Status != events.StatusFailed || meta.LastSeq != last || last == 0 || meta.Reason != "the session panicked: a defect in session "+bad {
		t.Fatalf("the panicking session is recorded %s at seq %d (%q); the log holds %d events", meta.Status, meta.LastSeq, meta.Reason, last)
	}
	for _, id := range []string{good, create(15)} {
		m, err := svc.Wait(ctx, id)
		if err != nil || m.Status != events.StatusFinished {
			t.Fatalf("session %s: %s, %v; want finished", id, m.Status, err)
		}
		if r := driver.Verify(ctx, log, m); !r.OK {
			t.Fatalf("session %s does not verify: %v", id, r.Problems)
		}
	}
}

// A session that panics before anything of it was stored (its first
// batch, which spans a whole short session of built-in seats) is recorded
// failed, empty, with why: it was lost, gone from the store's listing and,
// after a restart, from every listing.
func TestSessionPanickingBeforeItsFirstBatchIsRecorded(t *testing.T) {
	log := memlog.New()
	svc := mustService(t, mustBus(t), log)
	ctx := context.Background()
	meta := events.SessionMeta{ID: "01M00000000000000000000PAN", World: "startup", Seed: 3, Agents: map[string]string{"bob": "greedy"},
		Created: time.Now().UTC().Format(time.RFC3339), Status: events.StatusRunning}
	_, err := svc.guard(hclog.NewNullLogger(), meta, func() (events.SessionMeta, error) { panic("payload does not encode: +Inf") })
	if !errors.Is(err, ErrPanicked) {
		t.Fatalf("guard: %v, want ErrPanicked", err)
	}
	got, err := log.Session(ctx, meta.ID)
	if err != nil || got.Status != events.StatusFailed || got.LastSeq != 0 || got.Reason != "the session panicked: payload does not encode: +Inf" {
		t.Fatalf("recorded %+v, %v; want failed with no events, saying why", got, err)
	}
}

// operatorControl connects to bus as the operator and returns a function
// that sends a session a control message and fails the test on an error.
func operatorControl(t *testing.T, bus *natsserver.Server) func(id string, o wire.ControlOp) wire.ControlReply {
	t.Helper()
	op, err := bus.Connect("operator")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(op.Close)
	return func(id string, o wire.ControlOp) wire.ControlReply {
		t.Helper()
		req, _ := json.Marshal(wire.ControlRequest{Op: o})
		msg, err := op.Request(wire.ControlSubject(id), req, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var r wire.ControlReply
		if err := json.Unmarshal(msg.Data, &r); err != nil || r.Error != "" {
			t.Fatalf("%s: %s, %v", o, r.Error, err)
		}
		return r
	}
}

// A session held for its start (created with wait) and stopped before it
// is over: its status says interrupted, not created, though nothing of it
// is in the log (a client waiting for a status other than created or
// running waited until the gateway forgot it, then got 404).
func TestStopBeforeStartEndsTheSession(t *testing.T) {
	bus := mustBus(t)
	control := operatorControl(t, bus)
	svc := mustService(t, bus, memlog.New())
	r, err := svc.Create(context.Background(), wire.CreateRequest{World: "startup", Seed: 1, Agents: "greedy", Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	if st := control(r.Session, wire.OpStatus); st.Status != "created" {
		t.Fatalf("held for its start: %+v, want created", st)
	}
	if st := control(r.Session, wire.OpStop); st.Status != string(events.StatusInterrupted) {
		t.Fatalf("stop before the start answered %+v, want interrupted", st)
	}
	if st := svc.Status(r.Session); st.Status != string(events.StatusInterrupted) {
		t.Fatalf("status after the stop: %+v, want interrupted", st)
	}
}

// An operator's stop answers the session's status, interrupted, with no
// error: the session ended as asked (it said "context canceled", which the
// clients returned as the stop's error).
func TestStopAnswersNoError(t *testing.T) {
	bus := mustBus(t)
	control := operatorControl(t, bus) // fails on a reply's error
	svc := mustService(t, bus, memlog.New())
	r, err := svc.Create(context.Background(), wire.CreateRequest{World: "support-desk-bench", Load: 1, Seed: 3, Agents: "greedy"})
	if err != nil {
		t.Fatal(err)
	}
	// Stopped while it runs, a batch in flight.
	for st := control(r.Session, wire.OpStatus); st.Events < 20000 && st.Status != string(events.StatusFinished); st = control(r.Session, wire.OpStatus) {
		time.Sleep(time.Millisecond)
	}
	st := control(r.Session, wire.OpStop)
	if st.Status != string(events.StatusInterrupted) {
		t.Fatalf("stop answered %+v, want the session interrupted", st)
	}
	m, err := svc.Wait(context.Background(), r.Session)
	if m.Status != events.StatusInterrupted {
		t.Fatalf("the stopped session: %s, %v; want interrupted", m.Status, err)
	}
	// The answer is the log's: its last event and that event's time (the
	// engine had gone on past them, with the batch the stop cancelled).
	var last events.Event
	for ev, err := range svc.cfg.Log.Read(context.Background(), r.Session, m.LastSeq) {
		if err != nil {
			t.Fatal(err)
		}
		last = ev
	}
	if st.Events != m.LastSeq || last.Seq != m.LastSeq || st.Time != last.Time {
		t.Fatalf("stop answered events %d at time %d; the log ends with event %d at time %d", st.Events, st.Time, last.Seq, last.Time)
	}
	t.Logf("stopped at event %d, time %d", st.Events, st.Time)
}

// A session paused by its operator stays paused across a restart of the
// service: resumed from the state file, it waits until a start.
func TestPauseSurvivesRestart(t *testing.T) {
	bus := mustBus(t)
	log := memlog.New()
	stateFile := filepath.Join(t.TempDir(), "serve-state.json")
	control := operatorControl(t, bus)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	svc, err := New(Config{Log: log, Bus: bus, Logger: hclog.NewNullLogger(), StateFile: stateFile})
	if err != nil {
		t.Fatal(err)
	}
	r, err := svc.Create(ctx, wire.CreateRequest{World: "support-desk-bench", Load: 0.1, Seed: 3, Agents: "greedy"})
	if err != nil {
		t.Fatal(err)
	}
	id := r.Session
	control(id, wire.OpPause)
	svc.Close() // the restart: the session is interrupted and kept for ResumeSaved

	svc2, err := New(Config{Log: log, Bus: bus, Logger: hclog.NewNullLogger(), StateFile: stateFile})
	if err != nil {
		t.Fatal(err)
	}
	defer svc2.Close()
	if got, err := svc2.ResumeSaved(ctx); err != nil || len(got) != 1 || got[0] != id {
		t.Fatalf("resumed %v, %v; want [%s]", got, err, id)
	}
	if st := control(id, wire.OpStatus); st.Status != "paused" {
		t.Fatalf("resumed session is %q, want paused", st.Status)
	}
	before, _ := log.LastSeq(ctx, id)
	time.Sleep(300 * time.Millisecond)
	if after, _ := log.LastSeq(ctx, id); after != before {
		t.Fatalf("a paused session went on from seq %d to %d", before, after)
	}
	control(id, wire.OpStart)
	m, err := svc2.Wait(ctx, id)
	if err != nil || m.Status != events.StatusFinished {
		t.Fatalf("after start: %s, %v; want finished", m.Status, err)
	}
	if r := driver.Verify(ctx, log, m); !r.OK {
		t.Fatalf("verify: %v", r.Problems)
	}
}

// fullLog is a Log on a disk that fills to the last byte once full is
// set: every write fails with ENOSPC, reads go on.
type fullLog struct {
	events.Log
	full atomic.Bool
}

func (l *fullLog) Append(ctx context.Context, id string, last uint64, b []events.Event) error {
	if l.full.Load() {
		return fmt.Errorf("append: %w", syscall.ENOSPC)
	}
	if last >= 100 {
		l.full.Store(true)
	}
	return l.Log.Append(ctx, id, last, b)
}

func (l *fullLog) CreateSession(ctx context.Context, m events.SessionMeta) error {
	if l.full.Load() {
		return fmt.Errorf("create: %w", syscall.ENOSPC)
	}
	return l.Log.CreateSession(ctx, m)
}

func (l *fullLog) UpdateSession(ctx context.Context, m events.SessionMeta) error {
	if l.full.Load() {
		return fmt.Errorf("update: %w", syscall.ENOSPC)
	}
	return l.Log.UpdateSession(ctx, m)
}

// A session whose append meets a full disk, where even its end cannot be
// recorded, is listed as it ended (interrupted, at its last durable seq),
// not as the running session its stored metadata still says. A session
// created on the full disk, of which the store holds nothing, is listed
// too, interrupted at 0: Create gave out its id. Once the disk has room,
// the service records the end the store missed.
func TestListShowsEndTheStoreMissed(t *testing.T) {
	bus := mustBus(t)
	log := &fullLog{Log: memlog.New()}
	svc := mustService(t, bus, log)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := svc.Create(ctx, wire.CreateRequest{World: "support-desk", Seed: 3, Agents: "greedy"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := svc.Wait(ctx, r.Session)
	if !errors.Is(err, syscall.ENOSPC) || m.Status != events.StatusInterrupted {
		t.Fatalf("the session ended %s with %v; want interrupted by ENOSPC", m.Status, err)
	}
	if stored, _ := log.Session(ctx, r.Session); stored.Status != events.StatusRunning {
		t.Fatalf("precondition: the store records %s, want the running it could not update", stored.Status)
	}
	op, err := bus.Connect("operator")
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	msg, err := op.RequestWithContext(ctx, wire.ListSubject, nil)
	if err != nil {
		t.Fatal(err)
	}
	var metas []events.SessionMeta
	if err := json.Unmarshal(msg.Data, &metas); err != nil || len(metas) != 1 {
		t.Fatalf("list: %s, %v", msg.Data, err)
	}
	last, _ := log.LastSeq(ctx, r.Session)
	if got := metas[0]; got.Status != events.StatusInterrupted || got.LastSeq != last {
		t.Fatalf("listed %s at %d; want interrupted at %d", got.Status, got.LastSeq, last)
	}

	r2, err := svc.Create(ctx, wire.CreateRequest{World: "startup", Seed: 1, Agents: "greedy"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Wait(ctx, r2.Session); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a session created on the full disk ended with %v; want ENOSPC", err)
	}
	if _, err := log.Session(ctx, r2.Session); err == nil {
		t.Fatal("precondition: the store holds the session created on the full disk")
	}
	msg, err = op.RequestWithContext(ctx, wire.ListSubject, nil)
	if err != nil {
		t.Fatal(err)
	}
	metas = nil
	if err := json.Unmarshal(msg.Data, &metas); err != nil || len(metas) != 2 {
		t.Fatalf("list: %s, %v; want both sessions", msg.Data, err)
	}
	if got := metas[1]; got.ID != r2.Session || got.Status != events.StatusInterrupted || got.LastSeq != 0 || got.World != "startup" {
		t.Fatalf("listed %+v; want %s, world startup, interrupted at 0", got, r2.Session)
	}

	// Room again: the service records the end the store missed.
	log.full.Store(false)
	for {
		stored, err := log.Session(ctx, r.Session)
		if err != nil {
			t.Fatal(err)
		}
		if stored.Status == events.StatusInterrupted && stored.LastSeq == last {
			break
		}
		if stored.Status != events.StatusRunning {
			t.Fatalf("the store records %s at %d; want interrupted at %d", stored.Status, stored.LastSeq, last)
		}
		select {
		case <-ctx.Done():
			t.Fatal("the end the store missed was not recorded once it had room")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// status tells where a running session stands: the simulated time of its
// last durable event and its team score so far, the sum of the rewards
// logged (it said 0 for both until the session ended). A session resumed
// after a restart starts from where its log stands, paused or not.
func TestStatusOfARunningSession(t *testing.T) {
	bus := mustBus(t)
	log := memlog.New()
	stateFile := filepath.Join(t.TempDir(), "serve-state.json")
	control := operatorControl(t, bus)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// stands is the time of the log's last event and the sum of its rewards.
	stands := func(id string) (uint64, int64, float64) {
		t.Helper()
		var last uint64
		var at int64
		var score float64
		for ev, err := range log.Read(ctx, id, 1) {
			if err != nil {
				t.Fatal(err)
			}
			last, at = ev.Seq, ev.Time
			if ev.Type == payload.EvReward {
				var r payload.Reward
				if err := json.Unmarshal(ev.Payload, &r); err != nil {
					t.Fatal(err)
				}
				score += r.Team
			}
		}
		return last, at, score
	}
	svc, err := New(Config{Log: log, Bus: bus, Logger: hclog.NewNullLogger(), StateFile: stateFile})
	if err != nil {
		t.Fatal(err)
	}
	// ana never answers: each of her turns costs the turn timeout, which
	// keeps the session running long enough.
	r, err := svc.Create(ctx, wire.CreateRequest{World: "support-desk", Seed: 2, Agents: "greedy,ana=remote", TurnTimeout: "20ms", JoinTimeout: "100ms"})
	if err != nil {
		t.Fatal(err)
	}
	id := r.Session
	for {
		if last, _ := log.LastSeq(ctx, id); last >= 400 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the session did not get going")
		}
		time.Sleep(5 * time.Millisecond)
	}
	control(id, wire.OpPause)
	var st wire.ControlReply
	for prev := uint64(0); ; prev = st.Events { // until the batch in flight has landed
		time.Sleep(50 * time.Millisecond)
		if st = control(id, wire.OpStatus); st.Events == prev {
			break
		}
	}
	last, at, score := stands(id)
	if st.Status != "paused" || st.Events != last || st.Time != at || st.Score != score || score <= 0 {
		t.Fatalf("status %+v; the log stands at event %d, time %d, score %v", st, last, at, score)
	}
	// The session list says the same of its events (its stored metadata
	// still says 0), and that it is paused (the log says running).
	lister, err := bus.Connect("lister")
	if err != nil {
		t.Fatal(err)
	}
	defer lister.Close()
	if metas, err := listSessions(ctx, lister); err != nil || len(metas) != 1 || metas[0].LastSeq != last || metas[0].Status != wire.StatusPaused {
		t.Fatalf("listed %+v, %v; want the session paused with %d events", metas, err, last)
	}
	svc.Close()
	svc2, err := New(Config{Log: log, Bus: bus, Logger: hclog.NewNullLogger(), StateFile: stateFile})
	if err != nil {
		t.Fatal(err)
	}
	defer svc2.Close()
	if _, err := svc2.ResumeSaved(ctx); err != nil {
		t.Fatal(err)
	}
	last, at, score = stands(id)
	if st = control(id, wire.OpStatus); st.Status != "paused" || st.Events != last || st.Time != at || math.Abs(st.Score-score) > 1e-6 {
		t.Fatalf("resumed: status %+v; the log stands at event %d, time %d, score %v", st, last, at, score)
	}
}

// corpsim sessions --nats lists the sessions of a serve (or a run
// --listen) too, which keeps no cluster log stream: from its own list,
// with the operator token. Without it the connection is refused with a
// hint.
func TestListSessionsOfAServe(t *testing.T) {
	const token = "operator-secret"
	bus, err := natsserver.Start(natsserver.Options{Listen: "127.0.0.1:0", Auth: natsserver.NewAuth(token)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(bus.Shutdown)
	svc, err := New(Config{Log: memlog.New(), Bus: bus, Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := played(t, ctx, svc, wire.CreateRequest{World: "startup", Seed: 4, Agents: "greedy"})
	got, err := ListCluster(ctx, bus.ClientURL(), token)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].ID != m.ID || got[0].Events != m.LastSeq || got[0].Status != events.StatusFinished {
		t.Fatalf("listed %+v; want session %s, finished with %d events", got, m.ID, m.LastSeq)
	}
	if _, err := ListCluster(ctx, bus.ClientURL(), ""); err == nil || !strings.Contains(err.Error(), "--token") {
		t.Fatalf("without the token: %v; want a refusal that names --token", err)
	}
}

// A fork past the end of its parent is refused naming the parent and its
// length (it named the fork, which was never made), and leaves nothing.
func TestForkBeyondTheEndIsRefused(t *testing.T) {
	log := memlog.New()
	svc, err := New(Config{Log: log, Bus: mustBus(t), Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := played(t, ctx, svc, wire.CreateRequest{World: "startup", Seed: 4, Agents: "greedy"})
	_, err = svc.Create(ctx, wire.CreateRequest{Parent: m.ID, ForkSeq: m.LastSeq + 1, Agents: "greedy"})
	want := fmt.Sprintf("fork_seq %d is beyond the end of session %s, which has %d events", m.LastSeq+1, m.ID, m.LastSeq)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("fork past the end: %v; want %q", err, want)
	}
	if all, err := log.Sessions(ctx); err != nil || len(all) != 1 {
		t.Fatalf("sessions after the refusal: %d, %v; want the parent alone", len(all), err)
	}
}

// A fork or reset refused for its agents or seats leaves nothing in the
// log: its metadata, stored before they were checked, is taken back (every
// refused reset left an interrupted session with no agents).
func TestRefusedForkLeavesNothing(t *testing.T) {
	log := memlog.New()
	svc := mustService(t, mustBus(t), log)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := played(t, ctx, svc, wire.CreateRequest{World: "startup", Seed: 4, Agents: "greedy,alice=idle"})
	for _, req := range []wire.CreateRequest{
		{Parent: m.ID, ForkSeq: 1, Agents: "nosuchagent"},
		{Parent: m.ID, ForkSeq: 1, Agents: "greedy,zed=remote"},
		{Parent: m.ID, ForkSeq: 1, Agents: "greedy,bob=llm"},
	} {
		if _, err := svc.Create(ctx, req); err == nil {
			t.Fatalf("fork with agents %q: made", req.Agents)
		}
		if all, err := log.Sessions(ctx); err != nil || len(all) != 1 {
			t.Fatalf("sessions after a fork with agents %q was refused: %d, %v; want the parent alone", req.Agents, len(all), err)
		}
	}
	// A fork that names no agents plays its parent's, as stored (a reset
	// from a client that no longer knows them was refused).
	f := played(t, ctx, svc, wire.CreateRequest{Parent: m.ID, ForkSeq: 1})
	if !maps.Equal(f.Agents, m.Agents) || f.Agents["alice"] != "idle" {
		t.Fatalf("a fork without agents plays %v; its parent played %v", f.Agents, m.Agents)
	}
}

// A request that names a world and gives a world's text is refused
// before anything is made: which one it meant cannot be told (the text
// was played, the name ignored without a word).
func TestCreateRefusesWorldAndSource(t *testing.T) {
	log := memlog.New()
	svc := mustService(t, mustBus(t), log)
	ctx := context.Background()
	src, err := worlds.Source("startup")
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.Create(ctx, wire.CreateRequest{World: "claims", Source: string(src), Agents: "greedy"})
	if err == nil || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("world and source: %v; want a refusal", err)
	}
	if all, err := log.Sessions(ctx); err != nil || len(all) != 0 {
		t.Fatalf("%d sessions after the refusal, %v", len(all), err)
	}
}

// A session created with wait says "created" until it is started, as the
// gateway's record of one does (it said "").
func TestStatusOfASessionWaitingForItsStart(t *testing.T) {
	svc, err := New(Config{Log: memlog.New(), Bus: mustBus(t), Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := svc.Create(ctx, wire.CreateRequest{World: "startup", Seed: 1, Agents: "greedy", Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	svc.mu.Lock()
	ss := svc.sessions[r.Session]
	svc.mu.Unlock()
	if st := svc.status(ss); st.Status != "created" || st.Events != 0 {
		t.Fatalf("status before the start: %+v; want created with no events", st)
	}
}

// A fork created with wait is created, and listed running, until it is
// started, as a new session held is (its metadata is stored interrupted
// until it runs); a shutdown before its start discards it, where a
// restart resumed it with no agents.
func TestAForkWaitingForItsStart(t *testing.T) {
	log := memlog.New()
	bus := mustBus(t)
	control := operatorControl(t, bus)
	svc := mustService(t, bus, log)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := played(t, ctx, svc, wire.CreateRequest{World: "startup", Seed: 1, Agents: "greedy"})
	r, err := svc.Create(ctx, wire.CreateRequest{Parent: m.ID, ForkSeq: 1, Agents: "greedy", Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	if st := svc.Status(r.Session); st.Status != "created" {
		t.Fatalf("status of the held fork: %+v; want created", st)
	}
	list, err := svc.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(list, func(x events.SessionMeta) bool { return x.ID == r.Session }); i < 0 || list[i].Status != events.StatusRunning {
		t.Fatalf("the held fork listed as %+v; want running", list)
	}
	// One stopped by an operator before its start goes too.
	r2, err := svc.Create(ctx, wire.CreateRequest{Parent: m.ID, ForkSeq: 1, Agents: "greedy", Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep := control(r2.Session, wire.OpStop); rep.Error != "" || rep.Status != string(events.StatusInterrupted) {
		t.Fatalf("stop: %+v", rep)
	}
	if _, err := log.Session(ctx, r2.Session); !errors.Is(err, events.ErrNoSession) {
		t.Fatalf("a held fork stopped by an operator: %v; want it discarded", err)
	}
	svc.Close()
	if _, err := log.Session(ctx, r.Session); !errors.Is(err, events.ErrNoSession) {
		t.Fatalf("the held fork after a shutdown: %v; want it discarded", err)
	}
	if got := svc.Discarded(); !slices.Contains(got, r.Session) {
		t.Fatalf("discarded %v; want the held fork", got)
	}
}

// countingObserver counts a service's durable batches and turns.
type countingObserver struct {
	mu             sync.Mutex
	batches, turns int
}

func (o *countingObserver) Appended(string, []events.Event, time.Duration) {
	o.mu.Lock()
	o.batches++
	o.mu.Unlock()
}

func (o *countingObserver) Turn(string, string, time.Duration, bool) {
	o.mu.Lock()
	o.turns++
	o.mu.Unlock()
}

// A served session whose seats are all built-in agents played in the
// process asks them within a batch, as run does, instead of landing a
// batch before every round of turns; it still finishes whole.
func TestServedBuiltInSeatsShareBatches(t *testing.T) {
	bus := mustBus(t)
	log := memlog.New()
	obs := &countingObserver{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	svc, err := New(Config{Log: log, Bus: bus, Logger: hclog.NewNullLogger(), Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	r, err := svc.Create(ctx, wire.CreateRequest{World: "support-desk", Seed: 2, Agents: "greedy"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := svc.Wait(ctx, r.Session)
	if err != nil || m.Status != events.StatusFinished {
		t.Fatalf("%s, %v; want finished", m.Status, err)
	}
	if res := driver.Verify(ctx, log, m); !res.OK {
		t.Fatalf("verify: %v", res.Problems)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	t.Logf("%d events, %d turns, %d durable batches", m.LastSeq, obs.turns, obs.batches)
	if obs.turns < 100 || obs.batches*10 > obs.turns {
		t.Fatalf("%d durable batches for %d turns; want the turns asked within batches (at most one batch per ten turns)", obs.batches, obs.turns)
	}
}

// The service answers history requests for the sessions of its log that it
// does not run: an ended one's events, page by page, from its log; a
// session it never heard of, or one held for its start (nothing of it is
// stored yet), gets NoSession at once, not a timeout.
func TestHistoryOfSessionsNotRunning(t *testing.T) {
	bus := mustBus(t)
	log := memlog.New()
	svc := mustService(t, bus, log)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	op, err := bus.Connect("operator")
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	history := func(id string, from uint64, limit int) wire.HistoryResponse {
		t.Helper()
		b, _ := json.Marshal(wire.HistoryRequest{From: from, Limit: limit})
		msg, err := op.RequestWithContext(ctx, wire.HistorySubject(id), b)
		if err != nil {
			t.Fatalf("history of %s: %v", id, err)
		}
		var resp wire.HistoryResponse
		if err := json.Unmarshal(msg.Data, &resp); err != nil {
			t.Fatal(err)
		}
		return resp
	}
	r, err := svc.Create(ctx, wire.CreateRequest{World: "startup", Seed: 7, Agents: "greedy"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := svc.Wait(ctx, r.Session)
	if err != nil {
		t.Fatal(err)
	}
	var got []events.Event
	for from := uint64(1); from <= m.LastSeq; {
		page := history(r.Session, from, 100)
		if page.Error != "" || page.Last != m.LastSeq || len(page.Events) == 0 || len(page.Events) > 100 {
			t.Fatalf("page from %d: %d events, last %d, error %q; want up to 100, last %d", from, len(page.Events), page.Last, page.Error, m.LastSeq)
		}
		got = append(got, page.Events...)
		from = page.Events[len(page.Events)-1].Seq + 1
	}
	i := 0
	for ev, err := range log.Read(ctx, r.Session, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if i >= len(got) || !bytes.Equal(events.Encode(&got[i]), events.Encode(&ev)) {
			t.Fatalf("event %d of the history differs from the log's", ev.Seq)
		}
		i++
	}
	if i != len(got) {
		t.Fatalf("history served %d events, the log holds %d", len(got), i)
	}
	if page := history("01J0000000000000000000NONE", 1, 0); !page.NoSession || page.Error == "" {
		t.Fatalf("history of an unknown session: %+v; want NoSession", page)
	}
	held, err := svc.Create(ctx, wire.CreateRequest{World: "startup", Seed: 7, Agents: "greedy", Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	if page := history(held.Session, 1, 0); !page.NoSession || len(page.Events) != 0 {
		t.Fatalf("history of a session held for its start: %+v; want NoSession (nothing of it is stored yet)", page)
	}
}

// A worker of a cluster lists a paused session running: one worker
// answers each listing and knows only its own sessions, so a listing that
// said paused would name some paused sessions and not others.
func TestWorkerListsPausedRunning(t *testing.T) {
	bus := mustBus(t)
	control := operatorControl(t, bus)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	svc, err := New(Config{Log: memlog.New(), Bus: bus, Logger: hclog.NewNullLogger(), Queue: "workers"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	r, err := svc.Create(ctx, wire.CreateRequest{World: "support-desk", Seed: 2, Agents: "greedy,ana=remote", TurnTimeout: "20ms", JoinTimeout: "100ms"})
	if err != nil {
		t.Fatal(err)
	}
	control(r.Session, wire.OpPause)
	if st := control(r.Session, wire.OpStatus); st.Status != wire.StatusPaused {
		t.Fatalf("status %q; want paused", st.Status)
	}
	for {
		metas, err := svc.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range metas {
			if m.ID != r.Session {
				continue
			}
			if m.Status != events.StatusRunning {
				t.Fatalf("a worker lists its paused session %s; want running", m.Status)
			}
			return
		}
		if ctx.Err() != nil {
			t.Fatal("the session was never listed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
