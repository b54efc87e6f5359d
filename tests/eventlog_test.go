package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/corpsim/corpsim/cmd/corpsim/cli"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/pebblelog"
	"github.com/corpsim/corpsim/sim/analyze"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/worlds"
)

// The tests in this file drive the event-log commands (fork, reset,
// sessions, verify, log, resume) through cli.Main on a real Pebble data
// folder, with the real embedded NATS server underneath every run.

// mustCLI runs corpsim in process and fails unless it exits 0.
func mustCLI(tb testing.TB, args ...string) string {
	tb.Helper()
	out, errs, code := runCLI(tb, args...)
	if code != cli.ExitOK {
		tb.Fatalf("corpsim %s: got exit %d, want 0\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errs)
	}
	return out
}

// cliResult runs a command that plays a session (run, fork, reset, resume)
// with --json and returns its result.
func cliResult(tb testing.TB, args ...string) *app.RunResult {
	tb.Helper()
	out := mustCLI(tb, append(args, "--json")...)
	var res app.RunResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		tb.Fatalf("corpsim %s --json: %v in\n%s", strings.Join(args, " "), err, out)
	}
	return &res
}

// storedEvents opens the data folder, reads every event of session and
// closes it again (Pebble locks the folder, so it cannot stay open while a
// command runs).
func storedEvents(tb testing.TB, data, session string) []events.Event {
	tb.Helper()
	l := mustOpenStore(tb, data)
	defer l.Close()
	return readAll(tb, l, session)
}

func mustOpenStore(tb testing.TB, data string) *pebblelog.Log {
	tb.Helper()
	l, err := pebblelog.Open(data, pebblelog.Options{})
	if err != nil {
		tb.Fatalf("open %s: %v", data, err)
	}
	return l
}

// checkpointSeqs returns the seqs of a session's own checkpoints.
func checkpointSeqs(tb testing.TB, data, session string) []uint64 {
	tb.Helper()
	l := mustOpenStore(tb, data)
	defer l.Close()
	cps, err := l.Checkpoints(context.Background(), session)
	if err != nil {
		tb.Fatal(err)
	}
	var out []uint64
	for _, cp := range cps {
		out = append(out, cp.Seq)
	}
	return out
}

// sessionMetas lists the data folder's sessions with `sessions --json`.
func sessionMetas(tb testing.TB, args ...string) map[string]events.SessionMeta {
	tb.Helper()
	out := mustCLI(tb, append([]string{"sessions", "--json"}, args...)...)
	metas := map[string]events.SessionMeta{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var m events.SessionMeta
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			tb.Fatalf("sessions --json line %q: %v", sc.Text(), err)
		}
		metas[m.ID] = m
	}
	return metas
}

// sameEvents fails unless got and want encode to the same bytes, event by event.
func sameEvents(tb testing.TB, what string, got, want []events.Event) {
	tb.Helper()
	for i := range min(len(got), len(want)) {
		if g, w := events.Encode(&got[i]), events.Encode(&want[i]); !bytes.Equal(g, w) {
			tb.Fatalf("%s: event %d differs:\ngot  %+v\nwant %+v", what, i+1, got[i], want[i])
		}
	}
	if len(got) != len(want) {
		tb.Fatalf("%s: got %d events, want %d", what, len(got), len(want))
	}
}

// runRecordingSteps runs a world into the data folder in process and
// returns the result and the last seq of every batch the driver persisted:
// the points where the live run stopped to ask its agents or to advance
// time.
func runRecordingSteps(tb testing.TB, o app.RunOptions) (*app.RunResult, []uint64) {
	tb.Helper()
	var steps []uint64
	o.Progress = func(seq uint64, _ int64) { steps = append(steps, seq) }
	res := mustRun(tb, o)
	return res, steps
}

