package tests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/client"
	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/sim/server"
	"github.com/corpsim/corpsim/worlds"
)

type testServer struct {
	url      string
	operator string
	log      events.Log
	svc      *server.Service
	op       *client.Operator
}

// startServer runs the service on an embedded NATS server listening on loopback, with per-seat auth.
func startServer(tb testing.TB) *testServer {
	tb.Helper()
	addr := freeAddr(tb)
	opToken := natsserver.NewToken()
	auth := natsserver.NewAuth(opToken)
	bus, err := natsserver.Start(natsserver.Options{Listen: addr, Auth: auth})
	if err != nil {
		tb.Fatal(err)
	}
	l := memlog.New()
	svc, err := server.New(server.Config{Log: l, Bus: bus, Auth: auth, Logger: testLogger(tb), CheckpointEvery: -1, TurnTimeout: 20 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	op, err := client.Dial("nats://"+addr, opToken)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		op.Close()
		svc.Close()
		bus.Shutdown()
	})
	return &testServer{url: "nats://" + addr, operator: opToken, log: l, svc: svc, op: op}
}

func (ts *testServer) wait(tb testing.TB, session string) events.SessionMeta {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	meta, err := ts.svc.Wait(ctx, session)
	if err != nil {
		tb.Fatalf("session %s: %v", session, err)
	}
	if meta.Status != events.StatusFinished {
		tb.Fatalf("session %s ended %s", session, meta.Status)
	}
	return meta
}

// sameLogs compares two sessions' events from seq `from` on, byte for byte.
func sameLogs(tb testing.TB, a events.Log, sa string, b events.Log, sb string, from int) {
	tb.Helper()
	la, lb := encodedLog(tb, a, sa), encodedLog(tb, b, sb)
	if len(la) != len(lb) {
		tb.Fatalf("%s has %d events, %s %d", sa, len(la), sb, len(lb))
	}
	for i := from - 1; i < len(la); i++ {
		if !bytes.Equal(la[i], lb[i]) {
			tb.Fatalf("event %d differs between %s and %s", i+1, sa, sb)
		}
	}
}

// TestManyRemoteAgentsInOneSession: 200 seats, each played by its own
// remote agent on its own NATS connection with its own credentials. The
// agents are deterministic, so the log equals an in-process run's.
func TestManyRemoteAgentsInOneSession(t *testing.T) {
	ts := startServer(t)
	src := worlds.Generate(worlds.GenOptions{Name: "crowd", Seed: 3, Teams: 4, Members: 200, Projects: 4, Tasks: 50, Chains: 25, Horizon: "10d"})
	reply, err := ts.op.Create(requestCtx(t, time.Minute), wire.CreateRequest{Source: string(src), Seed: 5, Agents: "remote"})
	if err != nil {
		t.Fatal(err)
	}
	if len(reply.Seats) != 200 {
		t.Fatalf("got %d remote seats, want 200", len(reply.Seats))
	}
	var players []*client.Player
	for _, seat := range reply.Seats {
		p, err := client.Play(ts.url, seat, &agents.Greedy{})
		if err != nil {
			t.Fatalf("seat %s: %v", seat.Member, err)
		}
		players = append(players, p)
	}
	defer func() {
		for _, p := range players {
			p.Close()
		}
	}()
	meta := ts.wait(t, reply.Session)

	path := filepath.Join(t.TempDir(), "crowd.yaml")
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	ref := memlog.New()
	res := mustRun(t, app.RunOptions{World: path, Seed: 5, Agents: "greedy", Log: ref, CheckpointEvery: -1})
	// Event 1 names the world file differently; everything after must match.
	sameLogs(t, ts.log, reply.Session, ref, res.Session, 2)
	if meta.StateHash != res.StateHash {
		t.Fatalf("remote run ends in %s, in-process run in %s", meta.StateHash, res.StateHash)
	}
	if timeouts := len(eventsOf(t, ts.log, reply.Session, payload.EvTurnTimeout)); timeouts != 0 {
		t.Fatalf("%d turns timed out", timeouts)
	}
	t.Logf("200 remote agents: %d events, score %.2f", meta.LastSeq, res.Score.TeamScore)
}

