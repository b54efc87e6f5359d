package tests

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim/app"
)

// TestForkAndResumeWithAgentsThatRemember forks finished sessions played
// by agents that remember what they were shown (the planner's estimate of
// the rate purchases come at, diligent's answers about availability, the
// cheater's shortcuts and held steps) at points spread over each run, and
// resumes forks made with --create-only: each must finish with its
// parent's log, byte for byte, as TestForkContinuesLikeItsParent wants of
// greedy. The agents made anew for the fork are shown their members' past
// turns first (app.Recall). Without that, each case here diverges: two of
// the six planner cuts, every diligent and cheater cut. They take what
// they remembered at the last checkpoint (every 100 events here) and are
// shown the turns since.
func TestForkAndResumeWithAgentsThatRemember(t *testing.T) {
	for _, tc := range []struct {
		world, agents string
		seed          uint64
	}{
		{"procurement", "planner", 3},
		{"meetings", "diligent", 2},
		{"claims", "cheater", 2},
	} {
		t.Run(tc.agents+"/"+tc.world, func(t *testing.T) {
			data := t.TempDir()
			parent, steps := runRecordingSteps(t, app.RunOptions{World: tc.world, Seed: tc.seed, Agents: tc.agents, Data: data,
				CheckpointEvery: 100, MaxBatch: 1})
			want := storedEvents(t, data, parent.Session)
			const cuts = 6
			if len(steps) < 4*cuts {
				t.Fatalf("only %d steps", len(steps))
			}
			for i := 1; i <= cuts; i++ {
				at := steps[i*len(steps)/(cuts+1)]
				var fork *app.RunResult
				how := "fork"
				if i%2 == 0 {
					how = "resume of a fork made with --create-only"
					var meta events.SessionMeta
					out := mustCLI(t, "fork", parent.Session, "--at", seqArg(at), "--create-only", "--data", data, "--json")
					if err := json.Unmarshal([]byte(out), &meta); err != nil {
						t.Fatalf("fork --create-only --json: %v in %s", err, out)
					}
					fork = cliResult(t, "resume", meta.ID, "--data", data)
				} else {
					fork = cliResult(t, "fork", parent.Session, "--at", seqArg(at), "--data", data)
				}
				if fork.Events != parent.Events || fork.StateHash != parent.StateHash {
					t.Errorf("%s at seq %d: %d events, state hash %s; the parent has %d, %s", how, at, fork.Events, fork.StateHash, parent.Events, parent.StateHash)
					continue
				}
				if r := fork.Recalled; r == nil || r.Turns == 0 && r.FromCheckpoint == 0 || r.Differed != 0 {
					t.Errorf("%s at seq %d: recalled %+v, want past turns shown, each decided as recorded", how, at, r)
				} else if r.FromCheckpoint == 0 && at >= 100 || r.FromCheckpoint > at {
					// Each of them says what it remembers (agents.Keeper).
					t.Errorf("%s at seq %d: recalled from the checkpoint at %d; want one at or before the cut", how, at, r.FromCheckpoint)
				}
				sameEvents(t, how, storedEvents(t, data, fork.Session), want)
			}
			// Recorded as `run` records it, the agents asked within
			// batches: a checkpoint falls at a batch's end with a round
			// of turns still to ask, and keeps what they remember then.
			// A fork at each continues as the session did.
			batched := cliResult(t, "run", "--world", tc.world, "--seed", strconv.FormatUint(tc.seed, 10), "--agents", tc.agents,
				"--data", data, "--checkpoint-every", "100")
			if batched.StateHash != parent.StateHash || batched.Events != parent.Events {
				t.Fatalf("recorded with batches: %d events, %s; with a batch per step: %d, %s", batched.Events, batched.StateHash, parent.Events, parent.StateHash)
			}
			cps := checkpointSeqs(t, data, batched.Session)
			if len(cps) == 0 {
				t.Fatal("recorded with batches: no checkpoint")
			}
			for _, at := range cps[:min(3, len(cps))] {
				fork := cliResult(t, "fork", batched.Session, "--at", seqArg(at), "--data", data)
				if r := fork.Recalled; fork.StateHash != parent.StateHash || r == nil || r.FromCheckpoint != at || r.Differed != 0 {
					t.Errorf("fork at the checkpoint at %d of the batched session: state hash %s (want %s), recalled %+v", at, fork.StateHash, parent.StateHash, fork.Recalled)
				}
				sameEvents(t, "fork at a checkpoint of the batched session", storedEvents(t, data, fork.Session), want)
			}
			if tc.agents == "planner" {
				// The scorecard says the same in words.
				out := mustCLI(t, "fork", parent.Session, "--at", seqArg(steps[len(steps)/2]), "--data", data)
				if !strings.Contains(out, "recalled") || !strings.Contains(out, "0 decided otherwise than recorded") {
					t.Errorf("the fork's scorecard has no recalled line saying no past turn was decided otherwise:\n%s", out)
				}
				if !strings.Contains(out, "since the checkpoint at seq ") {
					t.Errorf("the fork's scorecard does not say which checkpoint its agents took their memory from:\n%s", out)
				}
			}
		})
	}
}
