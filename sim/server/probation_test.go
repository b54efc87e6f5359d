package server

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/driver"
)

// readState reads a state file as it is on disk.
func readState(tb testing.TB, path string) savedState {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var st savedState
	if err := json.Unmarshal(b, &st); err != nil {
		tb.Fatal(err)
	}
	return st
}

// savedSessions makes n sessions on a service with a state file and stops
// the service while they run (each paused once Create returned it, when
// its first batch is durable: each is in the log and in the state file);
// it returns their IDs.
func savedSessions(t *testing.T, ctx context.Context, log events.Log, bus *natsserver.Server, stateFile string, n int) []string {
	t.Helper()
	svc, err := New(Config{Log: log, Bus: bus, Logger: hclog.NewNullLogger(), StateFile: stateFile})
	if err != nil {
		t.Fatal(err)
	}
	op, err := bus.Connect("operator")
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	var ids []string
	for i := range n {
		r, err := svc.Create(ctx, wire.CreateRequest{World: "support-desk", Seed: uint64(20 + i), Agents: "greedy"})
		if err != nil {
			t.Fatal(err)
		}
		req, _ := json.Marshal(wire.ControlRequest{Op: wire.OpPause})
		if _, err := op.Request(wire.ControlSubject(r.Session), req, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.Session)
	}
	svc.Close()
	return ids
}

