package tests

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/client"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/worlds"
)

// TestShutdownAndRestart runs a long session of built-in greedy agents on a
// real `corpsim serve`, and stops it twice before it ends: SIGTERM (serve
// must exit 0 within a bound, the session recorded interrupted at a batch
// boundary and kept in DATA/serve-state.json, mode 0600), then, after a
// restarted serve on the same data resumed it, SIGKILL. A third serve
// resumes it again and it finishes. Its log equals, byte for byte, an
// uninterrupted run of the same world, seed and agents, and `corpsim
// verify` passes.
func TestShutdownAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real corpsim")
	}
	dir := t.TempDir()
	src, err := os.ReadFile(longWorld(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	req := wire.CreateRequest{Source: string(src), Seed: 3, Agents: "greedy"}

	// 1. SIGTERM while the session runs.
	sp := startServe(t, data, "--log-level", "info")
	reply, err := sp.op.Create(requestCtx(t, time.Minute), req)
	if err != nil {
		t.Fatal(err)
	}
	id := reply.Session
	sp.waitFor(t, id, "500 events", time.Minute, func(st wire.ControlReply) bool { return st.Events >= 500 })
	took := sp.stop(t, 20*time.Second)
	if !strings.Contains(sp.stderr.String(), "session interrupted by shutdown") || !strings.Contains(sp.stderr.String(), "session="+id) {
		t.Errorf("serve's log does not say the session was interrupted by shutdown:\n%s", sp.stderr.String())
	}
	if !strings.Contains(sp.stdout.String(), "1 session(s) interrupted, resumed by the next corpsim serve --data "+data+": "+id) {
		t.Errorf("serve does not say which sessions the next serve resumes:\n%s", sp.stdout.String())
	}
	meta, firstStop := storedMeta(t, data, id)
	if meta.Status != events.StatusInterrupted || meta.LastSeq != firstStop {
		t.Fatalf("after SIGTERM the session is %s at %d (the log ends at %d), want interrupted there (it must still be running when stopped)", meta.Status, meta.LastSeq, firstStop)
	}
	t.Logf("SIGTERM: serve exited 0 after %v, session interrupted at event %d", took.Round(time.Millisecond), firstStop)
	state := filepath.Join(data, "serve-state.json")
	if fi, err := os.Stat(state); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file: %v, mode %v, want 0600", err, fi)
	}
	if b, _ := os.ReadFile(state); !strings.Contains(string(b), id) {
		t.Fatalf("state file does not name the session:\n%s", b)
	}

	// 2. A restarted serve resumes it; SIGKILL it while it runs.
	sp = startServe(t, data)
	sp.waitFor(t, id, "progress after the restart", time.Minute, func(st wire.ControlReply) bool {
		return st.Events >= firstStop+500 || st.Status == "finished"
	})
	if !strings.Contains(sp.stdout.String(), "resumed 1 session(s): "+id) {
		t.Errorf("restarted serve does not say it resumed %s:\n%s", id, sp.stdout.String())
	}
	if err := sp.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-sp.done
	killedAt, killedSeq := storedMeta(t, data, id) // marks it interrupted, as any corpsim opening the folder does
	t.Logf("SIGKILL: session stored up to event %d, %s", killedSeq, killedAt.Status)
	if killedSeq <= firstStop {
		t.Errorf("the resumed session stored nothing after event %d", firstStop)
	}

	// 3. Another serve resumes it to its end.
	sp = startServe(t, data)
	final := sp.waitFor(t, id, "the end", 2*time.Minute, func(st wire.ControlReply) bool { return st.Status == "finished" })
	sp.stop(t, 20*time.Second)
	if killedAt.Status == events.StatusFinished {
		t.Log("the session finished before the kill; the third serve had nothing to resume")
	}
	if b, _ := os.ReadFile(state); strings.Contains(string(b), id) {
		t.Errorf("the finished session is still in the state file:\n%s", b)
	}

	// The uninterrupted run: the same request on another server.
	refData := filepath.Join(dir, "ref")
	rp := startServe(t, refData)
	ref, err := rp.op.Create(requestCtx(t, time.Minute), req)
	if err != nil {
		t.Fatal(err)
	}
	rp.waitFor(t, ref.Session, "the end", 2*time.Minute, func(st wire.ControlReply) bool { return st.Status == "finished" })
	rp.stop(t, 20*time.Second)
	l, rl := mustOpenStore(t, data), mustOpenStore(t, refData)
	sameLogs(t, l, id, rl, ref.Session, 1)
	got, err := l.Session(context.Background(), id)
	refMeta, rerr := rl.Session(context.Background(), ref.Session)
	l.Close()
	rl.Close()
	if err != nil || rerr != nil {
		t.Fatal(err, rerr)
	}
	if got.Status != events.StatusFinished || got.StateHash != refMeta.StateHash || got.LastSeq != final.Events {
		t.Fatalf("stopped run is %s at %d in %s, uninterrupted run at %d in %s", got.Status, got.LastSeq, got.StateHash, refMeta.LastSeq, refMeta.StateHash)
	}
	if out, errs, code := corpsimIn(t, dir, "verify", id, "--data", data); code != 0 {
		t.Fatalf("verify exited %d: %s%s", code, out, errs)
	}
	t.Logf("stopped at %d (SIGTERM) and %d (SIGKILL); %d events, equal to the uninterrupted run", firstStop, killedSeq, got.LastSeq)
}

