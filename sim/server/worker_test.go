package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/client"
	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/jsreplica"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/sim/simtest"
)

type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func testLogger(tb testing.TB) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: tb.Name(), Level: hclog.Warn, Output: tbWriter{tb}})
}

// mustNode starts a single embedded NATS server with JetStream.
func mustNode(tb testing.TB) *natsserver.Node {
	tb.Helper()
	n, err := natsserver.StartNode(natsserver.NodeOptions{Name: "n1", StoreDir: tb.TempDir()})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(n.Shutdown)
	return n
}

// mustWorker starts a worker on node with its own memory log.
func mustWorker(tb testing.TB, node *natsserver.Node, name string, maxSessions int, wc WorkerConfig) (*Worker, events.Log) {
	tb.Helper()
	return mustWorkerLLM(tb, node, name, maxSessions, wc, nil)
}

// mustWorkerLLM is mustWorker with llm playing the seats given to "llm".
func mustWorkerLLM(tb testing.TB, node *natsserver.Node, name string, maxSessions int, wc WorkerConfig, llm agents.Agent) (*Worker, events.Log) {
	tb.Helper()
	return mustWorkerWith(tb, node, name, wc, Config{Logger: testLogger(tb), MaxSessions: maxSessions, TurnTimeout: 20 * time.Second, LLM: llm})
}

// mustWorkerWith starts worker name with the service configuration cfg,
// on its own in-memory log and the node's bus.
func mustWorkerWith(tb testing.TB, node *natsserver.Node, name string, wc WorkerConfig, cfg Config) (*Worker, events.Log) {
	tb.Helper()
	bus := natsserver.External{URL: node.ClientURL()}
	nc, err := bus.Connect("worker-" + name)
	if err != nil {
		tb.Fatal(err)
	}
	l := memlog.New()
	wc.Name, wc.Conn = name, nc
	cfg.Log, cfg.Bus = l, bus
	w, err := NewWorker(context.Background(), wc, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = w.Shutdown(ctx)
		nc.Close()
	})
	return w, l
}

func leaseOwner(tb testing.TB, js jetstream.JetStream, id string) string {
	tb.Helper()
	kv, err := js.KeyValue(context.Background(), LeaseBucket)
	if err != nil {
		tb.Fatal(err)
	}
	e, err := kv.Get(context.Background(), id)
	if err != nil {
		tb.Fatalf("session %s: lease: %v", id, err)
	}
	return string(e.Value())
}

