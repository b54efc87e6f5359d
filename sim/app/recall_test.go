package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim/app"
)

// Recall shows the agents that remember every turn their members took, and
// only them: the planners of a planner session decide each as recorded;
// diligent agents put in their seats decide otherwise, and are counted;
// greedy ones remember nothing and nothing is read. Planners take what
// the session's planners remembered at its last checkpoint and are shown
// the turns since; diligent agents cannot take a planner's memory and are
// shown every turn.
func TestRecallShowsThePastToAgentsThatRemember(t *testing.T) {
	ctx := context.Background()
	log, meta := stored(t, "procurement", 3, "planner")
	cp, err := log.LatestCheckpoint(ctx, meta.ID, meta.LastSeq)
	if err != nil {
		t.Fatal(err)
	}
	turns, since := 0, 0
	for ev, err := range log.Read(ctx, meta.ID, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if _, seat := meta.Agents[ev.Actor]; seat && ev.Type == payload.EvTurn {
			turns++ // a simulated colleague's turns are not an agent's
			if ev.Seq > cp.Seq {
				since++
			}
		}
	}
	if since == 0 || since == turns {
		t.Fatalf("the last checkpoint, at seq %d, is followed by %d of the %d turns: nothing to tell apart", cp.Seq, since, turns)
	}
	origin := meta.ID
	w, _, err := app.LoadWorld("procurement")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		agent           string
		turns, differed func(n int) bool
		from            uint64
	}{
		{"planner", func(n int) bool { return n == since }, func(n int) bool { return n == 0 }, cp.Seq},
		{"diligent", func(n int) bool { return n == turns }, func(n int) bool { return n > 0 }, 0},
		{"greedy", func(n int) bool { return n == 0 }, func(n int) bool { return n == 0 }, 0},
	} {
		m := meta
		m.Agents = map[string]string{}
		for member := range meta.Agents {
			m.Agents[member] = tc.agent
		}
		seats, err := app.BuildSeats(m, w, app.SeatOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := app.Recall(ctx, log, origin, origin, meta.LastSeq, seats, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !tc.turns(got.Turns) || !tc.differed(got.Differed) || got.FromCheckpoint != tc.from {
			t.Errorf("%s: recalled %d turns from the checkpoint at %d (the session has %d, %d after its last checkpoint at %d), %d decided otherwise",
				tc.agent, got.Turns, got.FromCheckpoint, turns, since, cp.Seq, got.Differed)
		}
	}
}

// panicky remembers, and panics when asked.
type panicky struct{}

func (panicky) Remembers() bool { return true }
func (panicky) Decide(context.Context, org.Observation) ([]org.Action, error) {
	panic("a defect")
}

// A past turn an agent cannot be shown (it panics, here) leaves the agents
// without their past, with a warning; it neither stops the session about
// to go on nor takes the process down.
func TestRecallThatFailsLeavesTheAgentsWithoutTheirPast(t *testing.T) {
	ctx := context.Background()
	log, meta := stored(t, "startup", 1, "greedy")
	w, _, err := app.LoadWorld("startup")
	if err != nil {
		t.Fatal(err)
	}
	seats, err := app.BuildSeats(meta, w, app.SeatOptions{Custom: map[string]agents.Agent{"bob": panicky{}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := app.Recall(ctx, log, meta.ID, meta.ID, meta.LastSeq, seats, nil); err == nil || !strings.Contains(err.Error(), "panicked: a defect") {
		t.Fatalf("Recall: %v, want the panic as an error", err)
	}
	var warned strings.Builder
	logger := hclog.New(&hclog.LoggerOptions{Output: &warned, Level: hclog.Warn})
	if r := app.RecallOrWarn(ctx, log, meta.ID, meta.ID, meta.LastSeq, seats, logger); r != nil {
		t.Fatalf("RecallOrWarn: %+v, want nothing recalled", r)
	}
	if !strings.Contains(warned.String(), "go on without their past") {
		t.Fatalf("no warning: %q", warned.String())
	}
}

// stored runs world with agents into a data folder of the test's and
// returns the log, open (closed when the test ends), and the session.
func stored(t *testing.T, world string, seed uint64, agents string) (events.Log, events.SessionMeta) {
	t.Helper()
	ctx := context.Background()
	data := t.TempDir()
	res, err := app.Run(ctx, app.RunOptions{World: world, Seed: seed, Agents: agents, Data: data, Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	log, meta, err := app.OpenSession(ctx, data, res.Session, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	return log, meta
}
