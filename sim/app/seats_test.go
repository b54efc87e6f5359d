package app_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/worlds"
)

// deterministic lists every built-in agent that gives the same answers to
// the same observations (the llm agent is the only other one).
var deterministic = []string{"idle", "random", "greedy", "planner", "cheater"}

// benchTickets is how many tickets the benchmark world keeps here: its
// 200,000 would make this test minutes long, and it plays the same way
// with fewer.
const benchTickets = 2000

// shortPortfolio is the portfolio world's horizon under the race detector
// or -short (60 working days otherwise): its 36 projects start a day
// apart, so the first ten days hold every kind of work it has.
const shortPortfolio = "10d"

// TestSeatsInProcessAndOverBusGiveTheSameLog plays every shipped world with
// every deterministic built-in agent and two seeds twice — its seats played
// in process, and over the embedded bus as JSON (--seats-over-bus) — and
// compares the stored events byte for byte.
func TestSeatsInProcessAndOverBusGiveTheSameLog(t *testing.T) {
	for _, name := range worlds.Names() {
		world := mustWorldFile(t, name)
		for _, agent := range deterministic {
			for _, seed := range []uint64{1, 2} {
				t.Run(name+"/"+agent+"/"+string(rune('0'+seed)), func(t *testing.T) {
					t.Parallel()
					in, inRes := mustPlay(t, world, agent, seed, false)
					bus, busRes := mustPlay(t, world, agent, seed, true)
					if inRes.StateHash != busRes.StateHash || inRes.Events != busRes.Events {
						t.Errorf("in process: %d events, state hash %s; over the bus: %d events, %s", inRes.Events, inRes.StateHash, busRes.Events, busRes.StateHash)
					}
					if len(in) != len(bus) {
						t.Fatalf("got %d events in process, %d over the bus", len(in), len(bus))
					}
					for i := range in {
						if !bytes.Equal(in[i], bus[i]) {
							t.Fatalf("event %d differs:\nin process    %q\nover the bus  %q", i+1, in[i], bus[i])
						}
					}
					if inRes.Score.Turns == 0 {
						t.Fatalf("no turns were played: nothing was compared")
					}
				})
			}
		}
	}
}

// mustWorldFile returns what Run is given for a shipped world: its name, or
// a file of it made smaller — the benchmark world with fewer tickets, and
// under the race detector or -short the portfolio world with a nearer
// horizon.
func mustWorldFile(tb testing.TB, name string) string {
	tb.Helper()
	var from, to string
	switch {
	case name == "support-desk-bench":
		from, to = "count: 200000", "count: "+strconv.Itoa(benchTickets)
	case name == "portfolio" && (raceDetector || testing.Short()):
		from, to = "horizon: 60d", "horizon: "+shortPortfolio
		tb.Logf("portfolio to a horizon of %s (race detector or -short)", shortPortfolio)
	default:
		return name
	}
	src, err := worlds.Source(name)
	if err != nil {
		tb.Fatal(err)
	}
	small := strings.Replace(string(src), from, to, 1)
	if small == string(src) {
		tb.Fatalf("world %s has no %q to make %q: its file changed", name, from, to)
	}
	path := filepath.Join(tb.TempDir(), name+".yaml")
	if err := os.WriteFile(path, []byte(small), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

// mustPlay runs a session in memory and returns its stored events, each
// as the log encodes it.
func mustPlay(tb testing.TB, world, agent string, seed uint64, overBus bool) ([][]byte, *app.RunResult) {
	tb.Helper()
	l := memlog.New()
	ctx := context.Background()
	const session = "seats"
	res, err := app.Run(ctx, app.RunOptions{World: world, Seed: seed, Agents: agent, Log: l, Session: session,
		CheckpointEvery: -1, SeatsOverBus: overBus})
	if err != nil {
		tb.Fatal(err)
	}
	var out [][]byte
	for ev, err := range l.Read(ctx, session, 1) {
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, events.Encode(&ev))
	}
	if uint64(len(out)) != res.Events {
		tb.Fatalf("read %d events, the run reports %d", len(out), res.Events)
	}
	return out, res
}

// deaf never answers until released, whatever its budget says.
type deaf struct{ release chan struct{} }

func (d deaf) Decide(context.Context, org.Observation) ([]org.Action, error) {
	<-d.release
	return nil, nil
}

// TestSeatThatDoesNotAnswerTimesOutBothWays: alice's agent never answers.
// Each of her turns is recorded as timed out once its budget is spent,
// in process as over the bus, and the two logs are the same.
func TestSeatThatDoesNotAnswerTimesOutBothWays(t *testing.T) {
	logs := map[bool][][]byte{}
	for _, overBus := range []bool{false, true} {
		d := deaf{release: make(chan struct{})}
		l := memlog.New()
		ctx := context.Background()
		res, err := app.Run(ctx, app.RunOptions{World: "startup", Seed: 3, Agents: "greedy", Log: l, Session: "deaf",
			CheckpointEvery: -1, SeatsOverBus: overBus, TurnTimeout: 50 * time.Millisecond,
			Seats: map[string]agents.Agent{"alice": d}})
		close(d.release)
		if err != nil {
			t.Fatal(err)
		}
		timeouts := 0
		for ev, err := range l.Read(ctx, "deaf", 1) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Type == payload.EvTurnTimeout {
				if ev.Actor != "alice" {
					t.Fatalf("over the bus %v: %s timed out, want only alice", overBus, ev.Actor)
				}
				timeouts++
			}
			logs[overBus] = append(logs[overBus], events.Encode(&ev))
		}
		if timeouts == 0 || res.Score.Timeouts != timeouts {
			t.Fatalf("over the bus %v: %d turn.timeout events, the scorecard counts %d; want some, the same", overBus, timeouts, res.Score.Timeouts)
		}
		t.Logf("over the bus %v: %d of alice's turns timed out in %s", overBus, timeouts, res.Wall)
	}
	in, bus := logs[false], logs[true]
	if len(in) != len(bus) {
		t.Fatalf("got %d events in process, %d over the bus", len(in), len(bus))
	}
	for i := range in {
		if !bytes.Equal(in[i], bus[i]) {
			t.Fatalf("event %d differs:\nin process    %q\nover the bus  %q", i+1, in[i], bus[i])
		}
	}
}

