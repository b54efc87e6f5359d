package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/corpsim/corpsim/agents/client"
	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/jsreplica"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/sim/server"
)

// workerProc is a `corpsim serve --worker` process.
type workerProc struct {
	name           string
	cmd            *exec.Cmd
	stdout, stderr lockedBuffer
	done           chan struct{}
}

func startWorker(tb testing.TB, name, urls string, args ...string) *workerProc {
	tb.Helper()
	dir := tb.TempDir()
	args = append([]string{"--log-level", "info", "serve", "--nats", urls, "--worker", name, "--data", filepath.Join(dir, "data")}, args...)
	p := &workerProc{name: name, cmd: exec.Command(corpsimBinary(tb), args...), done: make(chan struct{})}
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	tb.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.done:
			case <-time.After(15 * time.Second):
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}
		if tb.Failed() {
			tb.Logf("worker %s, the last lines of its log:\n%s", name, lastLines(p.stderr.String(), 40))
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(p.stdout.String(), "corpsim worker "+name+" serving") {
		select {
		case <-p.done:
			tb.Fatalf("worker %s exited: %s", name, p.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("worker %s did not start: %s", name, p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return p
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// linesAbout is the last n lines of s that mention word.
func linesAbout(s, word string, n int) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out[max(0, len(out)-n):], "\n")
}

// requestFor bounds each request the failover tests make to the cluster.
// The tests' own context is a liveness bound of minutes; a request that a
// NATS node took just as it was shut down is never answered (nor failed:
// nats.go waits for the reply until the context ends), and one status read
// bounded by the tests' context alone held TestFailoverNATSNodeKilled to
// its end, every session long finished, then read 30 empty statuses.
const requestFor = 5 * time.Second

// TestFailoverWorkerKilled: three embedded NATS nodes in a cluster, three
// `corpsim serve --worker` processes; 30 sessions created through the
// queue group spread over the workers; one worker is killed with SIGKILL
// while its sessions run. Every one of its sessions is adopted by another
// worker and finishes, and every session's log, restored from the stream,
// is gapless, has no duplicates and replays to the recorded state hash.
func TestFailoverWorkerKilled(t *testing.T) { failover(t, false) }

// TestFailoverNATSNodeKilled: the same, but one of the three NATS nodes
// (the log stream's leader) is shut down instead of a worker: the workers'
// connections move to the other nodes, replication retries through the new
// stream leader, sessions whose leases could not be renewed in time stop
// and are adopted; every session finishes and verifies.
func TestFailoverNATSNodeKilled(t *testing.T) { failover(t, true) }

func failover(t *testing.T, killNode bool) {
	const sessions = 30
	world := "support-desk"
	// A liveness bound, not a speed figure: on two shared cores, with other
	// packages' tests running beside this one, re-electing the stream's
	// leader and adopting 30 sessions has taken minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	logger := testLogger(t)
	nodes := startCluster(t, logger)
	var urls []string
	for _, n := range nodes {
		urls = append(urls, n.ClientURL())
	}
	url := strings.Join(urls, ",")
	workers := map[string]*workerProc{}
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("w%d", i)
		workers[name] = startWorker(t, name, url, "--turn-timeout", "5s")
	}

	op, err := client.Dial(url, "")
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	leases, err := js.KeyValue(ctx, server.LeaseBucket)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, 0, sessions)
	for i := range sessions {
		reply, err := op.Create(ctx, wire.CreateRequest{World: world, Seed: uint64(i + 1), Agents: "greedy"})
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
		ids = append(ids, reply.Session)
	}
	// Who runs what: the leases.
	owner := map[string]string{}
	for _, id := range ids {
		e, err := leases.Get(ctx, id)
		if err != nil {
			t.Fatalf("session %s has no lease: %v", id, err)
		}
		owner[id] = string(e.Value())
	}
	perWorker := map[string][]string{}
	for _, id := range ids {
		perWorker[owner[id]] = append(perWorker[owner[id]], id)
	}
	if len(perWorker) < 2 {
		t.Fatalf("all %d sessions went to one worker: %v", sessions, perWorker)
	}
	// The victim: the worker with the most sessions; killed once each of
	// them has events in the stream, while some still run.
	victim := ""
	for w, s := range perWorker {
		if victim == "" || len(s) > len(perWorker[victim]) {
			victim = w
		}
	}
	st, err := js.Stream(ctx, jsreplica.Stream)
	if err != nil {
		t.Fatal(err)
	}
	metaKV, err := js.KeyValue(ctx, jsreplica.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	// status reads a session's recorded metadata: a read that fails (a
	// request lost with a node, a leader being elected) is tried again.
	statusErr := func(ctx context.Context, id string) (events.SessionMeta, error) {
		var m events.SessionMeta
		err := ctx.Err()
		for try := 1; try <= 3 && ctx.Err() == nil; try++ {
			rctx, cancel := context.WithTimeout(ctx, requestFor)
			var e jetstream.KeyValueEntry
			if e, err = metaKV.Get(rctx, id); err == nil {
				err = json.Unmarshal(e.Value(), &m)
			}
			cancel()
			if err == nil {
				return m, nil
			}
		}
		return m, err
	}
	status := func(id string) events.SessionMeta {
		m, _ := statusErr(ctx, id)
		return m
	}
	// report tells, on a failure, where each unfinished session stands in
	// the cluster and what the workers logged about it (startWorker's
	// cleanup adds the last lines of each worker's log).
	report := func(unfinished []string) {
		lctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		all, err := server.ClusterSessions(lctx, js)
		cancel()
		cluster := map[string]server.ClusterSession{}
		if err != nil {
			t.Logf("the cluster's sessions: %v", err)
		} else {
			for _, s := range all {
				cluster[s.ID] = s
			}
		}
		for _, id := range unfinished {
			rctx, cancel := context.WithTimeout(context.Background(), 3*requestFor)
			m, err := statusErr(rctx, id)
			cancel()
			recorded := fmt.Sprintf("status %q, last seq %d", m.Status, m.LastSeq)
			if err != nil {
				recorded = fmt.Sprintf("unread (%v)", err)
			}
			cs := cluster[id]
			t.Logf("session %s: metadata %s; the stream holds %d events; lease held by %q; last run by %q",
				id, recorded, cs.Events, cs.Leased, cs.Worker)
			for _, name := range []string{"w1", "w2", "w3"} {
				if w := workers[name]; w != nil {
					if lines := linesAbout(w.stderr.String(), id, 8); lines != "" {
						t.Logf("session %s in worker %s's log:\n%s", id, name, lines)
					}
				}
			}
		}
	}
	for deadline := time.Now().Add(time.Minute); ; {
		rctx, rcancel := context.WithTimeout(ctx, requestFor)
		info, err := st.Info(rctx, jetstream.WithSubjectFilter(jsreplica.SubjectPrefix+">"))
		rcancel()
		if err != nil {
			t.Fatal(err)
		}
		ready := true
		for _, id := range perWorker[victim] {
			if info.State.Subjects[jsreplica.Subject(id)] < 50 {
				ready = false
			}
		}
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the victim's sessions did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var killedAt time.Time
	var orphans []string
	if killNode {
		var dead *natsserver.Node
		for _, n := range nodes {
			if n.StreamLeader(jsreplica.Stream) {
				dead = n
			}
		}
		if dead == nil {
			dead = nodes[0]
		}
		running := 0
		for _, id := range ids {
			if status(id).Status == events.StatusRunning {
				running++
			}
		}
		dead.Shutdown()
		killedAt = time.Now()
		t.Logf("sessions per worker: %v; shut down NATS node %s (the stream leader) with %d session(s) running", counts(perWorker), dead.Name(), running)
		if running == 0 {
			t.Fatal("every session finished before the node was shut down")
		}
		victim = ""
	} else {
		if err := workers[victim].cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-workers[victim].done
		killedAt = time.Now()
		for _, id := range perWorker[victim] {
			if status(id).Status == events.StatusRunning {
				orphans = append(orphans, id)
			}
		}
		t.Logf("sessions per worker: %v; killed %s with %d session(s) still running", counts(perWorker), victim, len(orphans))
		if len(orphans) == 0 {
			t.Fatalf("the victim's sessions all finished before the kill; nothing to fail over")
		}
	}

	// Every session finishes.
	for lastNews := time.Now(); ; {
		var left []string
		for _, id := range ids {
			if status(id).Status != events.StatusFinished {
				left = append(left, id)
			}
		}
		if len(left) == 0 {
			break
		}
		if ctx.Err() != nil {
			report(left)
			t.Fatalf("%d sessions did not finish", len(left))
		}
		if time.Since(lastNews) > 30*time.Second {
			t.Logf("%d sessions not finished %v after the kill", len(left), time.Since(killedAt).Round(time.Second))
			lastNews = time.Now()
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("all %d sessions finished %v after the kill", sessions, time.Since(killedAt).Round(time.Millisecond))
	octx, ocancel := context.WithTimeout(ctx, requestFor)
	owners, err := js.KeyValue(octx, server.OwnerBucket)
	ocancel()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range orphans {
		rctx, rcancel := context.WithTimeout(ctx, requestFor)
		e, err := owners.Get(rctx, id)
		rcancel()
		if err != nil {
			t.Fatal(err)
		}
		var o struct{ Worker string }
		if err := json.Unmarshal(e.Value(), &o); err != nil {
			t.Fatal(err)
		}
		if got := o.Worker; got == victim || got == "" {
			t.Errorf("session %s: finished by %s, the killed worker", id, got)
		}
	}

	// Every log, restored from the stream: gapless, no duplicates, replays
	// to the recorded state hash.
	ictx, icancel := context.WithTimeout(ctx, requestFor)
	info, err := st.Info(ictx, jetstream.WithSubjectFilter(jsreplica.SubjectPrefix+">"))
	icancel()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	sem := make(chan struct{}, 4)
	for _, id := range ids {
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			meta, err := statusErr(ctx, id)
			if err != nil {
				errs <- fmt.Errorf("session %s: read its metadata: %w", id, err)
				return
			}
			if n := info.State.Subjects[jsreplica.Subject(id)]; n != meta.LastSeq {
				errs <- fmt.Errorf("session %s: the stream holds %d messages for %d events", id, n, meta.LastSeq)
				return
			}
			// Restore retries only a fetch that finds its new consumer not
			// ready; other transient failures (a request lost, a leader
			// being elected): a few tries, each into a fresh log.
			var l events.Log
			var last uint64
			for try := 1; ; try++ {
				l = memlog.New()
				rctx, rcancel := context.WithTimeout(ctx, time.Minute)
				last, err = jsreplica.Restore(rctx, js, id, l)
				rcancel()
				if err == nil || try == 5 {
					break
				}
				t.Logf("session %s: restore, try %d: %v", id, try, err)
				time.Sleep(time.Duration(try) * 200 * time.Millisecond)
			}
			if err != nil {
				errs <- fmt.Errorf("session %s: restore: %w", id, err)
				return
			}
			if last != meta.LastSeq {
				errs <- fmt.Errorf("session %s: restored %d events, want %d", id, last, meta.LastSeq)
				return
			}
			rmeta, err := l.Session(ctx, id)
			if err != nil {
				errs <- err
				return
			}
			rep := driver.Verify(ctx, l, rmeta)
			if !rep.OK || rep.StateHash != meta.StateHash || rep.Events != meta.LastSeq {
				errs <- fmt.Errorf("session %s: verify %+v; want hash %s over %d events", id, rep, meta.StateHash, meta.LastSeq)
			}
		}(id)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	// The cluster-wide listing names the worker of each session.
	var live []string
	for _, n := range nodes {
		if n.Running() {
			live = append(live, n.ClientURL())
		}
	}
	out, stderr, code := corpsimIn(t, t.TempDir(), "sessions", "--nats", strings.Join(live, ","))
	if code != 0 {
		t.Fatalf("corpsim sessions --nats: exit %d: %s", code, stderr)
	}
	if n := strings.Count(out, " finished "); n != sessions {
		t.Errorf("corpsim sessions --nats lists %d finished sessions, want %d:\n%s", n, sessions, out)
	}
	t.Logf("corpsim sessions --nats:\n%s", tail(out, 1500))
}

func counts(m map[string][]string) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		out[k] = len(v)
	}
	return out
}

// BenchmarkWorkers measures sessions/second of a cluster of 1, 2 and 3
// in-process workers on three embedded NATS nodes (R3 stream and
// buckets): b.N sessions of the startup world with greedy seats are
// created through the queue group at once, and the clock stops when the
// cluster's metadata records every one finished.
func BenchmarkWorkers(b *testing.B) {
	for _, n := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("workers=%d", n), func(b *testing.B) {
			ctx := context.Background()
			nodes, err := natsserver.StartCluster(b.TempDir(), 3, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				for _, nd := range nodes {
					nd.Shutdown()
				}
			}()
			var urls []string
			for _, nd := range nodes {
				urls = append(urls, nd.ClientURL())
			}
			url := strings.Join(urls, ",")
			for i := range n {
				bus := natsserver.External{URL: url}
				nc, err := bus.Connect("bench-worker")
				if err != nil {
					b.Fatal(err)
				}
				defer nc.Close()
				w, err := server.NewWorker(ctx, server.WorkerConfig{Name: fmt.Sprintf("w%d", i+1), Conn: nc},
					server.Config{Log: mustOpenPebble(b), Bus: bus, Logger: testLogger(b)})
				if err != nil {
					b.Fatal(err)
				}
				defer func() { _ = w.Shutdown(ctx) }()
			}
			op, err := client.Dial(url, "")
			if err != nil {
				b.Fatal(err)
			}
			defer op.Close()
			js, _ := jetstream.New(op.Conn())
			kv, err := js.KeyValue(ctx, jsreplica.Bucket)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			start := time.Now()
			ids := make([]string, 0, b.N)
			for i := range b.N {
				r, err := op.Create(ctx, wire.CreateRequest{World: "startup", Seed: uint64(i + 1), Agents: "greedy"})
				if err != nil {
					b.Fatal(err)
				}
				ids = append(ids, r.Session)
			}
			var events uint64
			for _, id := range ids {
				for {
					var m eventsMeta
					if e, err := kv.Get(ctx, id); err == nil && json.Unmarshal(e.Value(), &m) == nil && m.Status == "finished" {
						events += m.LastSeq
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			el := time.Since(start).Seconds()
			b.ReportMetric(float64(b.N)/el, "sessions/s")
			b.ReportMetric(float64(events)/el, "events/s")
		})
	}
}

type eventsMeta struct {
	Status  string `json:"status"`
	LastSeq uint64 `json:"last_seq"`
}