// TestShutdownKeepsRemoteSeats: a session with a remote seat (m00003, played
// greedily by a client that reconnects) is stopped by SIGTERM; a serve
// restarted on the same data and address resumes it, admits its client
// again with the token it had (DATA/serve-state.json keeps it), waits for
// it, and the session finishes with the same log as an uninterrupted run.
func TestShutdownKeepsRemoteSeats(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real corpsim")
	}
	dir := t.TempDir()
	src, err := os.ReadFile(longWorld(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	req := wire.CreateRequest{Source: string(src), Seed: 3, Agents: "greedy,m00003=remote"}
	reconnecting := []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond)}

	data, addr := filepath.Join(dir, "data"), freeAddr(t)
	sp := startServeAt(t, addr, data)
	reply, err := sp.op.Create(requestCtx(t, time.Minute), req)
	if err != nil {
		t.Fatal(err)
	}
	id, seat := reply.Session, reply.Seats["m00003"]
	player, err := client.Play(sp.url, seat, &agents.Greedy{}, reconnecting...)
	if err != nil {
		t.Fatal(err)
	}
	defer player.Close()
	sp.waitFor(t, id, "500 events", time.Minute, func(st wire.ControlReply) bool { return st.Events >= 500 })
	sp.stop(t, 20*time.Second)
	if meta, last := storedMeta(t, data, id); meta.Status != events.StatusInterrupted {
		t.Fatalf("after SIGTERM the session is %s at %d, want interrupted", meta.Status, last)
	}

	sp = startServeAt(t, addr, data) // the player reconnects by itself, with its old token
	sp.waitFor(t, id, "the end", 2*time.Minute, func(st wire.ControlReply) bool { return st.Status == "finished" })
	sp.stop(t, 20*time.Second)

	refData := filepath.Join(dir, "ref")
	rp := startServe(t, refData)
	ref, err := rp.op.Create(requestCtx(t, time.Minute), req)
	if err != nil {
		t.Fatal(err)
	}
	refPlayer, err := client.Play(rp.url, ref.Seats["m00003"], &agents.Greedy{})
	if err != nil {
		t.Fatal(err)
	}
	defer refPlayer.Close()
	rp.waitFor(t, ref.Session, "the end", 2*time.Minute, func(st wire.ControlReply) bool { return st.Status == "finished" })
	rp.stop(t, 20*time.Second)

	l, rl := mustOpenStore(t, data), mustOpenStore(t, refData)
	defer l.Close()
	defer rl.Close()
	sameLogs(t, l, id, rl, ref.Session, 1)
	if n := len(eventsOf(t, l, id, payload.EvTurnTimeout)); n != 0 {
		t.Errorf("%d turns timed out: the remote seat was not back when its session resumed", n)
	}
}