func writeWorld(tb testing.TB, dir string, o worlds.GenOptions) string {
	tb.Helper()
	path := filepath.Join(dir, o.Name+".yaml")
	if o.Name == "" {
		path = filepath.Join(dir, "generated.yaml")
	}
	if err := os.WriteFile(path, worlds.Generate(o), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path
}

func seqArg(seq uint64) string { return strconv.FormatUint(seq, 10) }

// TestForkContinuesLikeItsParent forks a finished session at several of
// its events with the same seed and agents, and wants every fork to finish
// with a log byte-identical to its parent's: the shared prefix read through
// the parent, then the fork's own events. The fork points are where the
// live run stopped between steps (see TestForkInsideAStep for the others):
// the first event, a checkpoint, a step between checkpoints, the last event.
func TestForkContinuesLikeItsParent(t *testing.T) {
	data := t.TempDir()
	// MaxBatch 1: one append per engine step, so that Progress reports every step.
	parent, steps := runRecordingSteps(t, app.RunOptions{World: "startup", Seed: 7, Agents: "greedy", Data: data, CheckpointEvery: 50, MaxBatch: 1})
	want := storedEvents(t, data, parent.Session)
	cps := checkpointSeqs(t, data, parent.Session)
	if len(cps) < 2 || steps[0] != 1 {
		t.Fatalf("want at least 2 checkpoints and a first step of one event, got checkpoints %v, steps %v", cps, steps[:min(len(steps), 5)])
	}
	between := uint64(0)
	for _, s := range steps {
		if s > cps[0]+2 && s < cps[1]-2 {
			between = s
			break
		}
	}
	if between == 0 {
		t.Fatalf("no step between the checkpoints at %d and %d: %v", cps[0], cps[1], steps)
	}

	for _, tc := range []struct {
		name string
		at   uint64
	}{
		{"first event", 1},
		{"at a checkpoint", cps[0]},
		{"between checkpoints", between},
		{"last event", parent.Events},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fork := cliResult(t, "fork", parent.Session, "--at", seqArg(tc.at), "--data", data)
			if fork.Session == parent.Session || fork.Parent != parent.Session || fork.ForkSeq != tc.at {
				t.Fatalf("fork %s: got parent %s at %d, want %s at %d", fork.Session, fork.Parent, fork.ForkSeq, parent.Session, tc.at)
			}
			if fork.Seed != parent.Seed || fork.Events != parent.Events || fork.StateHash != parent.StateHash {
				t.Fatalf("fork: got seed %d, %d events, state hash %s; want %d, %d, %s",
					fork.Seed, fork.Events, fork.StateHash, parent.Seed, parent.Events, parent.StateHash)
			}
			got := storedEvents(t, data, fork.Session)
			sameEvents(t, "fork", got, want)
			for _, ev := range got {
				owner := fork.Session
				if ev.Seq <= tc.at {
					owner = parent.Session
				}
				if ev.Session != owner {
					t.Fatalf("event %d of the fork was read from session %s, want %s", ev.Seq, ev.Session, owner)
				}
			}
			if out, errs, code := runCLI(t, "verify", fork.Session, "--data", data); code != cli.ExitOK {
				t.Fatalf("verify of the fork: exit %d\n%s%s", code, out, errs)
			}
			m := sessionMetas(t, "--data", data)[fork.Session]
			if m.Parent != parent.Session || m.ForkSeq != tc.at || m.Status != events.StatusFinished || m.LastSeq != parent.Events {
				t.Fatalf("sessions --json: got %+v", m)
			}
		})
	}
}

// insideTurn reports whether a fork after event at of the events evs
// (evs[i] is event i+1) falls between a turn and what its actions did.
func insideTurn(evs []events.Event, at uint64) bool {
	if at >= uint64(len(evs)) {
		return false
	}
	c := evs[at].Cause
	return c != 0 && c <= at && evs[c-1].Type == "turn"
}