// A worker at capacity leaves the queue group: create requests go to the
// other worker; with both full a create finds no responders; a worker
// whose session ends takes requests again.
func TestWorkerCapacityQueue(t *testing.T) {
	node := mustNode(t)
	mustWorker(t, node, "a", 1, WorkerConfig{})
	mustWorker(t, node, "b", 1, WorkerConfig{})
	op, err := client.Dial(node.ClientURL(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	js, _ := jetstream.New(op.Conn())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Held before they start: each counts against its worker's capacity.
	req := wire.CreateRequest{World: "startup", Seed: 1, Agents: "greedy", Wait: true}
	var ids []string
	for range 2 {
		r, err := op.Create(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.Session)
	}
	if a, b := leaseOwner(t, js, ids[0]), leaseOwner(t, js, ids[1]); a == b {
		t.Fatalf("both sessions went to worker %s", a)
	}
	cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = op.Create(cctx, req)
	ccancel()
	if !errors.Is(err, nats.ErrNoResponders) && (err == nil || !strings.Contains(err.Error(), "too many sessions")) {
		t.Fatalf("a create with every worker full: got %v, want no responders or too many sessions", err)
	}
	// One session ends: its worker takes the next one.
	_, _ = op.Control(ctx, ids[0], wire.OpStop) // the reply carries the stopped run's error
	for deadline := time.Now().Add(10 * time.Second); ; {
		r, err := op.Create(ctx, req)
		if err == nil {
			ids = append(ids, r.Session)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no worker took a create after a session ended: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, id := range ids[1:] {
		_, _ = op.Control(ctx, id, wire.OpStop)
	}
}

// A session whose lease is taken away stops on its worker at once; once
// the lease is gone the session is adopted (here by the same worker, whose
// log already holds it), continued, and finishes with a log that the
// stream holds whole and that verifies.
func TestWorkerLeaseLostAndAdopted(t *testing.T) {
	node := mustNode(t)
	w, _ := mustWorker(t, node, "a", 10, WorkerConfig{LeaseTTL: 3 * time.Second, RenewEvery: time.Second / 2, ScanEvery: time.Second / 2})
	op, err := client.Dial(node.ClientURL(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	js, _ := jetstream.New(op.Conn())
	// bob never answers: each of his turns costs the turn timeout, which
	// keeps the session running long enough.
	r, err := op.Create(ctx, wire.CreateRequest{World: "support-desk", Seed: 2, Agents: "greedy,ana=remote", TurnTimeout: "20ms"})
	if err != nil {
		t.Fatal(err)
	}
	id := r.Session
	for streamed(t, ctx, js, id) < 20 {
		time.Sleep(20 * time.Millisecond)
	}
	// Another worker takes the lease: the worker notices within a
	// renewal and stops the session, and writes nothing more while the
	// other holds it. Two fences keep it out of the stream (the gate before
	// each step, and the replication cut at the lease's end); with both
	// disabled this fails, with either one it passes.
	leases, _ := js.KeyValue(ctx, LeaseBucket)
	if _, err := leases.Put(ctx, id, []byte("intruder")); err != nil {
		t.Fatal(err)
	}
	for {
		w.mu.Lock()
		l := w.held[id]
		lost := l == nil || l.lost
		w.mu.Unlock()
		if lost {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the worker did not notice that its lease was taken")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // a batch already in flight lands
	before := streamed(t, ctx, js, id)
	time.Sleep(1500 * time.Millisecond) // three renewals and scans
	if after := streamed(t, ctx, js, id); after != before {
		t.Fatalf("the worker went on without its lease: the stream grew from %d to %d events", before, after)
	}
	// The other lets go: the worker adopts the session again and ends it.
	if err := leases.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	meta := waitMeta(t, ctx, js, id, events.StatusFinished)
	if _, err := w.svc.Wait(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got := leaseOwnerOrNone(js, id); got != "" {
		t.Errorf("a finished session keeps a lease by %s", got)
	}
	restored := memlog.New()
	last, err := jsreplica.Restore(ctx, js, id, restored)
	if err != nil {
		t.Fatal(err)
	}
	if last != meta.LastSeq {
		t.Fatalf("restored %d events, want %d", last, meta.LastSeq)
	}
	rmeta, _ := restored.Session(ctx, id)
	if rep := driver.Verify(ctx, restored, rmeta); !rep.OK || rep.StateHash != meta.StateHash {
		t.Fatalf("verify: %+v, want hash %s", rep, meta.StateHash)
	}
}

// streamed is how many of session id's events the log stream holds.
func streamed(t *testing.T, ctx context.Context, js jetstream.JetStream, id string) uint64 {
	t.Helper()
	st, err := js.Stream(ctx, jsreplica.Stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(jsreplica.Subject(id)))
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Subjects[jsreplica.Subject(id)]
}

func leaseOwnerOrNone(js jetstream.JetStream, id string) string {
	kv, err := js.KeyValue(context.Background(), LeaseBucket)
	if err != nil {
		return ""
	}
	e, err := kv.Get(context.Background(), id)
	if err != nil {
		return ""
	}
	return string(e.Value())
}

func waitMeta(t *testing.T, ctx context.Context, js jetstream.JetStream, id string, want events.Status) events.SessionMeta {
	t.Helper()
	kv, err := js.KeyValue(ctx, jsreplica.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	for {
		var m events.SessionMeta
		if e, err := kv.Get(ctx, id); err == nil {
			_ = json.Unmarshal(e.Value(), &m)
			if m.Status == want {
				return m
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("session %s: status %q, want %s", id, m.Status, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// ownerOf reads the worker recorded in OwnerBucket for a session.
func ownerOf(tb testing.TB, js jetstream.JetStream, id string) string {
	tb.Helper()
	kv, err := js.KeyValue(context.Background(), OwnerBucket)
	if err != nil {
		tb.Fatal(err)
	}
	e, err := kv.Get(context.Background(), id)
	if err != nil {
		return ""
	}
	var o owner
	_ = json.Unmarshal(e.Value(), &o)
	return o.Worker
}

// A worker shut down hands its running sessions off at once (its leases
// are released, not left to expire), and a fork of a session that only
// the stopped worker ran is made by the other worker from the stream.
func TestWorkerShutdownHandsOffAndForks(t *testing.T) {
	node := mustNode(t)
	cfg := WorkerConfig{LeaseTTL: 30 * time.Second, RenewEvery: time.Second, ScanEvery: time.Second / 2}
	a, _ := mustWorker(t, node, "a", 100, cfg)
	mustWorker(t, node, "b", 100, cfg)
	op, err := client.Dial(node.ClientURL(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	js, _ := jetstream.New(op.Conn())
	// A short session that worker a ran.
	var short events.SessionMeta
	for i := 0; short.ID == ""; i++ {
		if i == 20 {
			t.Fatal("worker a took none of 20 sessions")
		}
		r, err := op.Create(ctx, wire.CreateRequest{World: "startup", Seed: uint64(i + 1), Agents: "greedy"})
		if err != nil {
			t.Fatal(err)
		}
		m := waitMeta(t, ctx, js, r.Session, events.StatusFinished)
		if ownerOf(t, js, r.Session) == "a" {
			short = m
		}
	}
	// Slow sessions, some on a.
	var onA []string
	var all []string
	for i := 0; len(onA) < 2; i++ {
		if i == 20 {
			t.Fatal("worker a took too few sessions")
		}
		r, err := op.Create(ctx, wire.CreateRequest{World: "support-desk", Seed: uint64(i + 1), Agents: "greedy,ana=remote", TurnTimeout: "20ms"})
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, r.Session)
		if leaseOwner(t, js, r.Session) == "a" {
			onA = append(onA, r.Session)
		}
	}
	time.Sleep(300 * time.Millisecond)
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	if err := a.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	scancel()
	stopped := time.Now()
	for _, id := range onA {
		for leaseOwnerOrNone(js, id) != "b" {
			if m := waitMetaNow(js, id); m.Status == events.StatusFinished {
				break
			}
			if time.Since(stopped) > 10*time.Second {
				t.Fatalf("session %s was not adopted by b within 10s of a's shutdown (lease TTL %v)", id, cfg.LeaseTTL)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	t.Logf("a's %d running sessions adopted by b %v after a stopped", len(onA), time.Since(stopped).Round(time.Millisecond))
	// A fork of the session only a ran: b fetches its parent from the stream.
	r, err := op.Create(ctx, wire.CreateRequest{Parent: short.ID, ForkSeq: 10, Agents: "greedy"})
	if err != nil {
		t.Fatal(err)
	}
	fork := waitMeta(t, ctx, js, r.Session, events.StatusFinished)
	for _, id := range append(all, fork.ID) {
		m := waitMeta(t, ctx, js, id, events.StatusFinished)
		l := memlog.New()
		if _, err := jsreplica.Restore(ctx, js, id, l); err != nil {
			t.Fatalf("session %s: %v", id, err)
		}
		rm, _ := l.Session(ctx, id)
		if rep := driver.Verify(ctx, l, rm); !rep.OK || rep.StateHash != m.StateHash {
			t.Fatalf("session %s: verify %+v, want hash %s", id, rep, m.StateHash)
		}
	}
}

// A worker that adopts a session restores its latest replicated
// checkpoint along with its events: it rebuilds the state from there, its
// planners take what the first worker's planners remembered there, and
// they are shown only the turns since. The session ends as it does when
// nothing is handed off. Without the checkpoint's replication the adopter
// has none at or before the point it continues from.
func TestWorkerAdoptsFromTheReplicatedCheckpoint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	create := wire.CreateRequest{World: "portfolio", Seed: 1, Agents: "planner"}
	whole := func() events.SessionMeta {
		svc, err := New(Config{Log: memlog.New(), Bus: mustBus(t), Logger: hclog.NewNullLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer svc.Close()
		return played(t, ctx, svc, create)
	}()
	node := mustNode(t)
	wc := WorkerConfig{LeaseTTL: 30 * time.Second, RenewEvery: time.Second, ScanEvery: time.Second / 4}
	a, _ := mustWorkerWith(t, node, "a", wc, Config{Logger: testLogger(t), CheckpointEvery: 500})
	op, err := client.Dial(node.ClientURL(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	js, _ := jetstream.New(op.Conn())
	r, err := op.Create(ctx, create)
	if err != nil {
		t.Fatal(err)
	}
	for streamed(t, ctx, js, r.Session) < 3000 {
		if ctx.Err() != nil {
			t.Fatal("the session did not get going")
		}
		time.Sleep(5 * time.Millisecond)
	}
	var said simtest.Buffer
	_, blog := mustWorkerWith(t, node, "b", wc, Config{Logger: hclog.New(&hclog.LoggerOptions{Output: &said, Level: hclog.Info}), CheckpointEvery: 500})
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	if err := a.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	scancel()
	m := waitMeta(t, ctx, js, r.Session, events.StatusFinished)
	if m.LastSeq != whole.LastSeq || m.StateHash != whole.StateHash {
		t.Errorf("handed off: %d events, state hash %s; without a hand-off %d, %s", m.LastSeq, m.StateHash, whole.LastSeq, whole.StateHash)
	}
	out := said.String()
	adopted := regexp.MustCompile(`adopted an orphaned session: .*at_seq=(\d+) checkpoint=(\d+)`).FindStringSubmatch(out)
	recalled := regexp.MustCompile(`agents shown their past turns: .*from_checkpoint=(\d+)`).FindStringSubmatch(out)
	if adopted == nil || recalled == nil {
		t.Fatalf("worker b did not say it adopted the session and recalled its planners' past:\n%s", out)
	}
	t.Logf("%s / %s", adopted[0], recalled[0])
	at, _ := strconv.ParseUint(adopted[1], 10, 64)
	cp, _ := strconv.ParseUint(adopted[2], 10, 64)
	if cp == 0 || cp > at || recalled[1] != adopted[2] {
		t.Fatalf("adopted at seq %d from the checkpoint at %d, the planners recalled from the one at %s; want one replicated before the hand-off, used by both", at, cp, recalled[1])
	}
	if got, err := blog.LatestCheckpoint(ctx, r.Session, at); err != nil || got.Seq != cp {
		t.Fatalf("worker b's latest checkpoint at or before %d: %d, %v; want %d", at, got.Seq, err, cp)
	}
	bm, err := blog.Session(ctx, r.Session)
	if err != nil {
		t.Fatal(err)
	}
	if rep := driver.Verify(ctx, blog, bm); !rep.OK || rep.StateHash != whole.StateHash {
		t.Fatalf("verify worker b's log, its checkpoints with it: %+v", rep)
	}
	// The cluster's listing names the latest checkpoint replicated: one of
	// worker b's, taken after the hand-off.
	all, err := ClusterSessions(ctx, js)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		if s.ID == r.Session && (s.Checkpoint <= at || s.Checkpoint > s.Events) {
			t.Errorf("the cluster lists its latest checkpoint at %d (%d events, adopted at %d)", s.Checkpoint, s.Events, at)
		}
	}
}

func waitMetaNow(js jetstream.JetStream, id string) events.SessionMeta {
	var m events.SessionMeta
	if kv, err := js.KeyValue(context.Background(), jsreplica.Bucket); err == nil {
		if e, err := kv.Get(context.Background(), id); err == nil {
			_ = json.Unmarshal(e.Value(), &m)
		}
	}
	return m
}

// A remote seat's agent keeps playing when its session moves to another
// run (here: the lease is taken away and the session adopted again): the
// turn subject is the session's, whoever runs it.
func TestWorkerRemoteSeatFollowsAdoption(t *testing.T) {
	node := mustNode(t)
	w, _ := mustWorker(t, node, "a", 10, WorkerConfig{LeaseTTL: 3 * time.Second, RenewEvery: time.Second / 2, ScanEvery: time.Second / 2})
	op, err := client.Dial(node.ClientURL(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	js, _ := jetstream.New(op.Conn())
	r, err := op.Create(ctx, wire.CreateRequest{World: "support-desk", Seed: 5, Agents: "greedy,ana=remote", Wait: true, TurnTimeout: "5s"})
	if err != nil {
		t.Fatal(err)
	}
	id := r.Session
	p, err := client.Play(node.ClientURL(), r.Seats["ana"], &agents.Greedy{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := op.Control(ctx, id, wire.OpStart); err != nil {
		t.Fatal(err)
	}
	for streamed(t, ctx, js, id) < 300 {
		time.Sleep(10 * time.Millisecond)
	}
	leases, _ := js.KeyValue(ctx, LeaseBucket)
	if err := leases.Delete(ctx, id); err != nil {
		t.Fatal(err)
	}
	meta := waitMeta(t, ctx, js, id, events.StatusFinished)
	if _, err := w.svc.Wait(ctx, id); err != nil {
		t.Fatal(err)
	}
	l := memlog.New()
	if _, err := jsreplica.Restore(ctx, js, id, l); err != nil {
		t.Fatal(err)
	}
	timeouts := 0
	for ev, err := range l.Read(ctx, id, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == payload.EvTurnTimeout {
			timeouts++
		}
	}
	if timeouts > 1 {
		t.Errorf("%d turns timed out; the remote seat should have kept answering", timeouts)
	}
	rm, _ := l.Session(ctx, id)
	if rep := driver.Verify(ctx, l, rm); !rep.OK || rep.StateHash != meta.StateHash {
		t.Fatalf("verify %+v, want hash %s", rep, meta.StateHash)
	}
	t.Logf("%d events, %d turn timeouts", meta.LastSeq, timeouts)
}

// A session created with wait, not started yet (no event stored), whose
// worker stops is adopted by another worker, still waits, and runs on the
// operator's start, which reaches it on the same control subject.
func TestWorkerAdoptsUnstartedSession(t *testing.T) {
	node := mustNode(t)
	cfg := WorkerConfig{LeaseTTL: 30 * time.Second, RenewEvery: time.Second, ScanEvery: time.Second / 2}
	a, _ := mustWorker(t, node, "a", 100, cfg)
	mustWorker(t, node, "b", 100, cfg)
	op, err := client.Dial(node.ClientURL(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js, _ := jetstream.New(op.Conn())
	var id string
	for i := 0; id == ""; i++ {
		if i == 20 {
			t.Fatal("worker a took none of 20 sessions")
		}
		r, err := op.Create(ctx, wire.CreateRequest{World: "startup", Seed: 9, Agents: "greedy", Wait: true})
		if err != nil {
			t.Fatal(err)
		}
		if leaseOwner(t, js, r.Session) == "a" {
			id = r.Session
		}
	}
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	if err := a.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	scancel()
	for leaseOwnerOrNone(js, id) != "b" {
		if ctx.Err() != nil {
			t.Fatal("b did not adopt the waiting session")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The lease is b's a moment before b listens on the control subject.
	var st wire.ControlReply
	for {
		if st, err = op.Control(ctx, id, wire.OpStatus); err == nil || !errors.Is(err, nats.ErrNoResponders) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	if st.Events != 0 {
		t.Fatalf("the adopted session has %d events before its start", st.Events)
	}
	if _, err := op.Control(ctx, id, wire.OpStart); err != nil {
		t.Fatal(err)
	}
	m := waitMeta(t, ctx, js, id, events.StatusFinished)
	l := memlog.New()
	if _, err := jsreplica.Restore(ctx, js, id, l); err != nil {
		t.Fatal(err)
	}
	rm, _ := l.Session(ctx, id)
	if rep := driver.Verify(ctx, l, rm); !rep.OK || rep.StateHash != m.StateHash {
		t.Fatalf("verify %+v, want hash %s", rep, m.StateHash)
	}
}

// slowLeases is a lease bucket whose updates take a while; it counts how
// many run at once.
type slowLeases struct {
	jetstream.KeyValue
	mu          sync.Mutex
	now, most   int
	updated     map[string]int
	updateDelay time.Duration
}

func (k *slowLeases) Update(_ context.Context, key string, _ []byte, rev uint64) (uint64, error) {
	k.mu.Lock()
	k.now++
	k.most = max(k.most, k.now)
	k.mu.Unlock()
	time.Sleep(k.updateDelay)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.now--
	k.updated[key]++
	return rev + 1, nil
}

// A worker renews its leases several at a time, every one of them, each
// once per pass, and never more than renewParallel at once.
func TestWorkerRenewsLeasesConcurrently(t *testing.T) {
	kv := &slowLeases{updated: map[string]int{}, updateDelay: 5 * time.Millisecond}
	w := &Worker{cfg: WorkerConfig{RenewEvery: time.Second, LeaseTTL: time.Minute}, logger: hclog.NewNullLogger(),
		leases: kv, held: map[string]*lease{}}
	for i := range 100 {
		w.held[fmt.Sprintf("s%03d", i)] = &lease{rev: 1, renewed: time.Now()}
	}
	w.held["lost"] = &lease{rev: 1, lost: true}
	w.renewAll()
	if kv.most < 2 || kv.most > renewParallel {
		t.Errorf("%d renewals ran at once; want between 2 and %d", kv.most, renewParallel)
	}
	for id, l := range w.held {
		switch {
		case id == "lost" && kv.updated[id] != 0:
			t.Errorf("a lost lease was renewed")
		case id != "lost" && (kv.updated[id] != 1 || l.rev != 2):
			t.Errorf("lease %s renewed %d times, rev %d; want once, rev 2", id, kv.updated[id], l.rev)
		}
	}
}

// lossyKV is a bucket that loses the first read of one key as a NATS node
// loses a request it took as it died: the read is never answered, nor
// failed, until its context ends. It records the budget that read had.
type lossyKV struct {
	jetstream.KeyValue
	lose string

	mu     sync.Mutex
	lost   bool
	budget time.Duration // -1: no deadline
}

func (k *lossyKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	k.mu.Lock()
	lose := key == k.lose && !k.lost
	if lose {
		k.lost, k.budget = true, -1
		if d, ok := ctx.Deadline(); ok {
			k.budget = time.Until(d)
		}
	}
	k.mu.Unlock()
	if lose {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return k.KeyValue.Get(ctx, key)
}

// A request of a scan that is never answered costs that request's bound
// (RequestFor), not the scan: the other orphans are adopted in the same
// scan, and the session whose read was lost in the next one. (Bounded by
// the whole scan's budget, the lost read failed the scan, and after a NATS
// node was shut down a worker adopted nothing for 30 s.)
func TestWorkerScanSurvivesALostRequest(t *testing.T) {
	node := mustNode(t)
	cfg := WorkerConfig{LeaseTTL: 30 * time.Second, RenewEvery: time.Second, ScanEvery: time.Hour} // scans: by hand
	b, _ := mustWorker(t, node, "b", 100, cfg)
	op, err := client.Dial(node.ClientURL(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js, _ := jetstream.New(op.Conn())
	var ids []string
	for i := range 2 {
		r, err := op.Create(ctx, wire.CreateRequest{World: "startup", Seed: uint64(i + 1), Agents: "greedy", Wait: true})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.Session)
	}
	cfg.RequestFor = 200 * time.Millisecond
	a, _ := mustWorker(t, node, "a", 100, cfg)
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	if err := b.Shutdown(sctx); err != nil { // hands both sessions off: orphans
		t.Fatal(err)
	}
	scancel()
	kv := &lossyKV{KeyValue: a.meta, lose: ids[0]}
	a.meta = kv // a's scan loop sleeps for an hour: only this test reads it

	if err := a.scan(); err != nil {
		t.Fatalf("a scan with one read lost: %v", err)
	}
	if got := leaseOwnerOrNone(js, ids[1]); got != "a" {
		t.Errorf("session %s (read fine): leased by %q after the scan, want a", ids[1], got)
	}
	if got := leaseOwnerOrNone(js, ids[0]); got != "" {
		t.Errorf("session %s (read lost): leased by %q after the scan, want none yet", ids[0], got)
	}
	if kv.budget < 0 || kv.budget > cfg.RequestFor {
		t.Errorf("the lost read had a budget of %v, want at most RequestFor (%v)", kv.budget, cfg.RequestFor)
	}
	if err := a.scan(); err != nil {
		t.Fatal(err)
	}
	if got := leaseOwnerOrNone(js, ids[0]); got != "a" {
		t.Errorf("session %s: leased by %q after the next scan, want a", ids[0], got)
	}
}

// cutLister is a key listing that its context cut short: jetstream's
// lister then ends its channel just as when it has listed every key.
type cutLister struct{ keys chan string }

func (l cutLister) Keys() <-chan string { return l.keys }
func (l cutLister) Stop() error         { return nil }

type cutKV struct {
	jetstream.KeyValue
	cancel context.CancelFunc
}

func (k cutKV) Bucket() string { return "CUT" }

func (k cutKV) ListKeys(context.Context, ...jetstream.WatchOpt) (jetstream.KeyLister, error) {
	ch := make(chan string, 1)
	ch <- "first"
	close(ch)
	k.cancel()
	return cutLister{ch}, nil
}

// A listing of keys cut short by its context is an error, not a shorter
// list (a worker would take leased sessions for orphans, a list request
// would answer with some sessions missing).
func TestKeysCutShortIsAnError(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got, err := keys(ctx, cutKV{cancel: cancel})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("keys of a listing cut short: got %v, %v; want an error wrapping context.Canceled", got, err)
	}
}

// lostReplyLeases is a lease bucket in memory whose next update is stored
// but answered with a timeout, as when the NATS node that took the request
// dies before it replies.
type lostReplyLeases struct {
	jetstream.KeyValue
	mu        sync.Mutex
	value     string
	rev       uint64
	loseReply bool
}

type leaseEntry struct {
	jetstream.KeyValueEntry
	value string
	rev   uint64
}

func (e leaseEntry) Value() []byte    { return []byte(e.value) }
func (e leaseEntry) Revision() uint64 { return e.rev }

func (k *lostReplyLeases) Update(_ context.Context, _ string, value []byte, rev uint64) (uint64, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if rev != k.rev {
		return 0, jetstream.ErrKeyExists
	}
	k.value, k.rev = string(value), k.rev+1
	if k.loseReply {
		k.loseReply = false
		return 0, context.DeadlineExceeded
	}
	return k.rev, nil
}

func (k *lostReplyLeases) Get(context.Context, string) (jetstream.KeyValueEntry, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return leaseEntry{value: k.value, rev: k.rev}, nil
}

// A renewal whose reply was lost but which was stored leaves the worker's
// revision of its lease behind the bucket's: the next renewal finds the
// lease still the worker's and keeps it (instead of taking it for lost and
// stopping the session); a lease someone else wrote meanwhile is lost.
func TestWorkerRenewalWithLostReply(t *testing.T) {
	for _, tc := range []struct {
		name     string
		intruder bool // another worker writes the lease after the lost reply
		wantLost bool
	}{
		{name: "stored", wantLost: false},
		{name: "taken since", intruder: true, wantLost: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kv := &lostReplyLeases{value: "w", rev: 1, loseReply: true}
			w := &Worker{cfg: WorkerConfig{Name: "w", RenewEvery: time.Second, LeaseTTL: time.Minute}, logger: hclog.NewNullLogger(),
				leases: kv, held: map[string]*lease{"s": {rev: 1, renewed: time.Now()}}}
			w.renew("s") // stored, reply lost
			if l := w.held["s"]; l.lost || l.rev != 1 {
				t.Fatalf("after a lost reply: lost %v, rev %d; want kept at rev 1", l.lost, l.rev)
			}
			if tc.intruder {
				kv.value, kv.rev = "other", kv.rev+1
			}
			w.renew("s")
			l := w.held["s"]
			if l.lost != tc.wantLost {
				t.Fatalf("after the next renewal: lost %v, want %v", l.lost, tc.wantLost)
			}
			if !tc.wantLost && l.rev != kv.rev {
				t.Errorf("after the next renewal: rev %d, want the bucket's %d", l.rev, kv.rev)
			}
		})
	}
}

// A lease released after a renewal whose reply was lost (stored, the
// worker's revision left behind) is deleted, not left to expire.
func TestWorkerReleaseAfterLostReply(t *testing.T) {
	node := mustNode(t)
	nc, err := node.Connect("test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js, _ := jetstream.New(nc)
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "LEASES"})
	if err != nil {
		t.Fatal(err)
	}
	rev, err := kv.Create(ctx, "s", []byte("w"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Update(ctx, "s", []byte("w"), rev); err != nil { // the renewal whose reply was lost
		t.Fatal(err)
	}
	w := &Worker{cfg: WorkerConfig{Name: "w"}, logger: testLogger(t), leases: kv, held: map[string]*lease{"s": {rev: rev, renewed: time.Now()}}}
	w.release("s")
	if e, err := kv.Get(ctx, "s"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("after the release: got %v, %v; want the lease gone", e, err)
	}
}

// failingAgent is an agent whose backend always fails.
type failingAgent struct{}

func (failingAgent) Decide(context.Context, org.Observation) ([]org.Action, error) {
	return nil, errors.New("the model endpoint refused the connection")
}

// A session that ended failed because its agents failed every turn, whose
// worker died before the cluster recorded it so (its metadata still says
// running, no lease), is not resumed by the worker that adopts it: that
// worker records it failed, as its log ends, and appends nothing.
func TestWorkerDoesNotResumeAFailedSession(t *testing.T) {
	node := mustNode(t)
	cfg := WorkerConfig{LeaseTTL: 30 * time.Second, RenewEvery: time.Second, ScanEvery: time.Second / 2}
	a, _ := mustWorkerLLM(t, node, "a", 100, cfg, failingAgent{})
	op, err := client.Dial(node.ClientURL(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	js, _ := jetstream.New(op.Conn())
	r, err := op.Create(ctx, wire.CreateRequest{World: "startup", Seed: 1, Agents: "llm"})
	if err != nil {
		t.Fatal(err)
	}
	id := r.Session
	m := waitMeta(t, ctx, js, id, events.StatusFailed)
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	if err := a.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	scancel()
	n := streamed(t, ctx, js, id)
	if n == 0 || m.LastSeq != n {
		t.Fatalf("precondition: %d events streamed, the metadata records %d", n, m.LastSeq)
	}
	// The worker died after the log's end, before the metadata's.
	kv, err := js.KeyValue(ctx, jsreplica.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	m.Status = events.StatusRunning
	b, _ := json.Marshal(m)
	if _, err := kv.Put(ctx, id, b); err != nil {
		t.Fatal(err)
	}
	w, wlog := mustWorkerLLM(t, node, "b", 100, cfg, failingAgent{})
	got := waitMeta(t, ctx, js, id, events.StatusFailed)
	time.Sleep(2 * cfg.ScanEvery) // scans that would adopt it again
	if after := streamed(t, ctx, js, id); after != n {
		t.Errorf("the adopted session went on: the stream grew from %d to %d events", n, after)
	}
	if got.LastSeq != n || got.StateHash != m.StateHash {
		t.Errorf("recorded failed at %d (hash %s), want %d (%s)", got.LastSeq, got.StateHash, n, m.StateHash)
	}
	w.svc.mu.Lock()
	_, ran := w.svc.sessions[id]
	w.svc.mu.Unlock()
	if ran {
		t.Error("worker b ran the session again")
	}
	if lm, err := wlog.Session(ctx, id); err != nil || lm.Status != events.StatusFailed {
		t.Errorf("worker b's log: %+v, %v; want the session failed", lm, err)
	}
	if owner := leaseOwnerOrNone(js, id); owner != "" {
		t.Errorf("the failed session keeps a lease by %s", owner)
	}
}

// A cluster's metadata that does not decode hides no other session: the
// workers' list (and the CLI's ClusterSessions) gives the others, and the
// list's reply says what is damaged (wire.DamagedHeader).
func TestWorkerListsBesideDamagedMetadata(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	node := mustNode(t)
	var said simtest.Buffer
	mustWorkerWith(t, node, "w", WorkerConfig{ScanEvery: 20 * time.Millisecond}, Config{Logger: hclog.New(&hclog.LoggerOptions{Output: &said, Level: hclog.Info}), MaxSessions: 4})
	op, err := client.Dial(node.ClientURL(), "")
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	js, _ := jetstream.New(op.Conn())
	kv, err := js.KeyValue(ctx, jsreplica.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	good, _ := json.Marshal(events.SessionMeta{ID: "a", World: "startup", Status: events.StatusFinished})
	// b does not decode; c decodes but names a (a flipped bit in its ID).
	for id, v := range map[string][]byte{"a": good, "b": []byte("scrambled"), "c": good} {
		if _, err := kv.Put(ctx, id, v); err != nil {
			t.Fatal(err)
		}
	}
	msg, err := op.Conn().RequestWithContext(ctx, wire.ListSubject, []byte("{}"))
	if err != nil {
		t.Fatal(err)
	}
	var metas []events.SessionMeta
	h := msg.Header.Get(wire.DamagedHeader)
	if err := json.Unmarshal(msg.Data, &metas); err != nil || len(metas) != 1 || metas[0].ID != "a" || !strings.Contains(h, "session b") || !strings.Contains(h, "session c") {
		t.Fatalf("list: %s (header %q); want session a, and b and c named damaged", msg.Data, h)
	}
	all, err := ClusterSessions(ctx, js)
	if len(all) != 1 || all[0].ID != "a" || !errors.As(err, new(*events.DamagedError)) {
		t.Fatalf("ClusterSessions: %+v, %v; want a, and the damage", all, err)
	}
	// The adoption scan says so once per entry, not at every scan.
	for strings.Count(said.String(), "unreadable session metadata") < 2 && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // about 15 scans more
	if n := strings.Count(said.String(), "unreadable session metadata"); n != 2 {
		t.Fatalf("the scan warned %d times of the 2 damaged entries; want once each:\n%s", n, said.String())
	}
}
