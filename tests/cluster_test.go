package tests

import (
	"github.com/hashicorp/go-hclog"

	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/natshost"
	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/jsreplica"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/worlds"
)

// A session run by the driver on a three-node cluster replicates to an R3
// stream; the node that leads the stream, and that the replica is connected
// to, is shut down in the middle; the session still finishes, and a
// restore through another node gives a log that is gapless, has no
// duplicates, equals the worker's event for event and replays to the
// state hash the run recorded.
func TestClusterReplicaSurvivesANodeAndRestores(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	logger := testLogger(t)
	nodes := startCluster(t, logger)
	// The worker's bus (turns, the event feed) is node 0, in-process; its
	// replica connects over TCP to the node about to die first.
	bus := nodes[0]
	rc := clusterConn(t, nodes[0]) // creates the stream, so that it has a leader to find
	if _, err := jsreplica.New(ctx, rc, jsreplica.Config{Replicas: 3, Logger: logger}); err != nil {
		t.Fatal(err)
	}
	rc.Close()
	victim := clusterStreamLeaderOff(t, ctx, nodes, bus)
	var urls []string
	urls = append(urls, victim.ClientURL())
	for _, n := range nodes {
		if n != victim {
			urls = append(urls, n.ClientURL())
		}
	}
	nc, err := nats.Connect(strings.Join(urls, ","), nats.Name("replica"), nats.DontRandomize(), nats.MaxReconnects(-1),
		nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if got := nc.ConnectedServerName(); got != victim.Name() {
		t.Fatalf("replica connected to %s, want %s", got, victim.Name())
	}
	replica, err := jsreplica.New(ctx, nc, jsreplica.Config{Replicas: 3, Logger: logger, RetryFor: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}

	src, err := worlds.Source("support-desk")
	if err != nil {
		t.Fatal(err)
	}
	w, err := worlds.Load("support-desk.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	const session, seed = "c1", 3
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: seed, Session: session})
	if err != nil {
		t.Fatal(err)
	}
	seats := map[string]agents.Agent{}
	names := map[string]string{}
	for _, m := range w.Members {
		ag, err := agents.New("greedy", agents.Options{Seed: seed, Member: m.ID})
		if err != nil {
			t.Fatal(err)
		}
		seats[m.ID], names[m.ID] = ag, "greedy"
	}
	hc, err := bus.Connect("agents")
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	host, err := natshost.Serve(hc, session, seats, natshost.Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	dc, err := bus.Connect("driver")
	if err != nil {
		t.Fatal(err)
	}
	defer dc.Close()

	// Kill the victim once a third of the session is replicated; slow the
	// session down while it dies so that many batches cross the failure.
	var (
		once    sync.Once
		killed  = make(chan struct{})
		started = make(chan struct{})
		killAt  time.Time
		killSeq uint64
	)
	progress := func(seq uint64, _ int64) {
		if seq < 1200 {
			return
		}
		once.Do(func() {
			killAt, killSeq = time.Now(), seq
			close(started)
			go func() {
				victim.Shutdown()
				close(killed)
			}()
		})
	}
	gate := func(ctx context.Context) error {
		select {
		case <-started:
		default:
			return nil
		}
		select {
		case <-killed:
		default:
			time.Sleep(2 * time.Millisecond)
		}
		return nil
	}
	local := mustOpenPebble(t)
	meta := events.SessionMeta{ID: session, World: w.Name, WorldHash: w.Hash, Seed: seed, Agents: names,
		Created: time.Now().UTC().Format(time.RFC3339)}
	if err := replica.PutSession(ctx, withStatus(meta, events.StatusRunning)); err != nil {
		t.Fatal(err)
	}
	d := driver.New(driver.Config{Log: local, Conn: dc, Logger: logger, Replica: replica, Interest: bus.Interest,
		Progress: progress, Gate: gate, TurnTimeout: 20 * time.Second})
	start := time.Now()
	meta, err = d.Run(ctx, meta, e)
	if err != nil {
		t.Fatalf("the session did not survive the loss of %s: %v", victim.Name(), err)
	}
	elapsed := time.Since(start)
	<-killed
	if err := replica.PutSession(ctx, meta); err != nil {
		t.Fatal(err)
	}
	if killSeq == 0 || killSeq >= meta.LastSeq {
		t.Fatalf("the node was killed at seq %d of %d", killSeq, meta.LastSeq)
	}
	if got := nc.ConnectedServerName(); got == victim.Name() {
		t.Fatalf("replica still connected to %s", got)
	}
	t.Logf("%d events in %v (%.0f/s), %s killed at seq %d, %v after the start; replica now on %s",
		meta.LastSeq, elapsed, float64(meta.LastSeq)/elapsed.Seconds(), victim.Name(), killSeq, killAt.Sub(start), nc.ConnectedServerName())

	// Restore through a surviving node into a fresh Pebble store.
	var other *natsserver.Node
	for _, n := range nodes {
		if n.Running() && n != bus {
			other = n
		}
	}
	if other == nil {
		other = bus
	}
	oc, err := other.Connect("restorer")
	if err != nil {
		t.Fatal(err)
	}
	defer oc.Close()
	js, err := jetstream.New(oc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, jsreplica.Stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx, jetstream.WithSubjectFilter(jsreplica.Subject(session)))
	if err != nil {
		t.Fatal(err)
	}
	if got := info.State.Subjects[jsreplica.Subject(session)]; got != meta.LastSeq {
		t.Fatalf("the stream holds %d messages for %d events", got, meta.LastSeq)
	}
	if info.Config.Replicas != 3 {
		t.Fatalf("got %d replicas, want 3", info.Config.Replicas)
	}
	restored := mustOpenPebble(t)
	rstart := time.Now()
	last, err := jsreplica.Restore(ctx, js, session, restored)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("restored %d events through %s in %v", last, other.Name(), time.Since(rstart))
	if last != meta.LastSeq {
		t.Fatalf("restored %d events, want %d", last, meta.LastSeq)
	}
	sameLogs(t, local, session, restored, session, 1)
	rmeta, err := restored.Session(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	if rmeta.Status != events.StatusFinished || rmeta.StateHash != meta.StateHash {
		t.Fatalf("restored metadata %+v, want finished with hash %s", rmeta, meta.StateHash)
	}
	rep := driver.Verify(ctx, restored, rmeta)
	if !rep.OK || rep.StateHash != meta.StateHash || rep.Events != meta.LastSeq {
		t.Fatalf("verify of the restored log: %+v; want hash %s over %d events", rep, meta.StateHash, meta.LastSeq)
	}
	// The engine resumes from the restored log at its recorded end.
	re, _, err := driver.Load(ctx, restored, session, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := re.EndStateHash(); got != meta.StateHash {
		t.Fatalf("loaded engine's end state hash %s, want %s", got, meta.StateHash)
	}
}

// A session interrupted mid-run on one worker resumes on another from the
// stream, and the two halves make the same log as an uninterrupted run.
func TestClusterResumeOnAnotherWorker(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	logger := testLogger(t)
	nodes := startCluster(t, logger)
	src, err := worlds.Source("procurement")
	if err != nil {
		t.Fatal(err)
	}
	w, err := worlds.Load("procurement.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	const session, seed = "c2", 4
	run := func(node *natsserver.Node, local events.Log, stopAt uint64, resume bool) events.SessionMeta {
		t.Helper()
		nc, err := node.Connect("worker-" + node.Name())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		replica, err := jsreplica.New(ctx, nc, jsreplica.Config{Replicas: 3, Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		seats := map[string]agents.Agent{}
		names := map[string]string{}
		for _, m := range w.Members {
			ag, _ := agents.New("greedy", agents.Options{Seed: seed, Member: m.ID})
			seats[m.ID], names[m.ID] = ag, "greedy"
		}
		host, err := natshost.Serve(nc, session, seats, natshost.Options{Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		defer host.Close()
		rctx, stop := context.WithCancel(ctx)
		defer stop()
		progress := func(seq uint64, _ int64) {
			if stopAt > 0 && seq >= stopAt {
				stop()
			}
		}
		d := driver.New(driver.Config{Log: local, Conn: nc, Logger: logger, Replica: replica, Progress: progress})
		var meta events.SessionMeta
		if !resume {
			e, err := sim.New(sim.Config{World: w, Source: src, Seed: seed, Session: session})
			if err != nil {
				t.Fatal(err)
			}
			meta = events.SessionMeta{ID: session, World: w.Name, WorldHash: w.Hash, Seed: seed, Agents: names, Created: "2026-11-30T00:00:00Z"}
			if err := replica.PutSession(ctx, withStatus(meta, events.StatusRunning)); err != nil {
				t.Fatal(err)
			}
			meta, err = d.Run(rctx, meta, e)
			if err == nil {
				t.Fatal("the first worker finished the session")
			}
			return meta
		}
		js, _ := jetstream.New(nc)
		if _, err := jsreplica.Restore(ctx, js, session, local); err != nil {
			t.Fatal(err)
		}
		if meta, err = local.Session(ctx, session); err != nil {
			t.Fatal(err)
		}
		e, _, err := driver.Load(ctx, local, session, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if meta, err = d.Continue(ctx, meta, e); err != nil {
			t.Fatal(err)
		}
		if err := replica.PutSession(ctx, meta); err != nil {
			t.Fatal(err)
		}
		return meta
	}
	first := mustOpenPebble(t)
	stopped := run(nodes[0], first, 500, false)
	second := mustOpenPebble(t)
	final := run(nodes[1], second, 0, true)
	if final.Status != events.StatusFinished || final.LastSeq <= stopped.LastSeq {
		t.Fatalf("resumed session ended %s at %d (stopped at %d)", final.Status, final.LastSeq, stopped.LastSeq)
	}
	// An uninterrupted run with the same seed makes the same log.
	whole := mustOpenPebble(t)
	nc, err := nodes[2].Connect("whole")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	seats := map[string]agents.Agent{}
	for _, m := range w.Members {
		seats[m.ID], _ = agents.New("greedy", agents.Options{Seed: seed, Member: m.ID})
	}
	host, err := natshost.Serve(nc, session, seats, natshost.Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer host.Close()
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: seed, Session: session})
	if err != nil {
		t.Fatal(err)
	}
	wmeta, err := driver.New(driver.Config{Log: whole, Conn: nc, Logger: logger}).Run(ctx,
		events.SessionMeta{ID: session, World: w.Name, WorldHash: w.Hash, Seed: seed, Created: "2026-11-30T00:00:00Z"}, e)
	if err != nil {
		t.Fatal(err)
	}
	if wmeta.StateHash != final.StateHash {
		t.Fatalf("resumed run ends with hash %s, an uninterrupted one %s", final.StateHash, wmeta.StateHash)
	}
	sameLogs(t, whole, session, second, session, 1)
	// And the stream holds exactly the resumed log.
	check := mustOpenPebble(t)
	js, _ := jetstream.New(nc)
	if _, err := jsreplica.Restore(ctx, js, session, check); err != nil {
		t.Fatal(err)
	}
	sameLogs(t, whole, session, check, session, 1)
}

func withStatus(m events.SessionMeta, s events.Status) events.SessionMeta {
	m.Status = s
	return m
}

// clusterConn connects to a node in-process.
func clusterConn(t *testing.T, n *natsserver.Node) *nats.Conn {
	t.Helper()
	nc, err := n.Connect("setup")
	if err != nil {
		t.Fatal(err)
	}
	return nc
}

// clusterStreamLeaderOff returns the node leading the log stream, after
// moving the leadership off keep if keep had it.
func clusterStreamLeaderOff(t *testing.T, ctx context.Context, nodes []*natsserver.Node, keep *natsserver.Node) *natsserver.Node {
	t.Helper()
	nc := clusterConn(t, keep)
	defer nc.Close()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, n := range nodes {
			if !n.StreamLeader(jsreplica.Stream) {
				continue
			}
			if n != keep {
				return n
			}
			// Ask the leader to step down, and look again.
			_, _ = nc.RequestWithContext(ctx, "$JS.API.STREAM.LEADER.STEPDOWN."+jsreplica.Stream, nil)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("no stream leader besides the bus node")
	return nil
}

// startCluster starts three embedded NATS nodes with JetStream, clustered
// on loopback, and shuts down at the end of the test those still running.
func startCluster(t *testing.T, logger hclog.Logger) []*natsserver.Node {
	t.Helper()
	nodes, err := natsserver.StartCluster(t.TempDir(), 3, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			if n.Running() {
				n.Shutdown()
			}
		}
	})
	return nodes
}