// The seats Host asks in process tell the driver which members answer at
// once (driver.ImmediateSeats), so that it asks them on its own goroutine:
// the built-in agents, not an agent that may wait (deaf, like llm), nor a
// member asked over the bus.
func TestHostSaysWhichSeatsAnswerAtOnce(t *testing.T) {
	s := &app.Seats{Agents: map[string]agents.Agent{"bob": &agents.Greedy{}, "ann": agents.NewPlanner("ann"),
		"deaf": deaf{release: make(chan struct{})}}}
	seats, stop, err := s.Host(app.HostOptions{Session: "s"})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	imm, ok := seats.(driver.ImmediateSeats)
	if !ok {
		t.Fatalf("Host's in-process seats (%T) do not say which members answer at once", seats)
	}
	for m, want := range map[string]bool{"bob": true, "ann": true, "deaf": false, "remote": false} {
		if got := imm.Immediate(m); got != want {
			t.Errorf("Immediate(%s): got %v, want %v", m, got, want)
		}
	}
}

// A session that panics on the driver's goroutine (a defect in the engine,
// or here in the caller's progress function; an agent's panic is a failed
// turn) is recorded failed, saying why, with the events stored before the
// panic, and run returns the error: the process goes on, and the session
// is not left running, to be recorded interrupted and resumed into the
// same panic.
func TestRunRecordsAPanicFailed(t *testing.T) {
	l := memlog.New()
	ctx := context.Background()
	const session = "panics"
	_, err := app.Run(ctx, app.RunOptions{World: "startup", Seed: 1, Agents: "greedy", Log: l, Session: session,
		CheckpointEvery: -1, Progress: func(seq uint64, _ int64) {
			if seq > 100 {
				panic("a defect in the progress function")
			}
		}})
	if !errors.Is(err, app.ErrPanicked) || !strings.Contains(err.Error(), "a defect in the progress function") {
		t.Fatalf("Run: %v; want ErrPanicked saying what panicked", err)
	}
	meta, err := l.Session(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	last, err := l.LastSeq(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	if meta.Status != events.StatusFailed || meta.Reason != "the session panicked: a defect in the progress function" || meta.LastSeq != last || last == 0 {
		t.Fatalf("recorded %+v (log holds %d events); want failed, saying why, with its events", meta, last)
	}
}