// TestTwentySessionsAtOnce: 20 sessions of the startup world run at the
// same time, each with two remote seats; each log equals the in-process run
// of its seed.
func TestTwentySessionsAtOnce(t *testing.T) {
	ts := startServer(t)
	type run struct {
		session string
		seed    uint64
	}
	var runs []run
	var players []*client.Player
	defer func() {
		for _, p := range players {
			p.Close()
		}
	}()
	for seed := uint64(1); seed <= 20; seed++ {
		reply, err := ts.op.Create(requestCtx(t, time.Minute), wire.CreateRequest{World: "startup", Seed: seed, Agents: "greedy,bob=remote,carol=remote"})
		if err != nil {
			t.Fatal(err)
		}
		for _, seat := range reply.Seats {
			p, err := client.Play(ts.url, seat, &agents.Greedy{})
			if err != nil {
				t.Fatal(err)
			}
			players = append(players, p)
		}
		runs = append(runs, run{reply.Session, seed})
	}
	var wg sync.WaitGroup
	for _, r := range runs {
		wg.Add(1)
		go func(r run) {
			defer wg.Done()
			ts.wait(t, r.session)
		}(r)
	}
	wg.Wait()
	for _, r := range runs {
		ref := memlog.New()
		res := mustRun(t, app.RunOptions{World: "startup", Seed: r.seed, Agents: "greedy", Log: ref, CheckpointEvery: -1})
		sameLogs(t, ts.log, r.session, ref, res.Session, 1)
	}
}

