package server

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim/simtest"
)

// played creates a session on svc and waits for it to end.
func played(t *testing.T, ctx context.Context, svc *Service, req wire.CreateRequest) events.SessionMeta {
	t.Helper()
	r, err := svc.Create(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	m, err := svc.Wait(ctx, r.Session)
	if err != nil {
		t.Fatalf("session %s: %v", r.Session, err)
	}
	return m
}

// A fork created on the service is played by agents made anew; those that
// remember (here planners, estimating the rate purchases come at from the
// ones they have seen) are shown their members' past turns first, so the
// fork of a finished session with the same seed and agents ends as its
// parent did. The fork points are states turns saw: the ends of steps.
// Without the recall, two of these six forks end otherwise. With a
// checkpoint every 50 events, the planners take what the parent's planners
// remembered at the last one before the fork (the log says so) and are
// shown the turns since.
func TestForkedPlannersRememberThePast(t *testing.T) {
	for _, every := range []int{0, 50} {
		var said simtest.Buffer
		logger := hclog.New(&hclog.LoggerOptions{Output: &said, Level: hclog.Info})
		forkPlanners(t, Config{Log: memlog.New(), Bus: mustBus(t), Logger: logger, CheckpointEvery: every})
		if from := strings.Count(said.String(), "from_checkpoint=") - strings.Count(said.String(), "from_checkpoint=0"); (from > 0) != (every > 0) {
			t.Errorf("checkpoints every %d events: %d of the forks recalled from a checkpoint", every, from)
		}
	}
}

// forkPlanners plays a planner session on a service of cfg and forks it
// at six points: each fork must end as its parent did.
func forkPlanners(t *testing.T, cfg Config) {
	t.Helper()
	log := cfg.Log
	svc, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	parent := played(t, ctx, svc, wire.CreateRequest{World: "procurement", Seed: 3, Agents: "planner"})
	if parent.Status != events.StatusFinished {
		t.Fatalf("parent: %s", parent.Status)
	}
	var seen []uint64
	for ev, err := range log.Read(ctx, parent.ID, 1) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == payload.EvTurn {
			var p payload.Turn
			if err := json.Unmarshal(ev.Payload, &p); err != nil {
				t.Fatal(err)
			}
			seen = append(seen, p.Seen)
		}
	}
	seen = slices.Compact(seen)
	if len(seen) < 50 {
		t.Fatalf("only %d states seen by turns", len(seen))
	}
	for i := 1; i <= 6; i++ {
		at := seen[i*len(seen)/7]
		m := played(t, ctx, svc, wire.CreateRequest{Parent: parent.ID, ForkSeq: at, Agents: "planner"})
		if m.LastSeq != parent.LastSeq || m.StateHash != parent.StateHash {
			t.Errorf("fork at %d: %s with %d events, state hash %s; the parent has %d, %s", at, m.Status, m.LastSeq, m.StateHash, parent.LastSeq, parent.StateHash)
		}
	}
}

// A service restarted while planners play a session resumes it with
// planners made anew, shown their members' past turns first: the session
// ends as it would have without the restart. The gate holds the session
// once its log passes cut events, and the service is closed under it.
func TestRestartedPlannersRememberThePast(t *testing.T) {
	bus := mustBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	create := wire.CreateRequest{World: "procurement", Seed: 3, Agents: "planner"}
	whole := func() events.SessionMeta {
		svc, err := New(Config{Log: memlog.New(), Bus: bus, Logger: hclog.NewNullLogger()})
		if err != nil {
			t.Fatal(err)
		}
		defer svc.Close()
		return played(t, ctx, svc, create)
	}()
	for _, cut := range []uint64{148, 321} {
		log := memlog.New()
		stateFile := filepath.Join(t.TempDir(), "serve-state.json")
		held := make(chan struct{})
		var once sync.Once
		gate := func(ctx context.Context, id string) error {
			if last, _ := log.LastSeq(ctx, id); last < cut {
				return nil
			}
			once.Do(func() { close(held) })
			<-ctx.Done()
			return ctx.Err()
		}
		svc, err := New(Config{Log: log, Bus: bus, Logger: hclog.NewNullLogger(), StateFile: stateFile, Hooks: Hooks{Gate: gate}})
		if err != nil {
			t.Fatal(err)
		}
		r, err := svc.Create(ctx, create)
		if err != nil {
			t.Fatal(err)
		}
		<-held
		svc.Close()
		at, _ := log.LastSeq(ctx, r.Session)
		svc2, err := New(Config{Log: log, Bus: bus, Logger: hclog.NewNullLogger(), StateFile: stateFile})
		if err != nil {
			t.Fatal(err)
		}
		if got, err := svc2.ResumeSaved(ctx); err != nil || len(got) != 1 {
			t.Fatalf("resumed %v, %v; want the session", got, err)
		}
		m, err := svc2.Wait(ctx, r.Session)
		svc2.Close()
		if err != nil {
			t.Fatal(err)
		}
		if m.LastSeq != whole.LastSeq || m.StateHash != whole.StateHash {
			t.Errorf("restarted at seq %d: %s with %d events, state hash %s; without the restart %d, %s", at, m.Status, m.LastSeq, m.StateHash, whole.LastSeq, whole.StateHash)
		}
	}
}

// forgetful is an llm stand-in that waits every turn and notes which
// sessions it was told are over.
type forgetful struct {
	mu     sync.Mutex
	forgot []string
}

func (*forgetful) Decide(context.Context, org.Observation) ([]org.Action, error) {
	return []org.Action{{Type: org.ActWait}}, nil
}

func (f *forgetful) Forget(session string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forgot = append(f.forgot, session)
}

// The server's llm agent plays every session's llm seats and keeps a
// conversation per session and seat: once a session ends it is told to
// drop that session's, or a server running for days would keep them all.
func TestEndedSessionIsForgottenByTheLLMAgent(t *testing.T) {
	llm := &forgetful{}
	svc, err := New(Config{Log: memlog.New(), Bus: mustBus(t), Logger: hclog.NewNullLogger(), LLM: llm})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m := played(t, ctx, svc, wire.CreateRequest{World: "startup", Seed: 1, Agents: "greedy,bob=llm"})
	for {
		llm.mu.Lock()
		forgot := slices.Clone(llm.forgot)
		llm.mu.Unlock()
		if slices.Contains(forgot, m.ID) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the llm agent was told to forget %v, not the ended session %s", forgot, m.ID)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