// TestForkInsideAStep forks at an event in the middle of what one step
// produced (several members' actions applied together, or several timers
// firing at one instant). The fork keeps the parent's events up to there,
// asks the members due at that instant again, and must finish and verify;
// with deterministic agents it may or may not continue as the parent did.
// A point between a member's turn and what its actions did is refused,
// naming the points on either side: the fork would keep the turn without
// its actions (the member busy, none applied).
func TestForkInsideAStep(t *testing.T) {
	data := t.TempDir()
	// The seats asked over the bus: a batch is made durable before every
	// round of turns, so that Progress reports each round (the built-in
	// agents played in process are asked within batches).
	parent, steps := runRecordingSteps(t, app.RunOptions{World: "startup", Seed: 7, Agents: "greedy", Data: data, SeatsOverBus: true})
	want := storedEvents(t, data, parent.Session)
	var inside []uint64
	var split uint64 // a point inside a turn
	for i := 1; i < len(steps) && len(inside) < 3; i++ {
		if steps[i]-steps[i-1] < 3 {
			continue
		}
		for at := steps[i-1] + 1; at < steps[i]; at++ {
			if !insideTurn(want, at) {
				inside = append(inside, at)
				break
			}
			if split == 0 {
				split = at
			}
		}
	}
	if split == 0 {
		t.Fatal("no point inside a turn to fork at")
	}
	_, errs, code := runCLI(t, "fork", parent.Session, "--at", seqArg(split), "--data", data)
	if code != cli.ExitUsage || !strings.Contains(errs, "to ask") || !strings.Contains(errs, "to keep the turn") {
		t.Errorf("fork inside a turn, at %d: exit %d, %s; want a usage error naming where to fork instead", split, code, errs)
	}
	// And where the next thing the parent did was an NPC's turn: on resume
	// the NPC decides at once, before any agent is asked, so the fork's first
	// batch is produced by Resume itself.
	w, _, err := app.LoadWorld("startup")
	if err != nil {
		t.Fatal(err)
	}
	isNPC := func(id string) bool { m, ok := w.Member(id); return ok && m.NPC != nil }
	npc := uint64(0)
	for i, s := 1, 1; i < len(want) && npc == 0; i++ {
		for s < len(steps) && steps[s] <= uint64(i) {
			s++
		}
		if uint64(i) > steps[s-1] && want[i].Type == "turn" && isNPC(want[i].Actor) {
			npc = uint64(i)
		}
	}
	if len(inside) == 0 || npc == 0 {
		t.Fatalf("no step of 3 or more events, or no NPC turn inside a step: %v", steps)
	}
	inside = append(inside, npc)
	for _, at := range inside {
		t.Run(fmt.Sprintf("at %d", at), func(t *testing.T) {
			fork := cliResult(t, "fork", parent.Session, "--at", seqArg(at), "--data", data)
			got := storedEvents(t, data, fork.Session)
			if uint64(len(got)) <= at || fork.Ended == "" {
				t.Fatalf("fork at %d: %d events, ended %q", at, len(got), fork.Ended)
			}
			sameEvents(t, "prefix", got[:at], want[:at])
			if out, errs, code := runCLI(t, "verify", fork.Session, "--data", data); code != cli.ExitOK {
				t.Fatalf("verify: exit %d\n%s%s", code, out, errs)
			}
			t.Logf("fork at %d: %d events, same final state as the parent: %v", at, len(got), fork.StateHash == parent.StateHash)
		})
	}
}

// TestForkChangesWhatFollows forks with another seed and with other agents:
// the prefix stays the parent's, what follows differs, and the fork
// finishes and verifies.
func TestForkChangesWhatFollows(t *testing.T) {
	data := t.TempDir()
	parent, steps := runRecordingSteps(t, app.RunOptions{World: "startup", Seed: 7, Agents: "greedy", Data: data, CheckpointEvery: 50})
	want := storedEvents(t, data, parent.Session)
	early := steps[len(steps)/5] // a step boundary, a fifth of the way in

	t.Run("seed", func(t *testing.T) {
		fork := cliResult(t, "fork", parent.Session, "--at", seqArg(early), "--seed", "99", "--data", data)
		if fork.Seed != 99 || fork.Ended == "" {
			t.Fatalf("fork: got seed %d, ended %q; want seed 99 and an end", fork.Seed, fork.Ended)
		}
		got := storedEvents(t, data, fork.Session)
		sameEvents(t, "prefix", got[:early], want[:early])
		if len(got) > int(early) && len(want) > int(early) &&
			bytes.Equal(events.Encode(&got[early]), events.Encode(&want[early])) {
			t.Fatalf("event %d after the fork point is the parent's, though the seed (and so the event IDs) changed", early+1)
		}
		if out, errs, code := runCLI(t, "verify", fork.Session, "--data", data); code != cli.ExitOK {
			t.Fatalf("verify: exit %d\n%s%s", code, out, errs)
		}
		if m := sessionMetas(t, "--data", data)[fork.Session]; m.Seed != 99 || m.Status != events.StatusFinished {
			t.Fatalf("sessions --json: got %+v", m)
		}
	})

	t.Run("idle agents", func(t *testing.T) {
		fork := cliResult(t, "fork", parent.Session, "--at", seqArg(early), "--agents", "idle", "--data", data)
		for member, name := range fork.Agents {
			if name != "idle" {
				t.Fatalf("fork plays %s with %s, want idle", member, name)
			}
		}
		if fork.StateHash == parent.StateHash || fork.Score.TasksDone >= parent.Score.TasksDone {
			t.Fatalf("idle fork: %d tasks done, state hash %s; parent: %d, %s; want fewer tasks and another state",
				fork.Score.TasksDone, fork.StateHash, parent.Score.TasksDone, parent.StateHash)
		}
		got := storedEvents(t, data, fork.Session)
		sameEvents(t, "prefix", got[:early], want[:early])
		if out, errs, code := runCLI(t, "verify", fork.Session, "--data", data); code != cli.ExitOK {
			t.Fatalf("verify: exit %d\n%s%s", code, out, errs)
		}
	})
}

