package app

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
)

// A recall from a checkpoint leaves the agents remembering what a recall
// from the first event does: at each checkpoint of sessions of the
// planner (purchases seen, tickets parked) and diligent (what attendees
// said), and between them. At a checkpoint's own seq nothing is shown,
// so what the agents took is what the live agents had when it was taken.
func TestRecallFromACheckpointRemembersAsFromTheFirstEvent(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		world, agents string
		seed          uint64
		every         int // events between checkpoints
	}{
		{"procurement", "planner", 3, 100},
		{"meetings", "diligent", 2, 20},
		{"claims", "cheater", 2, 100},
	} {
		t.Run(tc.agents+"/"+tc.world, func(t *testing.T) {
			log, meta := checkpointed(t, tc.world, tc.seed, tc.agents, tc.every)
			cps, err := log.Checkpoints(ctx, meta.ID)
			if err != nil {
				t.Fatal(err)
			}
			if len(cps) < 4 {
				t.Fatalf("%d checkpoints", len(cps))
			}
			var cuts []uint64
			for i := 1; i <= 4; i++ {
				at := cps[i*(len(cps)-1)/4].Seq
				cuts = append(cuts, at, min(at+37, meta.LastSeq))
			}
			remembered := 0
			for _, at := range cuts {
				from, withCp := recallInto(t, log, meta, at, true)
				fromFirst, whole := recallInto(t, log, meta, at, false)
				if from.FromCheckpoint == 0 || from.FromCheckpoint > at || fromFirst.FromCheckpoint != 0 {
					t.Fatalf("at seq %d: recalled from the checkpoints at %d and %d, want one at or before %d, then none",
						at, from.FromCheckpoint, fromFirst.FromCheckpoint, at)
				}
				if from.Turns >= fromFirst.Turns && fromFirst.Turns > 0 || from.Differed != 0 || fromFirst.Differed != 0 {
					t.Errorf("at seq %d: %+v from the checkpoint, %+v from the first event", at, from, fromFirst)
				}
				if !bytes.Equal(withCp, whole) {
					t.Fatalf("at seq %d, the agents recalled from the checkpoint at %d remember\n%s\nand from the first event\n%s", at, from.FromCheckpoint, withCp, whole)
				}
				if strings.Count(string(whole), `"memory":{}`) < len(meta.Agents) {
					remembered++
				}
			}
			if remembered == 0 {
				t.Fatalf("the agents remembered nothing at any cut: nothing was compared")
			}
		})
	}
}

// recallInto builds the seats of meta's agents, shows them their turns up
// to at (from the latest checkpoint, or from the first event), and returns
// what was recalled and what they then remember.
func recallInto(t *testing.T, log events.Log, meta events.SessionMeta, at uint64, fromCheckpoints bool) (Recalled, []byte) {
	t.Helper()
	return recallIntoWith(t, log, meta, at, fromCheckpoints, nil)
}

// recallIntoWith is recallInto with the members of custom played by their
// agents.
func recallIntoWith(t *testing.T, log events.Log, meta events.SessionMeta, at uint64, fromCheckpoints bool, custom map[string]agents.Agent) (Recalled, []byte) {
	t.Helper()
	defer func(was bool) { recallFromCheckpoints = was }(recallFromCheckpoints)
	recallFromCheckpoints = fromCheckpoints
	w, _, err := LoadWorld(meta.World)
	if err != nil {
		t.Fatal(err)
	}
	seats, err := BuildSeats(meta, w, SeatOptions{Custom: custom})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Recall(context.Background(), log, meta.ID, meta.ID, at, seats, nil)
	if err != nil {
		t.Fatal(err)
	}
	mem, err := seats.Memory()
	if err != nil || mem == nil {
		t.Fatalf("Memory: %s, %v", mem, err)
	}
	return r, mem
}

// forgetful remembers, decides as greedy, and cannot say what it
// remembers.
type forgetful struct{ greedy agents.Greedy }

func (*forgetful) Remembers() bool { return true }

func (f *forgetful) Decide(ctx context.Context, o org.Observation) ([]org.Action, error) {
	return f.greedy.Decide(ctx, o)
}