// TestSessionStoppedWhileResumingIsFailed: a service whose state file holds
// a session marked as being resumed (the process stopped while resuming
// it) and healthy sessions records the marked one failed with the reason
// and does not run it; the healthy ones are resumed and finish.
func TestSessionStoppedWhileResumingIsFailed(t *testing.T) {
	bus := mustBus(t)
	log := memlog.New()
	stateFile := filepath.Join(t.TempDir(), "serve-state.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ids := savedSessions(t, ctx, log, bus, stateFile, 3)
	poison := ids[1]
	before, _ := log.LastSeq(ctx, poison)

	// The state file as a process killed while resuming poison leaves it.
	st := readState(t, stateFile)
	saved := st.Sessions[poison]
	saved.Resuming = time.Now().UTC().Format(time.RFC3339Nano)
	st.Sessions[poison] = saved
	b, _ := json.Marshal(st)
	if err := os.WriteFile(stateFile, b, 0o600); err != nil {
		t.Fatal(err)
	}

	svc, err := New(Config{Log: log, Bus: bus, Logger: hclog.NewNullLogger(), StateFile: stateFile})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	resumed, err := svc.ResumeSaved(ctx)
	if err == nil || !errors.Is(err, ErrStoppedResuming) || !strings.Contains(err.Error(), poison) || !strings.Contains(err.Error(), ReasonStoppedResuming) {
		t.Errorf("ResumeSaved's error: got %v, want one naming %s and the reason", err, poison)
	}
	if len(resumed) != 2 || resumed[0] != ids[0] || resumed[1] != ids[2] {
		t.Fatalf("resumed %v, want [%s %s]", resumed, ids[0], ids[2])
	}
	meta, err := log.Session(ctx, poison)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Status != events.StatusFailed || meta.Reason != ReasonStoppedResuming || meta.LastSeq != before {
		t.Errorf("the marked session is %s at %d with reason %q; want failed at %d with %q", meta.Status, meta.LastSeq, meta.Reason, before, ReasonStoppedResuming)
	}
	if after, _ := log.LastSeq(ctx, poison); after != before {
		t.Errorf("the marked session ran from event %d to %d", before, after)
	}
	if _, ok := readState(t, stateFile).Sessions[poison]; ok {
		t.Error("the marked session is still in the state file")
	}
	op, err := bus.Connect("operator")
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	for _, id := range resumed {
		req, _ := json.Marshal(wire.ControlRequest{Op: wire.OpStart})
		if _, err := op.Request(wire.ControlSubject(id), req, 5*time.Second); err != nil {
			t.Fatal(err)
		}
		m, err := svc.Wait(ctx, id)
		if err != nil || m.Status != events.StatusFinished {
			t.Fatalf("session %s: %s, %v; want finished", id, m.Status, err)
		}
		if r := driver.Verify(ctx, log, m); !r.OK {
			t.Fatalf("session %s does not verify: %v", id, r.Problems)
		}
	}
	if left := readState(t, stateFile).Sessions; len(left) != 0 {
		t.Errorf("the state file keeps %v after every session ended", left)
	}
}

// TestResumingMark: a resumed session is marked in the state file from
// before it runs until it has shown that it runs, then the mark is
// cleared while it goes on; a paused one is not marked while it waits.
func TestResumingMark(t *testing.T) {
	bus := mustBus(t)
	log := memlog.New()
	stateFile := filepath.Join(t.TempDir(), "serve-state.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ids := savedSessions(t, ctx, log, bus, stateFile, 2)
	running, paused := ids[0], ids[1]
	// running is resumed running, paused stays paused.
	st := readState(t, stateFile)
	s := st.Sessions[running]
	s.Paused = false
	st.Sessions[running] = s
	b, _ := json.Marshal(st)
	if err := os.WriteFile(stateFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	at, _ := log.LastSeq(ctx, running)

	// The gate sees, before each step of the resumed session, whether it
	// is marked in the file and how far its log is.
	var mu sync.Mutex
	var firstMarked, clearedWhileRunning bool
	var steps int
	var clearedAt uint64
	gate := func(_ context.Context, id string) error {
		if id != running {
			return nil
		}
		marked := readStateFile(stateFile)[id].Resuming != ""
		last, _ := log.LastSeq(ctx, id)
		mu.Lock()
		defer mu.Unlock()
		steps++
		if steps == 1 {
			firstMarked = marked
		} else if !marked && !clearedWhileRunning {
			clearedWhileRunning, clearedAt = true, last
		}
		return nil
	}
	svc, err := New(Config{Log: log, Bus: bus, Logger: hclog.NewNullLogger(), StateFile: stateFile, Hooks: Hooks{Gate: gate}})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	start := time.Now()
	if resumed, err := svc.ResumeSaved(ctx); err != nil || len(resumed) != 2 {
		t.Fatalf("resumed %v, %v; want both", resumed, err)
	}
	if took := time.Since(start); took >= settleFor {
		t.Errorf("resuming took %v: a paused session and a running one must each settle at once", took)
	}
	if m, err := svc.Wait(ctx, running); err != nil || m.Status != events.StatusFinished {
		t.Fatalf("the running session: %s, %v", m.Status, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !firstMarked {
		t.Error("the resumed session was not marked in the state file before its first step")
	}
	if !clearedWhileRunning || clearedAt <= at {
		t.Errorf("the mark was not cleared while the session ran past event %d (cleared: %v at %d)", at, clearedWhileRunning, clearedAt)
	}
	t.Logf("resumed at event %d; marked at the first step; cleared by event %d, after %d steps", at, clearedAt, steps)
	if s := readStateFile(stateFile)[paused]; s.Resuming != "" || !s.Paused {
		t.Errorf("the paused session is kept as %+v, want paused and not marked", s)
	}
	if _, ok := readStateFile(stateFile)[running]; ok {
		t.Error("the finished session is still in the state file")
	}
}

// readStateFile reads the sessions of a state file, none if it cannot.
func readStateFile(path string) map[string]savedSession {
	f, err := openState(path)
	if err != nil {
		return nil
	}
	return f.saved()
}

// gatedSeats answer a member's turn once its release channel is closed
// (at once for "local", as an agent played in process).
type gatedSeats struct {
	asked   chan string
	release map[string]chan struct{}
}

func (g *gatedSeats) Ask(ctx context.Context, _, member string, obs org.Observation) (sim.Answer, error) {
	if member != "local" {
		g.asked <- member
		<-g.release[member]
	}
	return sim.Answer{Member: member, Turn: obs.Turn}, nil
}

func (g *gatedSeats) Immediate(member string) bool { return member == "local" }

// TestRemoteTurnHoldsTheMark: while a resumed session waits for its remote
// seats' answers, it is not marked as being resumed (nothing of it runs:
// a restart after another session killed the process would record it
// failed); once the last answer is in it is marked again, until it has
// shown it runs. A turn of a seat played in process changes nothing, and
// the seats wrapped still say which answer at once.
func TestRemoteTurnHoldsTheMark(t *testing.T) {
	stateFile := filepath.Join(t.TempDir(), "serve-state.json")
	svc, err := New(Config{Log: memlog.New(), Bus: mustBus(t), Logger: hclog.NewNullLogger(), StateFile: stateFile})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	const id = "01M97TFN65H1VT6WZQ1FJJ3YPY"
	if err := svc.state.put(id, savedSession{}); err != nil {
		t.Fatal(err)
	}
	pr, err := svc.markResuming(id)
	if err != nil {
		t.Fatal(err)
	}
	marked := func() bool { return readStateFile(stateFile)[id].Resuming != "" }
	if !marked() {
		t.Fatal("not marked once resuming")
	}
	g := &gatedSeats{asked: make(chan string, 2), release: map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}}
	seats := withProbation(g, pr, []string{"a", "b"})
	if imm, ok := seats.(driver.ImmediateSeats); !ok || !imm.Immediate("local") || imm.Immediate("a") {
		t.Fatal("the wrapped seats do not say which answer at once as the seats they wrap")
	}
	if _, err := seats.Ask(context.Background(), id, "local", org.Observation{}); err != nil || !marked() {
		t.Fatalf("a seat played in process: %v, marked %v; want the mark kept", err, marked())
	}
	answered := map[string]chan struct{}{"a": make(chan struct{}), "b": make(chan struct{})}
	for _, m := range []string{"a", "b"} {
		go func() {
			defer close(answered[m])
			if _, err := seats.Ask(context.Background(), id, m, org.Observation{}); err != nil {
				t.Error(err)
			}
		}()
	}
	<-g.asked
	<-g.asked
	if marked() {
		t.Fatal("marked while both remote turns are out")
	}
	select {
	case <-pr.settled:
	default:
		t.Fatal("a session waiting for its remote seats has not settled: the next saved session would wait for it")
	}
	close(g.release["a"])
	<-answered["a"]
	if marked() {
		t.Fatal("marked again once one answer is in while the other turn is out")
	}
	close(g.release["b"])
	<-answered["b"]
	if !marked() {
		t.Fatal("not marked again once the remote answers are in and it runs")
	}
}