// TestSeatIsolation tries, with real NATS connections, everything a seat's
// credentials must not allow, and checks the session is unchanged by it.
func TestSeatIsolation(t *testing.T) {
	ts := startServer(t)
	reply, err := ts.op.Create(requestCtx(t, time.Minute), wire.CreateRequest{World: "startup", Seed: 7, Agents: "greedy,bob=remote,carol=remote", Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	bob, carol := reply.Seats["bob"], reply.Seats["carol"]

	errs := make(chan error, 16)
	nc, err := nats.Connect(ts.url, nats.Token(bob.Token), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	expectViolation := func(what string) {
		t.Helper()
		select {
		case err := <-errs:
			if !errors.Is(err, nats.ErrPermissionViolation) && !strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
				t.Fatalf("%s: got %v, want a permissions violation", what, err)
			}
		case <-time.After(3 * time.Second):
			t.Fatalf("%s was not refused", what)
		}
	}
	// Reading another seat's observations, the event feed, control.
	for _, subj := range []string{carol.Subject, wire.EventsSubject(reply.Session), wire.ControlSubject(reply.Session), ">"} {
		if _, err := nc.SubscribeSync(subj); err != nil {
			t.Fatal(err)
		}
		nc.Flush()
		expectViolation("subscribing to " + subj)
	}
	// Answering for another seat, controlling or creating sessions.
	for _, subj := range []string{carol.Subject, wire.ControlSubject(reply.Session), wire.CreateSubject} {
		nc.Publish(subj, []byte(`{"turn":1,"actions":[{"type":"claim","task":"spec"}]}`))
		nc.Flush()
		expectViolation("publishing to " + subj)
	}
	// Wrong and revoked tokens.
	if _, err := nats.Connect(ts.url, nats.Token("not-a-token")); err == nil {
		t.Fatal("a wrong token connected")
	}

	// Play the session: bob greedy, carol greedy too, with bob replaying an
	// old answer (turn 1) at every later turn.
	var first []byte
	var mu sync.Mutex
	replayer := agentFunc(func(o org.Observation) []org.Action {
		acts, _ := (&agents.Greedy{}).Decide(context.Background(), o)
		return acts
	})
	pb, err := client.Play(ts.url, bob, replayer)
	if err != nil {
		t.Fatal(err)
	}
	defer pb.Close()
	// A second connection of bob's records the first turn's reply subject and re-sends a stale answer later.
	spy, err := nats.Connect(ts.url, nats.Token(bob.Token))
	if err != nil {
		t.Fatal(err)
	}
	defer spy.Close()
	var stale []string
	sub, err := spy.Subscribe(bob.Subject, func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		if first == nil {
			first = []byte(`{"turn":1,"actions":[{"type":"complete","task":"spec"}]}`)
		}
		stale = append(stale, m.Reply)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	pc, err := client.Play(ts.url, carol, &agents.Greedy{})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if _, err := ts.op.Control(requestCtx(t, time.Minute), reply.Session, wire.OpStart); err != nil {
		t.Fatal(err)
	}
	meta := ts.wait(t, reply.Session)
	// Re-sending a reply to an old request is refused by the server (one response per request) or lands nowhere.
	mu.Lock()
	for _, r := range stale[:min(3, len(stale))] {
		spy.Publish(r, first)
	}
	seen := len(stale) // the spy's subscription stays open: read it under the lock
	mu.Unlock()
	spy.Flush()

	ref := memlog.New()
	res := mustRun(t, app.RunOptions{World: "startup", Seed: 7, Agents: "greedy", Log: ref, CheckpointEvery: -1})
	if meta.StateHash != res.StateHash {
		t.Fatalf("the attempts changed the world: state %s, want %s", meta.StateHash, res.StateHash)
	}
	t.Logf("%d turn requests seen by the spy; world unchanged (%s)", seen, fmt.Sprint(meta.LastSeq))
}

// TestServiceOnExternalNATS: the service runs on a NATS server it does not
// own (here another process's embedded server, reached by URL); a session
// created with wait starts on command and reproduces the in-process log.
func TestServiceOnExternalNATS(t *testing.T) {
	addr := freeAddr(t)
	ext, err := natsserver.Start(natsserver.Options{Listen: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer ext.Shutdown()
	url := "nats://" + addr
	l := memlog.New()
	svc, err := server.New(server.Config{Log: l, Bus: natsserver.External{URL: url}, Logger: testLogger(t), CheckpointEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	op, err := client.Dial(url, "")
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	reply, err := op.Create(requestCtx(t, time.Minute), wire.CreateRequest{World: "startup", Seed: 3, Agents: "greedy,erin=remote", Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := client.Play(url, reply.Seats["erin"], &agents.Greedy{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := op.Control(requestCtx(t, time.Minute), reply.Session, wire.OpStart); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := svc.Wait(ctx, reply.Session); err != nil {
		t.Fatal(err)
	}
	ref := memlog.New()
	res := mustRun(t, app.RunOptions{World: "startup", Seed: 3, Agents: "greedy", Log: ref, CheckpointEvery: -1})
	sameLogs(t, l, reply.Session, ref, res.Session, 1)
}

// TestServiceLLMSeats: a create request may give seats to "llm", played by
// the server's llm agent (here a stand-in); without one it is refused.
func TestServiceLLMSeats(t *testing.T) {
	bus, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Shutdown()
	var asked sync.Map
	standIn := agentFunc(func(o org.Observation) []org.Action {
		asked.Store(o.Member, true)
		acts, _ := (&agents.Greedy{}).Decide(context.Background(), o)
		return acts
	})
	for _, withLLM := range []bool{false, true} {
		cfg := server.Config{Log: memlog.New(), Bus: bus, Logger: testLogger(t), CheckpointEvery: -1}
		if withLLM {
			cfg.LLM = standIn
		}
		svc, err := server.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		reply, err := svc.Create(requestCtx(t, time.Minute), wire.CreateRequest{World: "startup", Seed: 2, Agents: "greedy,bob=llm"})
		if !withLLM {
			if err == nil || !strings.Contains(err.Error(), "no llm agent") {
				t.Fatalf("llm seats without an llm agent: got %v", err)
			}
			svc.Close()
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		meta, err := svc.Wait(ctx, reply.Session)
		cancel()
		svc.Close()
		if err != nil || meta.Agents["bob"] != "llm" {
			t.Fatalf("session %v, bob played by %q", err, meta.Agents["bob"])
		}
		if _, ok := asked.Load("bob"); !ok {
			t.Fatal("the llm agent was never asked for bob")
		}
	}
}
