package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/corpsim/corpsim/cmd/corpsim/cli"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/worlds"
)

// The tests in this file need a second process: a real corpsim running a
// session that the test follows, kills, or runs in another working folder.

// corpsimProc is a corpsim process started by a test.
type corpsimProc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{} // closed when the process has exited
}

func startCorpsim(tb testing.TB, dir string, args ...string) *corpsimProc {
	tb.Helper()
	p := &corpsimProc{cmd: exec.Command(corpsimBinary(tb), args...), done: make(chan struct{})}
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
		if p.running() {
			_ = p.cmd.Process.Kill()
		}
		<-p.done
	})
	return p
}

func (p *corpsimProc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// wait waits for the process to exit and returns its exit code.
func (p *corpsimProc) wait(tb testing.TB, limit time.Duration) int {
	tb.Helper()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(limit):
		_ = p.cmd.Process.Kill()
		<-p.done
		tb.Fatalf("corpsim %s did not exit within %s\n%s", strings.Join(p.cmd.Args[1:], " "), limit, p.stderr.String())
		return -1
	}
}

// corpsimIn runs the real binary to completion in working folder dir.
func corpsimIn(tb testing.TB, dir string, args ...string) (stdout, stderr string, code int) {
	tb.Helper()
	p := startCorpsim(tb, dir, args...)
	code = p.wait(tb, 2*time.Minute)
	return p.stdout.String(), p.stderr.String(), code
}

// watchBus connects to a corpsim's NATS server at addr and records every
// event it publishes.
func watchBus(t *testing.T, addr, data string, p *corpsimProc) *busWatcher {
	t.Helper()
	w := &busWatcher{seen: map[uint64][]byte{}}
	exited := make(chan error, 1)
	go func() {
		<-p.done
		exited <- nil
	}()
	nc := connectWithRetry(t, "nats://"+addr, data, exited)
	if nc == nil {
		t.Fatalf("corpsim exited before its bus came up: %s", p.stderr.String())
	}
	t.Cleanup(nc.Close)
	if _, err := nc.Subscribe("corpsim.v1.s.*.events", w.handle); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return w
}

