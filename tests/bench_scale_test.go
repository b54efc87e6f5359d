package tests

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/worlds"
)

// The scale benchmarks behind tests/bench.sh. Each runs whole sessions
// through app.Run — the world loaded from a file, greedy agents played in
// process (the default; the event feed on an embedded NATS bus), the
// driver — with in-memory logs, and reports events
// per wall second and the process's peak resident set. Run one per process
// (bench.sh does), with -benchtime=1x: peak RSS is the process's, and
// BenchmarkScaleWorld may leave its session running when its time is up.
// They report; nothing here fails on a figure.

// BenchmarkConcurrentSessions runs BENCH_SESSIONS (100) sessions of the
// shipped world BENCH_SESSIONS_WORLD (support-desk) at once in one process,
// seeds 1..N, sharing one embedded bus, each with its own in-memory log and
// the default checkpoint interval, as `corpsim eval --parallel N` does.
// They are started startBatch at a time (see below); peak-running reports
// how many were running together at most.
func BenchmarkConcurrentSessions(b *testing.B) {
	n := benchEnvInt("BENCH_SESSIONS", 100)
	world := benchEnvStr("BENCH_SESSIONS_WORLD", "support-desk")
	srv, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Shutdown()
	var evs, tickets atomic.Uint64
	var running, peak atomic.Int64
	b.ResetTimer()
	for range b.N {
		var wg sync.WaitGroup
		errs := make([]error, n)
		// At most startBatch sessions are starting (loading the world,
		// connecting to the bus) at once; a slot is free again once the
		// session's first batch is durable. A thousand handshakes at once,
		// among the sessions already running, outlast nats.go's connect
		// timeout on two cores.
		starting := make(chan struct{}, startBatch)
		for i := range n {
			starting <- struct{}{}
			wg.Go(func() {
				var once sync.Once
				var counted atomic.Bool
				defer once.Do(func() { <-starting }) // it ended before its first batch
				progress := func(uint64, int64) {
					once.Do(func() {
						<-starting
						counted.Store(true)
						r := running.Add(1)
						for p := peak.Load(); r > p && !peak.CompareAndSwap(p, r); p = peak.Load() {
						}
					})
				}
				res, err := app.Run(context.Background(), app.RunOptions{World: world, Seed: uint64(i + 1), Agents: "greedy",
					Log: memlog.New(), Bus: srv, Progress: progress})
				if counted.Load() {
					running.Add(-1)
				}
				if err != nil {
					errs[i] = err
					return
				}
				evs.Add(res.Events)
				tickets.Add(uint64(res.Score.TicketsResolved))
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	s := b.Elapsed().Seconds()
	b.ReportMetric(float64(n), "sessions")
	b.ReportMetric(float64(peak.Load()), "peak-running")
	b.ReportMetric(float64(evs.Load())/float64(b.N), "events/op")
	b.ReportMetric(float64(evs.Load())/s, "events/s")
	b.ReportMetric(float64(tickets.Load())/s, "tickets/s")
	b.ReportMetric(peakRSSMiB(), "peak-RSS-MiB")
}

// BenchmarkScaleWorld runs one session of a generated world with
// BENCH_SCALE_MEMBERS (10,000) members and BENCH_SCALE_TASKS (100,000)
// tasks — 100 teams, one project of 1,000 tasks per team, staggered a day
// apart, work offered to one seat at a time (dispatch: one; with dispatch
// all, every completion asks every idle seat of the role in all teams and
// the session grows as tasks × members) — for at most BENCH_SCALE_SECONDS
// (600) of wall time. It reports the
// events made in that time per second (counting from the first durable
// batch, so the world's loading is not in it), the seconds until that first
// batch (world load and validation), whether the session finished, and the
// peak RSS, and its whole wall time (wall-s: the world's loading, the
// session to its end, or the budget). A session still running when time is up is cancelled and not
// waited for.
func BenchmarkScaleWorld(b *testing.B) {
	members := benchEnvInt("BENCH_SCALE_MEMBERS", 10_000)
	tasks := benchEnvInt("BENCH_SCALE_TASKS", 100_000)
	budget := time.Duration(benchEnvInt("BENCH_SCALE_SECONDS", 600)) * time.Second
	teams := max(members/100, 1)
	src := worlds.Generate(worlds.GenOptions{Name: "scale", Seed: 1, Teams: teams, Members: members,
		Projects: teams, Tasks: max(tasks/teams, 1), Chains: 10, Stagger: 1, Dispatch: worlds.DispatchOne})
	file := filepath.Join(b.TempDir(), "scale.yaml")
	if err := os.WriteFile(file, src, 0o644); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		var seq, firstNs, lastNs atomic.Int64
		start := time.Now()
		progress := func(s uint64, _ int64) {
			now := int64(time.Since(start))
			firstNs.CompareAndSwap(0, now)
			seq.Store(int64(s))
			lastNs.Store(now)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := app.Run(ctx, app.RunOptions{World: file, Seed: 1, Agents: "greedy", Ephemeral: true, Progress: progress})
			done <- err
		}()
		finished := 0.0
		var wall time.Duration
		select {
		case err := <-done:
			if err != nil {
				b.Fatal(err)
			}
			finished = 1
			wall = time.Since(start)
		case <-time.After(budget):
			wall = time.Since(start)
			lastNs.Store(int64(wall))
		}
		cancel()
		first := time.Duration(firstNs.Load())
		if first == 0 {
			first = time.Since(start) // not even the first batch
		}
		b.ReportMetric(first.Seconds(), "first-batch-s")
		b.ReportMetric(float64(seq.Load()), "events")
		if d := time.Duration(lastNs.Load()) - first; d > 0 {
			b.ReportMetric(float64(seq.Load())/d.Seconds(), "events/s")
		} else {
			b.ReportMetric(0, "events/s")
		}
		b.ReportMetric(finished, "finished")
		b.ReportMetric(wall.Seconds(), "wall-s")
		b.ReportMetric(peakRSSMiB(), "peak-RSS-MiB")
	}
}

// peakRSSMiB is this process's peak resident set so far, in MiB.
func peakRSSMiB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return float64(ru.Maxrss) / (1 << 20)
	}
	return float64(ru.Maxrss) / 1024
}

// startBatch is how many sessions BenchmarkConcurrentSessions lets start at once.
const startBatch = 64

func benchEnvInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func benchEnvStr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