// Checkpoints of a session whose agents cannot all say what they remember
// (one planner played by an agent that is no agents.Keeper) keep no
// memory, and planners put in its seats are shown every turn from the
// first.
func TestRecallFromCheckpointsThatKeptNoMemory(t *testing.T) {
	ctx := context.Background()
	log, meta := checkpointedWith(t, "procurement", 3, "planner", 100, map[string]agents.Agent{"amy": &forgetful{}})
	cp, err := log.LatestCheckpoint(ctx, meta.ID, meta.LastSeq)
	if err != nil || cp.Seq < 100 {
		t.Fatalf("latest checkpoint at %d: %v", cp.Seq, err)
	}
	if bytes.Contains(cp.Data, []byte(`"memory":`)) {
		t.Fatalf("a checkpoint keeps a memory, one of its agents no Keeper")
	}
	for member := range meta.Agents {
		meta.Agents[member] = "planner"
	}
	r, _ := recallInto(t, log, meta, meta.LastSeq, true)
	whole, _ := recallInto(t, log, meta, meta.LastSeq, false)
	if r.FromCheckpoint != 0 || r.Turns != whole.Turns || r.Turns == 0 {
		t.Fatalf("recalled %+v, want every turn from the first as %+v", r, whole)
	}
}

// checkpointed runs world with agents into a data folder of the test's,
// with a checkpoint every so many events, and returns the log, open
// (closed when the test ends), and the session.
func checkpointed(t *testing.T, world string, seed uint64, agents string, every int) (events.Log, events.SessionMeta) {
	t.Helper()
	return checkpointedWith(t, world, seed, agents, every, nil)
}