func TestForkErrors(t *testing.T) {
	data := t.TempDir()
	parent := cliResult(t, "run", "--seed", "7", "--data", data)
	last := seqArg(parent.Events)
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"unknown session", []string{"fork", "NOSUCH", "--at", "3"}, cli.ExitError, "no session NOSUCH in " + data},
		{"reset of an unknown session", []string{"reset", "NOSUCH"}, cli.ExitError, "no session NOSUCH in " + data},
		{"no --at", []string{"fork", parent.Session}, cli.ExitUsage, "fork needs --at SEQ (1 to " + last + ")"},
		{"--at beyond the end", []string{"fork", parent.Session, "--at", seqArg(parent.Events + 1)}, cli.ExitUsage,
			fmt.Sprintf("--at %d is beyond the end of session %s, which has %s events", parent.Events+1, parent.Session, last)},
		{"bad session id", []string{"fork", "no/such", "--at", "1"}, cli.ExitError, "no session no/such"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errs, code := runCLI(t, append(tc.args, "--data", data)...)
			if code != tc.code || !strings.Contains(errs, tc.want) {
				t.Fatalf("got exit %d and %q, want exit %d and a message containing %q", code, errs, tc.code, tc.want)
			}
			if out != "" {
				t.Fatalf("a failed fork printed %q", out)
			}
		})
	}
	if n := len(sessionMetas(t, "--data", data)); n != 1 {
		t.Fatalf("after the failed forks the data folder holds %d sessions, want 1", n)
	}
}

// TestResetEqualsAFreshRun resets a session of a world file and wants a new
// session, a fork of the old one at its first event, whose log is byte for
// byte the log of a fresh run of the same world and seed.
func TestResetEqualsAFreshRun(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	world := writeWorld(t, dir, worlds.GenOptions{Name: "small", Seed: 2, Members: 4, Tasks: 40, Chains: 3})
	first := cliResult(t, "run", "--world", world, "--seed", "11", "--data", data)
	reset := cliResult(t, "reset", first.Session, "--data", data)
	fresh := cliResult(t, "run", "--world", world, "--seed", "11", "--data", data)

	got := storedEvents(t, data, reset.Session)
	sameEvents(t, "reset vs fresh run", got, storedEvents(t, data, fresh.Session))
	sameEvents(t, "reset vs the session it reset", got, storedEvents(t, data, first.Session))
	if got[0].Session != first.Session || got[1].Session != reset.Session {
		t.Fatalf("the reset's events 1 and 2 come from %s and %s, want %s (shared) and %s (its own)",
			got[0].Session, got[1].Session, first.Session, reset.Session)
	}
	if reset.StateHash != fresh.StateHash || reset.Seed != 11 || reset.World != "small" {
		t.Fatalf("reset: got %+v", reset)
	}

	m, ok := sessionMetas(t, "--data", data)[reset.Session]
	if !ok || m.Parent != first.Session || m.ForkSeq != 1 || m.Status != events.StatusFinished || m.Seed != 11 || m.World != "small" {
		t.Fatalf("sessions --json shows the reset as %+v, want parent %s, fork_seq 1, finished", m, first.Session)
	}
	out := mustCLI(t, "sessions", "--data", data)
	if !strings.Contains(out, first.Session+"@1") {
		t.Fatalf("sessions does not show the reset's parent %s@1:\n%s", first.Session, out)
	}
}