// waitForSeq waits until the watcher has seen event seq.
func waitForSeq(tb testing.TB, w *busWatcher, p *corpsimProc, seq uint64) {
	tb.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		if _, m := w.state(); m >= seq {
			return
		}
		if !p.running() {
			tb.Fatalf("corpsim exited before event %d was published: %s", seq, p.stderr.String())
		}
		if time.Now().After(deadline) {
			tb.Fatalf("event %d was not published within a minute", seq)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// longWorld writes a world that takes a real corpsim a few seconds (more
// than ten thousand events with seed 3).
func longWorld(tb testing.TB, dir string) string {
	return writeWorld(tb, dir, worlds.GenOptions{Name: "long", Seed: 5, Members: 10, Tasks: 800, Chains: 10})
}

// jsonLines decodes `corpsim log` output.
func jsonLines(tb testing.TB, out string) []events.Event {
	tb.Helper()
	var evs []events.Event
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		var ev events.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			tb.Fatalf("log line %q: %v", line, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// TestLogFollowsARunningSession starts a real corpsim with --listen on a
// long world and, once it is well under way, follows the session with
// `log --follow` in this process, twice at once: through DATA/bus.url from
// seq 1, and through --nats from seq 100 for turns only. Each must print
// the events as JSON Lines without gaps or repeats up to session.ended, and
// the lines must equal what `log` prints from the store afterwards. Then
// `log --follow` of the finished session prints the stored events and exits.
func TestLogFollowsARunningSession(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real corpsim")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	world := longWorld(t, dir)
	addr := freeAddr(t)
	// The seats asked over the bus: each round of turns waits for its
	// batch to be durable, so the run is still going when the followers
	// start (played in process, its batches are thousands of events).
	p := startCorpsim(t, dir, "run", "--world", world, "--seed", "3", "--data", data, "--listen", addr, "--seats-over-bus", "--json")
	w := watchBus(t, addr, data, p)
	waitForSeq(t, w, p, 1500) // more than one history page (wire.MaxHistoryPage) behind
	session, seen := w.state()
	url, err := os.ReadFile(filepath.Join(data, "bus.url"))
	if err != nil || !p.running() {
		t.Fatalf("corpsim is running: %v; DATA/bus.url: %q, %v", p.running(), url, err)
	}

	followers := []struct {
		name string
		args []string
		out  bytes.Buffer
		errs bytes.Buffer
		code int
	}{
		{name: "from the start, through DATA/bus.url", args: []string{"log", session, "--follow", "--data", data}},
		// --data too: if this follower falls behind and the run ends first, the
		// rest comes from the data folder (under -race it cannot keep up).
		{name: "turns from seq 100, through --nats", args: []string{"log", session, "--follow", "--nats", strings.TrimSpace(string(url)), "--data", data, "--from", "100", "--type", "turn"}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for i := range followers {
		f := &followers[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.code = cli.Main(ctx, f.args, &f.out, &f.errs)
		}()
	}
	wg.Wait()
	if code := p.wait(t, 2*time.Minute); code != 0 {
		t.Fatalf("the followed run exited %d: %s", code, p.stderr.String())
	}
	var res app.RunResult
	if err := json.Unmarshal(p.stdout.Bytes(), &res); err != nil || res.Session != session {
		t.Fatalf("the followed run printed %q (%v), want session %s", p.stdout.String(), err, session)
	}
	t.Logf("followers started at seq %d of %d", seen, res.Events)
	if seen >= res.Events {
		t.Fatal("the session was over before the followers started")
	}

	for i, want := range [][]string{
		{"log", session, "--data", data},
		{"log", session, "--data", data, "--from", "100", "--type", "turn"},
	} {
		f := &followers[i]
		t.Run(f.name, func(t *testing.T) {
			if f.code != cli.ExitOK {
				t.Fatalf("log --follow exited %d: %s", f.code, f.errs.String())

			}
			evs := jsonLines(t, f.out.String())
			if len(evs) == 0 {
				t.Fatal("log --follow printed nothing")
			}
			prev := uint64(0)
			for _, ev := range evs {
				if i == 0 && ev.Seq != prev+1 || i == 1 && (ev.Seq <= prev || ev.Seq < 100 || ev.Type != payload.EvTurn) {
					t.Fatalf("log --follow printed seq %d (%s) after seq %d", ev.Seq, ev.Type, prev)
				}
				prev = ev.Seq
			}
			if i == 0 && (prev != res.Events || evs[len(evs)-1].Type != payload.EvSessionEnded) {
				t.Fatalf("log --follow ended with seq %d (%s), want %d (%s)", prev, evs[len(evs)-1].Type, res.Events, payload.EvSessionEnded)
			}
			if stored := mustCLI(t, want...); f.out.String() != stored {
				t.Fatalf("log --follow printed %d bytes, `corpsim %s` prints %d: they differ", f.out.Len(), strings.Join(want, " "), len(stored))
			}
		})
	}

	t.Run("finished session", func(t *testing.T) {
		out := mustCLI(t, "log", session, "--follow", "--data", data)
		if want := mustCLI(t, "log", session, "--data", data); out != want {
			t.Fatalf("log --follow of a finished session printed %d bytes, log prints %d", len(out), len(want))
		}
	})
}

// TestResumeInterruptedWithOtherAgents kills a real corpsim with SIGKILL in
// the middle of a session that `log --follow` is tailing, finds the session
// listed as interrupted, and resumes it with idle agents: the stored prefix
// stays, the session finishes with the new agents, and it verifies. The
// follower prints every stored event and fails, saying the log stops
// without session.ended.
func TestResumeInterruptedWithOtherAgents(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real corpsim")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	world := longWorld(t, dir)
	addr := freeAddr(t)
	// Over the bus, so that the run is still going when it is killed (see
	// TestLogFollowsARunningSession).
	p := startCorpsim(t, dir, "run", "--world", world, "--seed", "3", "--data", data, "--listen", addr, "--seats-over-bus")
	w := watchBus(t, addr, data, p)
	waitForSeq(t, w, p, 300)
	session, _ := w.state()
	// A follower sees the process die: it prints what is stored and says so.
	var fout, ferrs bytes.Buffer
	fcode := make(chan int, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		fcode <- cli.Main(ctx, []string{"log", session, "--follow", "--data", data}, &fout, &ferrs)
	}()
	waitForSeq(t, w, p, 700)
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	p.wait(t, 10*time.Second)
	if code := <-fcode; code != cli.ExitError || !strings.Contains(ferrs.String(), "without session.ended (resume continues it)") {
		t.Fatalf("log --follow of a killed run: exit %d, %q", code, ferrs.String())
	}
	if stored := mustCLI(t, "log", session, "--data", data); fout.String() != stored {
		t.Fatalf("log --follow of a killed run printed %d bytes; the store holds %d", fout.Len(), len(stored))
	}

	m, ok := sessionMetas(t, "--data", data, "--status", "interrupted")[session]
	if !ok || m.Status != events.StatusInterrupted {
		t.Fatalf("sessions --status interrupted does not list %s: %+v", session, m)
	}
	before := storedEvents(t, data, session)
	if len(before) < 700 || before[len(before)-1].Type == payload.EvSessionEnded {
		t.Fatalf("after the kill the session has %d events, ending with %s", len(before), before[len(before)-1].Type)
	}

	res := cliResult(t, "resume", session, "--agents", "idle", "--data", data)
	if res.Session != session || res.Events <= uint64(len(before)) || res.Ended == "" {
		t.Fatalf("resume: got %+v", res)
	}
	for member, name := range res.Agents {
		if name != "idle" {
			t.Fatalf("resume plays %s with %s, want idle", member, name)
		}
	}
	after := storedEvents(t, data, session)
	sameEvents(t, "prefix kept by resume", after[:len(before)], before)
	if uint64(len(after)) != res.Events || after[len(after)-1].Type != payload.EvSessionEnded {
		t.Fatalf("after resume: %d events ending with %s, want %d ending with %s", len(after), after[len(after)-1].Type, res.Events, payload.EvSessionEnded)
	}
	m = sessionMetas(t, "--data", data)[session]
	if m.Status != events.StatusFinished || m.Agents["m00001"] != "idle" || m.StateHash != res.StateHash {
		t.Fatalf("sessions --json after resume: %+v", m)
	}
	mustCLI(t, "verify", session, "--data", data)
	_, errs, code := runCLI(t, "resume", session, "--data", data)
	if code != cli.ExitError || !strings.Contains(errs, "already finished") {
		t.Fatalf("second resume: exit %d, %q", code, errs)
	}
}

// TestDataFolderDefault runs the real binary in an empty working folder:
// run writes ./corpsim-data, every command that reads or writes sessions
// finds the session there by default, and with --data elsewhere does not.
func TestDataFolderDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	dir := t.TempDir()
	out, errs, code := corpsimIn(t, dir, "run", "--seed", "7", "--json")
	var res app.RunResult
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "corpsim-data", "MANIFEST-*")); len(m) == 0 {
		t.Fatal("run did not make a Pebble store in ./corpsim-data")
	}
	other := filepath.Join(dir, "other")
	s := res.Session
	tests := []struct {
		name string
		args []string
		code int    // in ./corpsim-data
		want string // in stdout or stderr there
	}{
		{"sessions", []string{"sessions"}, 0, s},
		{"log", []string{"log", s}, 0, `"type":"session.ended"`},
		{"replay", []string{"replay", s}, 0, "state hash matches"},
		{"verify", []string{"verify", s}, 0, ": ok (state hash " + res.StateHash},
		{"fork", []string{"fork", s, "--at", "1"}, 0, res.StateHash},
		{"reset", []string{"reset", s}, 0, res.StateHash},
		{"resume", []string{"resume", s}, cli.ExitError, "already finished"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := corpsimIn(t, dir, tc.args...)
			if code != tc.code || !strings.Contains(out+errs, tc.want) {
				t.Fatalf("corpsim %s in the working folder: exit %d\n%s%s\nwant exit %d and %q", strings.Join(tc.args, " "), code, out, errs, tc.code, tc.want)
			}
			_, errs, code = corpsimIn(t, dir, append(tc.args, "--data", other)...)
			want := fmt.Sprintf("no session %s in %s", s, other)
			if tc.name == "sessions" {
				want = "no data folder " + other
			}
			if code != cli.ExitError || !strings.Contains(errs, want) {
				t.Fatalf("corpsim %s --data %s: exit %d, %q; want %q", strings.Join(tc.args, " "), other, code, errs, want)
			}
		})
	}
	if _, err := os.Stat(other); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("commands that read sessions made the data folder %s: %v", other, err)
	}
	if n := len(sessionMetas(t, "--data", filepath.Join(dir, cli.DefaultData))); n != 3 {
		t.Fatalf("./corpsim-data holds %d sessions, want 3 (the run, the fork and the reset)", n)
	}
	for _, c := range []string{"run", "sessions", "log", "replay", "verify", "fork", "reset", "resume"} {
		out, _, _ := runCLI(t, c, "--help")
		if !strings.Contains(out, "--data string") || !strings.Contains(out, `(default "corpsim-data")`) {
			t.Errorf("corpsim %s --help does not document --data with its default:\n%s", c, out)
		}
	}
}
