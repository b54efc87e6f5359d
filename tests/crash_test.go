package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/pebblelog"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/worlds"
)

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return v
	}
	return def
}

// busWatcher records every event a corpsim process publishes: each one was
// acknowledged, since nothing is published before its batch is durable.
type busWatcher struct {
	mu      sync.Mutex
	session string
	seen    map[uint64][]byte // seq -> encoded event
	max     uint64
}

func (w *busWatcher) handle(msg *nats.Msg) {
	var ev events.Event
	if err := json.Unmarshal(msg.Data, &ev); err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.session = ev.Session
	w.seen[ev.Seq] = events.Encode(&ev)
	w.max = max(w.max, ev.Seq)
}

func (w *busWatcher) state() (string, uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.session, w.max
}

// TestCrashAndResume starts the real corpsim writing a long session and
// kills it with SIGKILL at random moments, resuming it each time. After every
// kill the store must hold every event the process had published, with no
// gap and no corrupt tail; at the end the resumed session must equal, byte
// for byte, an uninterrupted run of the same world and seed.
//
// CORPSIM_CRASH_KILLS (default 30) and CORPSIM_CRASH_SEED (default 1) set
// the number of kills and the seed that picks their moments.
func TestCrashAndResume(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	kills := envInt("CORPSIM_CRASH_KILLS", 30)
	seed := uint64(envInt("CORPSIM_CRASH_SEED", 1))
	rng := rand.New(rand.NewPCG(seed, 99))
	t.Logf("kills=%d seed=%d (set CORPSIM_CRASH_KILLS and CORPSIM_CRASH_SEED to change)", kills, seed)

	bin := corpsimBinary(t)
	dir := t.TempDir()
	world := filepath.Join(dir, "crash.yaml")
	// Long enough for every kill: a kill lands after the feed has shown
	// its target and a few milliseconds more, in which an unloaded
	// machine writes hundreds of events (4,000 tasks, 66,137 events, once
	// ended after 28 kills of 30).
	if err := os.WriteFile(world, worlds.Generate(worlds.GenOptions{Seed: 5, Members: 10, Tasks: 8000, Chains: 10}), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")

	// The uninterrupted reference, in process and in memory.
	ref := memlog.New()
	refRes := mustRun(t, app.RunOptions{World: world, Seed: 3, Agents: "greedy", Log: ref, CheckpointEvery: -1})
	want := encodedLog(t, ref, refRes.Session)
	t.Logf("reference run: %d events", len(want))

	session, listed := "", ""
	done := 0
	var last uint64 // the store's last seq after the previous kill
	for i := 0; i <= kills; i++ {
		addr := freeAddr(t)
		args := []string{"run", "--world", world, "--seed", "3", "--data", data, "--listen", addr, "--checkpoint-every", "500", "--json"}
		if session != "" {
			args = []string{"resume", session, "--data", data, "--listen", addr, "--checkpoint-every", "500", "--json"}
		}
		cmd := exec.Command(bin, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()

		w := &busWatcher{seen: map[uint64][]byte{}}
		nc := connectWithRetry(t, "nats://"+addr, data, exited)
		if nc == nil { // the process ended before its bus was reachable
			t.Fatalf("run %d: corpsim exited before its bus came up: %s", i, stderr.String())
		}
		if i == 0 {
			// The listening bus admits only the holder of the operator token.
			if c, err := nats.Connect("nats://"+addr, nats.Timeout(time.Second)); err == nil {
				c.Close()
				t.Fatal("a connection without the operator token was admitted")
			}
			// sessions --nats lists the running session, the operator
			// token read from the data folder: its ID is what log
			// --follow needs, and run prints it only at its end.
			out, errs, code := runCLI(t, "sessions", "--nats", "nats://"+addr, "--data", data, "--json")
			// Asked once: the bus opens only after the run's list
			// responder subscribed.
			var cs struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			}
			if code != 0 || json.Unmarshal([]byte(out), &cs) != nil || cs.Status != "running" {
				t.Fatalf("sessions --nats exited %d: %s%s", code, out, errs)
			}
			listed = cs.ID
		}
		if _, err := nc.Subscribe("corpsim.v1.s.*.events", w.handle); err != nil {
			t.Fatal(err)
		}
		nc.Flush()

		if i == kills {
			// The last run goes to the end.
			select {
			case err := <-exited:
				if err != nil {
					t.Fatalf("final resume failed: %v\n%s", err, stderr.String())
				}
			case <-time.After(3 * time.Minute):
				cmd.Process.Kill()
				t.Fatal("final resume did not finish")
			}
			nc.Close()
			break
		}
		// Wait for some progress, then kill at a random moment.
		target := last + uint64(20+rng.IntN(300))
		deadline := time.Now().Add(30 * time.Second)
		finished := false
		for !finished {
			if _, m := w.state(); m >= target || time.Now().After(deadline) {
				break
			}
			select {
			case <-exited:
				finished = true
			case <-time.After(2 * time.Millisecond):
			}
		}
		if finished {
			nc.Close()
			t.Logf("run %d: the session finished before the kill", i)
			session = sessionOf(t, w, session)
			break
		}
		time.Sleep(time.Duration(rng.IntN(8)) * time.Millisecond) // a batch of in-process turns lands every few ms
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		nc.Close()
		done++
		session = sessionOf(t, w, session)
		if session != listed {
			t.Fatalf("sessions --nats listed %s; the run played %s", listed, session)
		}

		// Every acknowledged event is stored, gapless and readable.
		var ended bool
		if last, ended = checkStore(t, data, session, w); ended {
			// The signal came after the session's end was recorded (the
			// built-in agents are asked within batches: the last ones
			// land in a few milliseconds).
			done--
			t.Logf("run %d: the session finished before the kill", i)
			break
		}
		t.Logf("run %d: killed at event %d, %d past its target", i, last, int64(last)-int64(target))
	}
	if done < kills {
		t.Fatalf("killed %d times, want %d: the session is too short", done, kills)
	}

	// The resumed session equals the uninterrupted one, and replays.
	l, err := pebblelog.Open(data, pebblelog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := encodedLog(t, l, session)
	meta, err := l.Session(context.Background(), session)
	l.Close()
	if err != nil {
		t.Fatal(err)
	}
	if meta.Status != events.StatusFinished || meta.StateHash != refRes.StateHash {
		t.Errorf("after the last resume: status %s hash %s, want finished and %s", meta.Status, meta.StateHash, refRes.StateHash)
	}
	if len(got) != len(want) {
		t.Fatalf("resumed session has %d events, the uninterrupted run %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("event %d differs from the uninterrupted run", i+1)
		}
	}
	out, errs, code := runCLI(t, "verify", session, "--data", data)
	if code != 0 {
		t.Fatalf("verify exited %d: %s%s", code, out, errs)
	}
	t.Logf("%d kills; %s", done, strings.TrimSpace(out))
}

// connectWithRetry connects to a corpsim's listening bus with the operator
// token it keeps in its data folder (written before it listens).
func connectWithRetry(t *testing.T, url, data string, exited chan error) *nats.Conn {
	t.Helper()
	for start := time.Now(); time.Since(start) < 20*time.Second; {
		tok, _ := os.ReadFile(filepath.Join(data, "operator.token"))
		nc, err := nats.Connect(url, nats.Timeout(200*time.Millisecond), nats.Token(strings.TrimSpace(string(tok))))
		if err == nil {
			return nc
		}
		select {
		case err := <-exited:
			exited <- err
			return nil
		case <-time.After(5 * time.Millisecond):
		}
	}
	t.Fatalf("cannot connect to %s", url)
	return nil
}

func sessionOf(t *testing.T, w *busWatcher, known string) string {
	t.Helper()
	s, _ := w.state()
	if known != "" {
		if s != "" && s != known {
			t.Fatalf("events of session %s appeared while resuming %s", s, known)
		}
		return known
	}
	if s == "" {
		t.Fatal("no event was published before the kill")
	}
	return s
}

// checkStore opens the store after a kill and checks it against what the
// bus saw; it returns the store's last seq, and whether the session had
// finished when the process was killed.
func checkStore(t *testing.T, data, session string, w *busWatcher) (uint64, bool) {
	t.Helper()
	l, err := app.OpenLog(context.Background(), data, false, nil) // marks the session interrupted
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	meta, err := l.Session(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Status != events.StatusInterrupted && meta.Status != events.StatusFinished {
		t.Fatalf("after SIGKILL the session is %s, want interrupted (or finished, had it ended first)", meta.Status)
	}
	last, err := l.LastSeq(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	_, acked := w.state()
	if last < acked {
		t.Fatalf("store ends at seq %d but seq %d was published (acknowledged) before the kill", last, acked)
	}
	want := uint64(1)
	for ev, err := range l.Read(ctx, session, 1) {
		if err != nil {
			t.Fatalf("reading after the kill: %v", err)
		}
		if ev.Seq != want {
			t.Fatalf("gap: got seq %d, want %d", ev.Seq, want)
		}
		want++
		w.mu.Lock()
		b, ok := w.seen[ev.Seq]
		w.mu.Unlock()
		if ok && !bytes.Equal(b, events.Encode(&ev)) {
			t.Fatalf("seq %d differs between the bus and the store", ev.Seq)
		}
	}
	if want-1 != last {
		t.Fatal(fmt.Sprintf("read %d events, last seq %d", want-1, last))
	}
	return last, meta.Status == events.StatusFinished
}