// TestSessionsFilters lists sessions of two worlds in several states, with
// --world and --status, as a table and as JSON Lines.
func TestSessionsFilters(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	tiny := writeWorld(t, dir, worlds.GenOptions{Name: "tiny", Seed: 1, Members: 3, Tasks: 8, Chains: 2})
	a := cliResult(t, "run", "--seed", "1", "--data", data)
	b := cliResult(t, "run", "--seed", "2", "--data", data)
	g := cliResult(t, "run", "--world", tiny, "--seed", "1", "--data", data)
	var f events.SessionMeta // a fork that was never run: interrupted
	out := mustCLI(t, "fork", a.Session, "--at", "1", "--create-only", "--json", "--data", data)
	if err := json.Unmarshal([]byte(out), &f); err != nil {
		t.Fatal(err)
	}
	// Named by "session", as a played fork's result is, and by "id".
	var named struct{ Session, ID string }
	if err := json.Unmarshal([]byte(out), &named); err != nil || named.Session == "" || named.Session != f.ID || named.ID != f.ID {
		t.Fatalf("fork --create-only --json names %+v (err %v), want session and id %s:\n%s", named, err, f.ID, out)
	}

	tests := []struct {
		name  string
		flags []string
		want  []string
	}{
		{"all", nil, []string{a.Session, b.Session, g.Session, f.ID}},
		{"world startup", []string{"--world", "startup"}, []string{a.Session, b.Session, f.ID}},
		{"world tiny", []string{"--world", "tiny"}, []string{g.Session}},
		{"finished", []string{"--status", "finished"}, []string{a.Session, b.Session, g.Session}},
		{"interrupted", []string{"--status", "interrupted"}, []string{f.ID}},
		{"startup and interrupted", []string{"--world", "startup", "--status", "interrupted"}, []string{f.ID}},
		{"tiny and interrupted", []string{"--world", "tiny", "--status", "interrupted"}, nil},
		{"running", []string{"--status", "running"}, nil},
		{"unknown world", []string{"--world", "nowhere"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := slices.Sorted(slices.Values(tc.want))
			args := append([]string{"--data", data}, tc.flags...)

			metas := sessionMetas(t, args...)
			var got []string
			for id, m := range metas {
				got = append(got, id)
				if m.Status == events.StatusRunning {
					t.Errorf("%s is listed as running in a folder no process holds", id)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("sessions --json %v: got %v, want %v", tc.flags, got, want)
			}

			lines := strings.Split(strings.TrimRight(mustCLI(t, append([]string{"sessions"}, args...)...), "\n"), "\n")
			if h := strings.Fields(lines[0]); !slices.Equal(h, []string{"SESSION", "WORLD", "SEED", "AGENTS", "STATUS", "EVENTS", "CREATED", "PARENT"}) {
				t.Fatalf("sessions header: got %q", lines[0])
			}
			got = got[:0]
			for _, line := range lines[1:] {
				fields := strings.Fields(line)
				m := metas[fields[0]]
				agents := strings.ReplaceAll(analyze.AgentSummary(m.Agents), ", ", ",")
				if agents == "" {
					agents = "-"
				}
				row := []string{m.ID, m.World, strconv.FormatUint(m.Seed, 10), agents, string(m.Status), strconv.FormatUint(m.LastSeq, 10), m.Created}
				if m.Parent != "" {
					row = append(row, fmt.Sprintf("%s@%d", m.Parent, m.ForkSeq))
				}
				if !slices.Equal(fields, row) {
					t.Fatalf("sessions row: got %q, want the fields %q", line, row)
				}
				got = append(got, fields[0])
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("sessions %v: got %v, want %v", tc.flags, got, want)
			}
		})
	}
	_, errs, code := runCLI(t, "sessions", "--data", data, "--status", "bogus")
	if code != cli.ExitUsage || !strings.Contains(errs, `--status "bogus"`) {
		t.Fatalf("sessions --status bogus: got exit %d, %q; want exit %d", code, errs, cli.ExitUsage)
	}

	// resume runs the fork made with --create-only: a fork at event 1 with
	// the parent's seed and agents, so it replays the parent exactly.
	res := cliResult(t, "resume", f.ID, "--data", data)
	sameEvents(t, "resumed fork", storedEvents(t, data, f.ID), storedEvents(t, data, a.Session))
	if res.StateHash != a.StateHash || len(sessionMetas(t, "--data", data, "--status", "interrupted")) != 0 {
		t.Fatalf("after resume: state hash %s (want %s), interrupted sessions %v", res.StateHash, a.StateHash,
			sessionMetas(t, "--data", data, "--status", "interrupted"))
	}
}

// TestCancelledRunIsInterrupted cancels a run the way Ctrl-C and SIGTERM do
// (main cancels the context) and wants the session recorded as interrupted
// at its last durable event, and resumable to exactly the log of an
// uninterrupted run.
func TestCancelledRunIsInterrupted(t *testing.T) {
	data := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A checkpoint every 50 events: the greedy seats, played in process,
	// are asked within batches, which end before a round where one falls
	// due; with the default the whole session is one batch.
	_, err := app.Run(ctx, app.RunOptions{World: "startup", Seed: 7, Agents: "greedy", Data: data, Logger: testLogger(t), CheckpointEvery: 50,
		Progress: func(seq uint64, _ int64) {
			if seq >= 100 {
				cancel()
			}
		}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: got %v, want context.Canceled", err)
	}
	metas := sessionMetas(t, "--data", data, "--status", "interrupted")
	if len(metas) != 1 {
		t.Fatalf("sessions --status interrupted: got %v, want the cancelled session", metas)
	}
	var m events.SessionMeta
	for _, m = range metas {
	}
	if stored := storedEvents(t, data, m.ID); m.LastSeq < 100 || uint64(len(stored)) != m.LastSeq {
		t.Fatalf("the interrupted session records last seq %d and stores %d events, want the same, at least 100", m.LastSeq, len(stored))
	}
	res := cliResult(t, "resume", m.ID, "--data", data)
	fresh := cliResult(t, "run", "--seed", "7", "--data", data)
	if m.LastSeq >= fresh.Events {
		t.Fatalf("the run was interrupted at seq %d of %d: after its end", m.LastSeq, fresh.Events)
	}
	sameEvents(t, "resumed vs uninterrupted", storedEvents(t, data, m.ID), storedEvents(t, data, fresh.Session))
	if res.StateHash != fresh.StateHash {
		t.Fatalf("resumed state hash %s, uninterrupted %s", res.StateHash, fresh.StateHash)
	}
}

// storeKey is the Pebble key of an event ("e") or a checkpoint ("c") of a
// session, as events/pebblelog documents it: kind/session/seq, the seq as 8
// bytes big endian.
func storeKey(kind, session string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte(kind+"/"+session+"/"), seq)
}

type quietPebble struct{}

func (quietPebble) Infof(string, ...any)           {}
func (quietPebble) Errorf(string, ...any)          {}
func (quietPebble) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }

// flipBit flips one bit in the middle of the value stored under key,
// behind the log's back.
func flipBit(tb testing.TB, data string, key []byte) {
	tb.Helper()
	db, err := pebble.Open(data, &pebble.Options{Logger: quietPebble{}})
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	v, closer, err := db.Get(key)
	if err != nil {
		tb.Fatalf("get %q: %v", key, err)
	}
	v = bytes.Clone(v)
	closer.Close()
	v[len(v)/2] ^= 0x10
	if err := db.Set(key, v, pebble.Sync); err != nil {
		tb.Fatal(err)
	}
}

// TestVerifyFindsCorruption flips one bit of a stored event and of a
// stored checkpoint and wants verify (exit 3), log and replay to name the
// session and the seq; a fork sharing the corrupt event fails verify too,
// and a corrupt checkpoint does not stop a fork, which replays the events
// instead.
func TestVerifyFindsCorruption(t *testing.T) {
	data := t.TempDir()
	p := cliResult(t, "run", "--seed", "7", "--data", data, "--checkpoint-every", "100")
	f := cliResult(t, "fork", p.Session, "--at", "200", "--data", data)
	q := cliResult(t, "run", "--seed", "8", "--data", data, "--checkpoint-every", "100")

	for _, s := range []*app.RunResult{p, f, q} {
		out := mustCLI(t, "verify", s.Session, "--data", data)
		if want := fmt.Sprintf("session %s: %d events", s.Session, s.Events); !strings.HasPrefix(out, want) || !strings.Contains(out, ": ok (state hash "+s.StateHash+")") {
			t.Fatalf("verify of a clean session: got %q", out)
		}
	}
	var rep struct {
		Events      uint64 `json:"events"`
		Checkpoints int    `json:"checkpoints"`
		OK          bool   `json:"ok"`
	}
	if err := json.Unmarshal([]byte(mustCLI(t, "verify", p.Session, "--data", data, "--json")), &rep); err != nil || !rep.OK || rep.Events != p.Events || rep.Checkpoints < 3 {
		t.Fatalf("verify --json of a clean session: %+v, %v", rep, err)
	}

	const bad = 150
	flipBit(t, data, storeKey("e", p.Session, bad))
	corrupt := fmt.Sprintf("corrupt event in session %s at seq %d", p.Session, bad)

	t.Run("verify", func(t *testing.T) {
		for _, s := range []string{p.Session, f.Session} { // the fork reads seq 150 from p
			out, errs, code := runCLI(t, "verify", s, "--data", data)
			if code != cli.ExitMismatch || !strings.Contains(out, corrupt) || !strings.Contains(errs, s+" does not verify") {
				t.Fatalf("verify %s: got exit %d\n%s%s\nwant exit %d and %q", s, code, out, errs, cli.ExitMismatch, corrupt)
			}
		}
		out, _, code := runCLI(t, "verify", p.Session, "--data", data, "--json")
		var rep struct {
			OK       bool     `json:"ok"`
			Problems []string `json:"problems"`
		}
		if code != cli.ExitMismatch || json.Unmarshal([]byte(out), &rep) != nil || rep.OK || len(rep.Problems) == 0 || !strings.Contains(rep.Problems[0], corrupt) {
			t.Fatalf("verify --json: exit %d, %s", code, out)
		}
	})
	t.Run("log", func(t *testing.T) {
		out, errs, code := runCLI(t, "log", p.Session, "--data", data)
		if code != cli.ExitMismatch || !strings.Contains(errs, corrupt) || strings.Contains(errs, "panic") {
			t.Fatalf("log: got exit %d and %q, want exit %d and %q", code, errs, cli.ExitMismatch, corrupt)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		var last events.Event
		if len(lines) != bad-1 || json.Unmarshal([]byte(lines[len(lines)-1]), &last) != nil || last.Seq != bad-1 {
			t.Fatalf("log printed %d lines before the corrupt event, want %d ending with seq %d", len(lines), bad-1, bad-1)
		}
		out = mustCLI(t, "log", p.Session, "--data", data, "--from", seqArg(bad+1))
		if n := strings.Count(out, "\n"); n != int(p.Events)-bad {
			t.Fatalf("log --from %d: got %d lines, want %d", bad+1, n, int(p.Events)-bad)
		}
	})
	t.Run("replay", func(t *testing.T) {
		_, errs, code := runCLI(t, "replay", p.Session, "--data", data)
		if code == cli.ExitOK || !strings.Contains(errs, corrupt) {
			t.Fatalf("replay: got exit %d and %q, want a failure naming %q", code, errs, corrupt)
		}
	})

	// Every command that reads the whole log names the corrupt event.
	for _, args := range [][]string{
		{"score", p.Session},
		{"diagnose", p.Session},
		{"trace", p.Session, "--member", "ana"},
		{"export", p.Session, "--format", "jsonl"},
		{"diff", q.Session, p.Session},
		{"report", p.Session, "--output", filepath.Join(t.TempDir(), "r.html")},
	} {
		t.Run(args[0], func(t *testing.T) {
			_, errs, code := runCLI(t, append(args, "--data", data)...)
			if code == cli.ExitOK || !strings.Contains(errs, corrupt) || strings.Contains(errs, "panic") {
				t.Fatalf("%s: got exit %d and %q, want a failure naming %q", args[0], code, errs, corrupt)
			}
		})
	}

	cps := checkpointSeqs(t, data, q.Session)
	last := cps[len(cps)-1]
	flipBit(t, data, storeKey("c", q.Session, last))
	t.Run("checkpoint", func(t *testing.T) {
		want := fmt.Sprintf("corrupt checkpoint of session %s at seq %d", q.Session, last)
		out, errs, code := runCLI(t, "verify", q.Session, "--data", data)
		if code != cli.ExitMismatch || !strings.Contains(out, want) {
			t.Fatalf("verify: got exit %d\n%s%s\nwant exit %d and %q", code, out, errs, cli.ExitMismatch, want)
		}
		// The others are still checked: one damaged checkpoint hid them all
		// ("0 checkpoints: 1 problem").
		if others := fmt.Sprintf(" %d checkpoints: 1 problem", len(cps)-1); len(cps) < 2 || !strings.Contains(out, others) {
			t.Fatalf("verify of %d checkpoints, one damaged: got\n%s\nwant %q", len(cps), out, others)
		}
		// The events are intact: a fork past the corrupt checkpoint replays them instead.
		fork := cliResult(t, "fork", q.Session, "--at", seqArg(q.Events), "--data", data)
		if fork.StateHash != q.StateHash || fork.Events != q.Events {
			t.Fatalf("fork past a corrupt checkpoint: got %d events, state %s; want %d, %s", fork.Events, fork.StateHash, q.Events, q.StateHash)
		}
	})
}

// TestResumeOfAFinishedSessionRefuses: resume is for interrupted sessions
// (see TestResumeInterruptedWithOtherAgents for one).
func TestResumeOfAFinishedSessionRefuses(t *testing.T) {
	data := t.TempDir()
	s := cliResult(t, "run", "--seed", "7", "--data", data)
	out, errs, code := runCLI(t, "resume", s.Session, "--data", data)
	want := fmt.Sprintf("session %s already finished (%d events)", s.Session, s.Events)
	if code != cli.ExitError || !strings.Contains(errs, want) || out != "" {
		t.Fatalf("resume of a finished session: got exit %d, %q%q; want exit %d and %q", code, out, errs, cli.ExitError, want)
	}
	if after := storedEvents(t, data, s.Session); uint64(len(after)) != s.Events {
		t.Fatalf("after the refused resume the session has %d events, want %d", len(after), s.Events)
	}
}

// TestForkContentWorlds: on each content world (records and their writes,
// facts told, decisions, replies, reopened cases, meetings booked) a fork
// at the first event, between checkpoints and at the last event continues
// like its parent with greedy agents — the same events, the same state
// hash — and verifies.
func TestForkContentWorlds(t *testing.T) {
	for _, world := range []string{"billing-support", "access-requests", "meetings"} {
		t.Run(world, func(t *testing.T) {
			data := t.TempDir()
			parent, _ := runRecordingSteps(t, app.RunOptions{World: world, Seed: 2, Agents: "greedy", Data: data, CheckpointEvery: 40})
			want := storedEvents(t, data, parent.Session)
			cps := checkpointSeqs(t, data, parent.Session)
			if len(cps) < 2 {
				t.Fatalf("want at least 2 checkpoints, got %v", cps)
			}
			for _, at := range []uint64{1, (cps[0] + cps[1]) / 2, parent.Events} {
				fork := cliResult(t, "fork", parent.Session, "--at", seqArg(at), "--data", data)
				if fork.Events != parent.Events || fork.StateHash != parent.StateHash {
					t.Fatalf("fork at %d: %d events, state hash %s; want %d, %s", at, fork.Events, fork.StateHash, parent.Events, parent.StateHash)
				}
				sameEvents(t, fmt.Sprintf("fork at %d", at), storedEvents(t, data, fork.Session), want)
				if out, errs, code := runCLI(t, "verify", fork.Session, "--data", data); code != cli.ExitOK {
					t.Fatalf("verify of the fork at %d: exit %d\n%s%s", at, code, out, errs)
				}
			}
		})
	}
}