// storedMeta reads a session's metadata and last stored seq from the data
// folder of a corpsim that has exited, opening it as corpsim does (which
// records a session left running by a kill as interrupted).
func storedMeta(tb testing.TB, data, session string) (events.SessionMeta, uint64) {
	tb.Helper()
	l, err := app.OpenLog(context.Background(), data, false, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	m, err := l.Session(context.Background(), session)
	if err != nil {
		tb.Fatal(err)
	}
	last, err := l.LastSeq(context.Background(), session)
	if err != nil {
		tb.Fatal(err)
	}
	return m, last
}

// TestServeLimits: a real serve with --max-sessions 1, --max-seats N (the
// startup world's seats) and --max-message 1 MiB refuses a world with more
// seats, a second running session, a create request over the NATS payload
// limit and an HTTP body over the limit (413), each saying which limit and
// flag; SIGTERM with a session still waiting to start exits 0.
func TestServeLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real corpsim")
	}
	startup, err := worlds.Source("startup")
	if err != nil {
		t.Fatal(err)
	}
	w, err := worlds.Load("startup.yaml", startup)
	if err != nil {
		t.Fatal(err)
	}
	seats, err := agents.Assign("greedy", w, true)
	if err != nil {
		t.Fatal(err)
	}
	haddr := freeAddr(t)
	sp := startServe(t, t.TempDir(), "--max-sessions", "1", "--max-seats", strconv.Itoa(len(seats)), "--max-message", "1048576", "--http", haddr)
	ctx := requestCtx(t, 10*time.Minute)

	big := worlds.Generate(worlds.GenOptions{Name: "big", Seed: 1, Members: len(seats) + 2, Tasks: 4})
	_, err = sp.op.Create(ctx, wire.CreateRequest{Source: string(big), Seed: 1, Agents: "greedy", Wait: true})
	wantRefusal(t, "a world with more seats", err, "too many seats", "at most "+strconv.Itoa(len(seats))+" per session", "--max-seats")

	if _, err := sp.op.Create(ctx, wire.CreateRequest{World: "startup", Seed: 1, Agents: "greedy", Wait: true}); err != nil {
		t.Fatalf("the first session: %v", err)
	}
	_, err = sp.op.Create(ctx, wire.CreateRequest{World: "startup", Seed: 2, Agents: "greedy"})
	wantRefusal(t, "a second session", err, "too many sessions", "at most 1 at once", "--max-sessions")

	huge := wire.CreateRequest{World: "startup", Source: "# " + strings.Repeat("x", 1_100_000) + "\n" + string(startup), Agents: "greedy"}
	_, err = sp.op.Create(ctx, huge)
	if !errors.Is(err, nats.ErrMaxPayload) {
		t.Errorf("a 1.1 MB create request over NATS: got %v, want %v", err, nats.ErrMaxPayload)
	}
	body, _ := json.Marshal(huge)
	hreq, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+haddr+"/v1/sessions", strings.NewReader(string(body)))
	hreq.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(mustRead(t, filepath.Join(sp.data, "operator.token")))))
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(msg), "limit of 1048576 bytes") {
		t.Errorf("a 1.1 MB create request over HTTP: %s %s, want 413 naming the limit", resp.Status, msg)
	}

	took := sp.stop(t, 20*time.Second)
	t.Logf("SIGTERM with a session waiting to start: exit 0 after %v", took.Round(time.Millisecond))
}

func wantRefusal(tb testing.TB, what string, err error, parts ...string) {
	tb.Helper()
	if err == nil {
		tb.Errorf("%s was not refused", what)
		return
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			tb.Errorf("%s: refusal %q does not say %q", what, err, p)
		}
	}
}