// checkpointedWith is checkpointed with the members of custom played by
// their agents.
func checkpointedWith(t *testing.T, world string, seed uint64, spec string, every int, custom map[string]agents.Agent) (events.Log, events.SessionMeta) {
	t.Helper()
	ctx := context.Background()
	data := t.TempDir()
	res, err := Run(ctx, RunOptions{World: world, Seed: seed, Agents: spec, Seats: custom, Data: data, CheckpointEvery: every, Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	log, meta, err := OpenSession(ctx, data, res.Session, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { log.Close() })
	return log, meta
}

// plannerLike and plannerToo are custom agents, planners both, of two Go
// types.
type plannerLike struct{ *agents.Planner }
type plannerToo struct{ *agents.Planner }

// A custom agent takes the memory a custom agent of its own Go type kept,
// and not one of another type's: every custom seat is of the kind
// "custom".
func TestRecallFromCheckpointsOfCustomAgents(t *testing.T) {
	log, meta := checkpointedWith(t, "procurement", 3, "planner", 100, map[string]agents.Agent{"amy": &plannerLike{agents.NewPlanner("amy")}})
	if meta.Agents["amy"] != "custom" {
		t.Fatalf("amy is played by %q", meta.Agents["amy"])
	}
	same, _ := recallIntoWith(t, log, meta, meta.LastSeq, true, map[string]agents.Agent{"amy": &plannerLike{agents.NewPlanner("amy")}})
	other, _ := recallIntoWith(t, log, meta, meta.LastSeq, true, map[string]agents.Agent{"amy": &plannerToo{agents.NewPlanner("amy")}})
	if same.FromCheckpoint == 0 || other.FromCheckpoint != 0 || other.Turns <= same.Turns {
		t.Fatalf("recalled %+v with the same type, %+v with another: want the checkpoint taken by the same type only", same, other)
	}
}

// refusesMemory is a planner that takes the first memory it is given and
// then says it was of another version (the worst a Keeper can do), and
// takes any later one.
type refusesMemory struct {
	*agents.Planner
	given int
}

func (r *refusesMemory) TakeMemory(memory []byte) error {
	if err := r.Planner.TakeMemory(memory); err != nil {
		return err
	}
	if r.given++; r.given == 1 {
		return errors.New("a memory of another version")
	}
	return nil
}

// countsTurns is a planner that also remembers how many turns it
// decided: shown a turn twice, it remembers otherwise.
type countsTurns struct {
	*agents.Planner
	turns int
}

type countsTurnsKept struct {
	Turns   int             `json:"turns"`
	Planner json.RawMessage `json:"planner"`
}

func (c *countsTurns) Decide(ctx context.Context, o org.Observation) ([]org.Action, error) {
	c.turns++
	return c.Planner.Decide(ctx, o)
}

func (c *countsTurns) KeepMemory() ([]byte, error) {
	p, err := c.Planner.KeepMemory()
	if err != nil {
		return nil, err
	}
	return json.Marshal(countsTurnsKept{Turns: c.turns, Planner: p})
}

func (c *countsTurns) TakeMemory(memory []byte) error {
	var k countsTurnsKept
	if err := json.Unmarshal(memory, &k); err != nil {
		return err
	}
	c.turns = k.Turns
	return c.Planner.TakeMemory(k.Planner)
}

// A seat that refuses its memory from a checkpoint, after another took
// its own, leaves every seat as it was: they are all shown every turn
// from the first, and remember what a recall from the first event leaves
// (amy, who took hers first, would otherwise count her turns before the
// checkpoint twice).
func TestRecallWhenOneSeatRefusesItsMemory(t *testing.T) {
	seats := func() map[string]agents.Agent {
		return map[string]agents.Agent{"amy": &countsTurns{Planner: agents.NewPlanner("amy")}, "mia": &refusesMemory{Planner: agents.NewPlanner("mia")}}
	}
	log, meta := checkpointedWith(t, "procurement", 3, "planner", 100, seats())
	r, mem := recallIntoWith(t, log, meta, meta.LastSeq, true, seats())
	whole, want := recallIntoWith(t, log, meta, meta.LastSeq, false, seats())
	if r.FromCheckpoint != 0 || r.Turns != whole.Turns || r.Turns == 0 {
		t.Fatalf("recalled %+v, want every turn from the first as %+v", r, whole)
	}
	if !bytes.Equal(mem, want) {
		t.Fatalf("the seats remember\n%s\nafter one refused its memory, and\n%s\nrecalled from the first event", mem, want)
	}
	if _, fresh := recallIntoWith(t, log, meta, 1, false, seats()); bytes.Equal(want, fresh) {
		t.Fatalf("the seats remember nothing after the session: nothing was compared")
	}
}

// failsOnce is a planner whose n-th decision fails.
type failsOnce struct {
	*agents.Planner
	n, asked int
}

func (f *failsOnce) Decide(ctx context.Context, o org.Observation) ([]org.Action, error) {
	if f.asked++; f.asked == f.n {
		return nil, errors.New("the endpoint is down")
	}
	return f.Planner.Decide(ctx, o)
}

// greedyFailsOnce is a greedy colleague, who remembers nothing, whose
// n-th decision fails.
type greedyFailsOnce struct {
	agents.Greedy
	n, asked int
}

func (f *greedyFailsOnce) Decide(ctx context.Context, o org.Observation) ([]org.Action, error) {
	if f.asked++; f.asked == f.n {
		return nil, errors.New("the endpoint is down")
	}
	return f.Greedy.Decide(ctx, o)
}

// Checkpoints keep the agents' memory until a turn of an agent that
// remembers fails (it may have changed what it remembers for a turn the
// log records as failed), and none after it. A colleague's failed turn,
// one who remembers nothing, changes no memory: the checkpoints after it
// keep it still.
func TestCheckpointsKeepNoMemoryAfterAFailedTurn(t *testing.T) {
	ctx := context.Background()
	for _, remembers := range []bool{true, false} {
		amy := agents.Agent(&failsOnce{Planner: agents.NewPlanner("amy"), n: 20})
		if !remembers {
			amy = &greedyFailsOnce{n: 20}
		}
		log, meta := checkpointedWith(t, "procurement", 3, "planner", 50, map[string]agents.Agent{"amy": amy})
		var failed uint64
		for ev, err := range log.Read(ctx, meta.ID, 1) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Type == payload.EvTurnFailed && failed == 0 {
				failed = ev.Seq
			}
		}
		cps, err := log.Checkpoints(ctx, meta.ID)
		if err != nil {
			t.Fatal(err)
		}
		var before, after int
		for _, c := range cps {
			cp, err := log.LatestCheckpoint(ctx, meta.ID, c.Seq)
			if err != nil {
				t.Fatal(err)
			}
			kept := bytes.Contains(cp.Data, []byte(`"memory":`))
			switch {
			case cp.Seq < failed && kept:
				before++
			case cp.Seq > failed && kept != remembers:
				after++
			default:
				t.Errorf("amy remembers: %v; the checkpoint at %d keeps a memory: %v (amy's turn at %d failed)", remembers, cp.Seq, kept, failed)
			}
		}
		if failed == 0 || before == 0 || after == 0 {
			t.Fatalf("amy remembers: %v; her turn failed at %d; %d checkpoints with memory before it, %d as they should be after it", remembers, failed, before, after)
		}
	}
}

// The adaptive spacing takes checkpoints nearer while they keep the
// agents' memory: a planner session has more of them than the same
// session whose one agent cannot say what it remembers.
func TestCheckpointsFollowTheTurnsOfAgentsThatRemember(t *testing.T) {
	ctx := context.Background()
	count := func(custom map[string]agents.Agent) int {
		log, meta := checkpointedWith(t, "portfolio", 1, "planner", 0, custom)
		cps, err := log.Checkpoints(ctx, meta.ID)
		if err != nil {
			t.Fatal(err)
		}
		return len(cps)
	}
	kept, none := count(nil), count(map[string]agents.Agent{"m00001": &forgetful{}})
	if kept <= none {
		t.Fatalf("%d checkpoints keeping memory, %d keeping none: want more of the first", kept, none)
	}
}
