package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/nats-io/nats.go"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/events/pebblelog"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/app"
)

func testLogger(tb testing.TB) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: tb.Name(), Level: hclog.Warn, Output: tbWriter{tb}})
}

type tbWriter struct{ tb testing.TB }

func (w tbWriter) Write(p []byte) (int, error) {
	w.tb.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func mustOpenPebble(tb testing.TB) events.Log {
	tb.Helper()
	l, err := pebblelog.Open(tb.TempDir(), pebblelog.Options{})
	if err != nil {
		tb.Fatalf("open pebble log: %v", err)
	}
	tb.Cleanup(func() { l.Close() })
	return l
}

func mustRun(tb testing.TB, o app.RunOptions) *app.RunResult {
	tb.Helper()
	if o.Logger == nil {
		o.Logger = testLogger(tb)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := app.Run(ctx, o)
	if err != nil {
		tb.Fatalf("run: %v", err)
	}
	return res
}

// encodedLog returns every stored event of a session in its binary encoding.
func encodedLog(tb testing.TB, l events.Log, session string) [][]byte {
	tb.Helper()
	var out [][]byte
	for ev, err := range l.Read(context.Background(), session, 1) {
		if err != nil {
			tb.Fatalf("read %s: %v", session, err)
		}
		out = append(out, events.Encode(&ev))
	}
	return out
}

func readAll(tb testing.TB, l events.Log, session string) []events.Event {
	tb.Helper()
	var out []events.Event
	for ev, err := range l.Read(context.Background(), session, 1) {
		if err != nil {
			tb.Fatalf("read %s: %v", session, err)
		}
		out = append(out, ev)
	}
	return out
}

// TestSameSeedSameLog runs the startup world twice per setting and wants
// byte-identical logs: with one and two OS threads, in memory and on Pebble.
// Run it with -race too (the README's test command does).
func TestSameSeedSameLog(t *testing.T) {
	for _, procs := range []int{1, 2} {
		for _, store := range []string{"memory", "pebble"} {
			t.Run(fmt.Sprintf("GOMAXPROCS=%d/%s", procs, store), func(t *testing.T) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
				var logs [2][][]byte
				var hashes [2]string
				for i := range logs {
					var l events.Log = memlog.New()
					if store == "pebble" {
						l = mustOpenPebble(t)
					}
					res := mustRun(t, app.RunOptions{World: "startup", Seed: 7, Agents: "greedy", Log: l})
					logs[i] = encodedLog(t, l, res.Session)
					hashes[i] = res.StateHash
				}
				if len(logs[0]) == 0 {
					t.Fatal("the run logged no events")
				}
				if len(logs[0]) != len(logs[1]) {
					t.Fatalf("got %d and %d events, want the same number", len(logs[0]), len(logs[1]))
				}
				for i := range logs[0] {
					if !bytes.Equal(logs[0][i], logs[1][i]) {
						t.Fatalf("event %d differs:\n%x\n%x", i+1, logs[0][i], logs[1][i])
					}
				}
				if hashes[0] != hashes[1] {
					t.Fatalf("got state hashes %s and %s, want equal", hashes[0], hashes[1])
				}
			})
		}
	}
}

// TestDifferentSeedsDiffer guards against a seed that is ignored: the NPC's
// reply latency is drawn from the seed, so the logs must differ somewhere.
func TestDifferentSeedsDiffer(t *testing.T) {
	a := memlog.New()
	b := memlog.New()
	ra := mustRun(t, app.RunOptions{World: "startup", Seed: 1, Agents: "greedy", Log: a})
	rb := mustRun(t, app.RunOptions{World: "startup", Seed: 2, Agents: "greedy", Log: b})
	la, lb := encodedLog(t, a, ra.Session), encodedLog(t, b, rb.Session)
	same := len(la) == len(lb)
	for i := 0; same && i < len(la); i++ {
		same = bytes.Equal(la[i], lb[i])
	}
	if same {
		t.Fatal("seeds 1 and 2 produced identical logs")
	}
}

// TestBusCarriesEveryEvent subscribes to the session's event feed on the real
// embedded NATS server and wants every event the log holds, in order.
func TestBusCarriesEveryEvent(t *testing.T) {
	srv, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	nc, err := srv.Connect("observer")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	const session = "01TESTBUSSESSION0000000000"
	ch := make(chan *nats.Msg, 1<<16)
	sub, err := nc.ChanSubscribe(wire.EventsSubject(session), ch)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	l := mustOpenPebble(t)
	res := mustRun(t, app.RunOptions{World: "startup", Seed: 7, Agents: "greedy", Log: l, Bus: srv, Session: session})
	stored := readAll(t, l, session)
	if uint64(len(stored)) != res.Events {
		t.Fatalf("log holds %d events, run reported %d", len(stored), res.Events)
	}
	for i, want := range stored {
		select {
		case msg := <-ch:
			var got events.Event
			if err := json.Unmarshal(msg.Data, &got); err != nil {
				t.Fatalf("event %d on the bus does not decode: %v", i+1, err)
			}
			if !bytes.Equal(events.Encode(&got), events.Encode(&want)) || got.Session != session {
				t.Fatalf("bus event %d: got %+v, want %+v", i+1, got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("bus delivered %d of %d events", i, len(stored))
		}
	}
	// The run flushed its connection before it returned, and the server
	// writes to this one in order: once a round trip to it is done, every
	// event it was sent is in ch.
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	select {
	case msg := <-ch:
		t.Fatalf("bus delivered an event the log does not hold: %s", msg.Data)
	default:
	}
}

// scripted plays a fixed list of replies, then plays greedy.
type scripted struct{ replies [][]org.Action }

func (s *scripted) Decide(ctx context.Context, o org.Observation) ([]org.Action, error) {
	if len(s.replies) == 0 {
		return (&agents.Greedy{}).Decide(ctx, o)
	}
	r := s.replies[0]
	s.replies = s.replies[1:]
	return r, nil
}

// TestRejectedActionIsRecorded has bob start a task whose dependency is not
// done, over the real bus: the log records action.rejected with the rule and
// a reason, no work starts, and the session goes on to finish.
func TestRejectedActionIsRecorded(t *testing.T) {
	l := memlog.New()
	bob := &scripted{replies: [][]org.Action{{
		{Type: org.ActClaim, Task: "backend"},
		{Type: org.ActWork, Task: "backend"},
		{Type: "fly", Task: "backend"},
	}}}
	res := mustRun(t, app.RunOptions{World: "startup", Seed: 7, Agents: "greedy", Log: l,
		Seats: map[string]agents.Agent{"bob": bob}})
	evs := readAll(t, l, res.Session)
	var rejected []payload.ActionRejected
	var backendWork int
	for _, ev := range evs {
		switch {
		case ev.Type == payload.EvActionRejected && ev.Actor == "bob":
			var p payload.ActionRejected
			if err := json.Unmarshal(ev.Payload, &p); err != nil {
				t.Fatal(err)
			}
			rejected = append(rejected, p)
		case ev.Type == payload.EvWorkStarted && strings.Contains(string(ev.Payload), `"task":"backend"`):
			backendWork++
			if ev.Actor == "bob" && len(rejected) < 2 {
				t.Fatalf("bob's work on backend started before its dependencies were done: %s", ev.Payload)
			}
		}
	}
	if len(rejected) != 2 {
		t.Fatalf("got %d rejections of bob's actions, want 2: %+v", len(rejected), rejected)
	}
	dep := rejected[0]
	if dep.Kind != "policy" || dep.Rule != "dependencies-first" || !strings.Contains(dep.Reason, "api") || !strings.Contains(dep.Reason, "db-schema") {
		t.Errorf("got rejection %+v, want policy dependencies-first naming api and db-schema", dep)
	}
	if unk := rejected[1]; unk.Kind != "malformed" || !strings.Contains(unk.Reason, `"fly"`) {
		t.Errorf("got rejection %+v, want malformed naming the unknown type", unk)
	}
	if res.Score.Violations != 1 {
		t.Errorf("got %d violations, want 1", res.Score.Violations)
	}
	if res.Ended != "complete" {
		t.Errorf("session ended %q; the rejection should not stop it", res.Ended)
	}
}

// TestReplayRebuildsTheRecordedState replays a Pebble log and gets the hash
// the live run recorded; a tampered payload is caught.
func TestReplayRebuildsTheRecordedState(t *testing.T) {
	l := mustOpenPebble(t)
	res := mustRun(t, app.RunOptions{World: "startup", Seed: 3, Agents: "greedy", Log: l})
	e, err := sim.Rebuild(l.Read(context.Background(), res.Session, 1), res.Session, sim.Config{})
	if err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	if got := e.EndStateHash(); got != res.StateHash {
		t.Fatalf("replayed hash %s, want recorded %s", got, res.StateHash)
	}

	// Change one completed task's actor in a copy of the log: replay must notice.
	evs := readAll(t, l, res.Session)
	for i := range evs {
		if evs[i].Type == payload.EvWorkFinished {
			evs[i].Payload = json.RawMessage(strings.Replace(string(evs[i].Payload), `"work":`, `"work":1`, 1))
			break
		}
	}
	seq := func(yield func(events.Event, error) bool) {
		for _, ev := range evs {
			if !yield(ev, nil) {
				return
			}
		}
	}
	if _, err := sim.Rebuild(seq, res.Session, sim.Config{}); err == nil {
		t.Fatal("replay of a tampered log succeeded")
	}
}
