package tests

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"testing"

	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/analyze"
	"github.com/corpsim/corpsim/worlds"
)

// Log format 4 changes the state, not the record: its events are format
// 3's, and the state they make retires a plain ticket at the event after
// its completion. So the same world, seed and agents recorded in formats 3
// and 4 give the same events but for the format session.started records
// and the state hashes; the retiring state holds only live work; its
// scorecard is format 3's; an analysis that keeps the retired tickets
// finds every one of them as format 3 left it, with the same hash and
// scorecard as the retiring engine; and the retired digest is the chain
// of the retired tickets' snapshots.
func TestFormat4RetiresWhatFormat3Keeps(t *testing.T) {
	cases := []goldenCase{
		{world: "support-desk", agent: "greedy", seed: 1},
		{world: "support-desk", agent: "planner", seed: 2},
		{world: "npc-desk", file: "npc-desk.yaml", agent: "greedy", seed: 1},
		{world: "same-instant", file: "same-instant.yaml", agent: "random", seed: 4},
		{world: "startup", agent: "greedy", seed: 1},      // project tasks: nothing retires but tickets
		{world: "procurement", agent: "planner", seed: 2}, // purchases: tickets with approvals stay
		{world: "billing-support", agent: "diligent", seed: 1},
		{world: "meetings", agent: "diligent", seed: 1},
	}
	masked := regexp.MustCompile(`"format":\d+|"state_hash":"[0-9a-f]*"`)
	for _, c := range cases {
		t.Run(c.name(), func(t *testing.T) {
			c3, c4 := c, c
			c3.format, c4.format = 3, 4
			ev3, ev4 := playGoldenCase(t, c3), playGoldenCase(t, c4)
			if len(ev3) != len(ev4) {
				t.Fatalf("format 3 holds %d events, format 4 %d", len(ev3), len(ev4))
			}
			for i := range ev3 {
				a, b := ev3[i], ev4[i]
				pa, pb := masked.ReplaceAll(a.Payload, nil), masked.ReplaceAll(b.Payload, nil)
				if a.Type != b.Type || a.Actor != b.Actor || a.Time != b.Time || a.Cause != b.Cause || string(pa) != string(pb) {
					t.Fatalf("event %d: format 3 %s %s, format 4 %s %s", a.Seq, a.Type, a.Payload, b.Type, b.Payload)
				}
			}
			st3, st4 := replayed(t, ev3), replayed(t, ev4)
			if st3.Retired() != nil {
				t.Fatal("a format-3 state retired tickets")
			}
			r := st4.Retired()
			if r == nil {
				t.Fatal("a format-4 state does not retire")
			}
			retirable := 0
			for _, task := range st3.Tasks() {
				if plainDone(task) {
					retirable++
				}
			}
			// The last event (session.ended) retires what the one before completed.
			if r.N != retirable || len(st4.Tasks()) != len(st3.Tasks())-r.N {
				t.Errorf("format 4 retired %d tickets and keeps %d tasks; format 3 has %d tasks, %d plain and done", r.N, len(st4.Tasks()), len(st3.Tasks()), retirable)
			}
			if c.world == "support-desk" && r.N == 0 {
				t.Error("nothing retired at the desk")
			}
			for _, task := range st4.Tasks() {
				if plainDone(task) {
					t.Errorf("ticket %s is plain and done and did not retire", task.ID)
				}
			}
			s3, s4 := policies.Score(st3), policies.Score(st4)
			slices.Sort(s3.Unverified)
			slices.Sort(s4.Unverified)
			if !reflect.DeepEqual(s3, s4) {
				a, _ := json.Marshal(s3)
				b, _ := json.Marshal(s4)
				t.Errorf("scorecards differ:\nformat 3 %s\nformat 4 %s", a, b)
			}

			// An analysis keeps the retired tickets: every one as format 3 left it.
			an, err := analyze.Load(seqOf(ev4))
			if err != nil {
				t.Fatal(err)
			}
			kept := an.State
			all := kept.AllTasks()
			if len(all) != len(st3.Tasks()) {
				t.Fatalf("the analysis finds %d tasks, format 3 has %d", len(all), len(st3.Tasks()))
			}
			for i, a := range st3.Tasks() {
				if got, want := taskOutcome(all[i]), taskOutcome(a); got != want {
					t.Errorf("task %d: kept %s, format 3 %s", i, got, want)
				}
				if kept.Task(a.ID) != all[i] {
					t.Errorf("the analysis does not find task %s by its ID", a.ID)
				}
				if all[i].Retired() && st4.Task(a.ID) != nil {
					t.Errorf("the retiring state still finds retired ticket %s", a.ID)
				}
			}
			// The end state restores from its snapshot to the same snapshot.
			if rs, err := org.Restore(st4.World, st4.Snapshot()); err != nil || string(rs.Snapshot()) != string(st4.Snapshot()) {
				t.Errorf("the end state does not restore to itself (%v)", err)
			}
			if kept.Hash() != st4.Hash() {
				t.Error("the analysis's state hash differs from the retiring engine's")
			}
			if sk := policies.Score(kept); !reflect.DeepEqual(sk, policies.Score(st4)) {
				t.Error("the analysis's scorecard differs from the retiring engine's")
			}

			// The digest chains the retired tickets' snapshots, in the order
			// they retired (by completion, then creation).
			var retired []*org.Task
			for _, task := range all {
				if task.Retired() {
					retired = append(retired, task)
				}
			}
			slices.SortStableFunc(retired, func(a, b *org.Task) int { return int(a.DoneSeq) - int(b.DoneSeq) })
			var d [32]byte
			for _, task := range retired {
				b, err := json.Marshal(task)
				if err != nil {
					t.Fatal(err)
				}
				d = sha256.Sum256(append(d[:], b...))
			}
			if want := hex.EncodeToString(d[:]); len(retired) > 0 && r.Digest != want {
				t.Errorf("retired digest %s, want the chain of the %d tickets' snapshots %s", r.Digest, len(retired), want)
			}
		})
	}
}

// plainDone reports whether a task of a state that does not retire is one
// format 4 would have retired: a done ticket that verifies by itself alone.
func plainDone(t *org.Task) bool {
	sp := t.Spec
	return t.Kind == org.KindTicket && t.Status == org.StatusDone && t.Case == "" && len(sp.Deps) == 0 &&
		sp.Info == nil && sp.Purchase == 0 && sp.Chain == "" && sp.Amount == 0 && t.Request == ""
}

// A format-4 state restored from its snapshot at any event, between a
// completion and the event that retires the ticket too, goes on to the
// end state of the one that was never interrupted.
func TestFormat4RestoredRetiresTheSame(t *testing.T) {
	c := goldenCase{world: "npc-desk", file: "npc-desk.yaml", agent: "greedy", seed: 1, format: 4}
	evs := playGoldenCase(t, c)
	end := replayed(t, evs)
	restores := 0
	for i, ev := range evs {
		done := ev.Type == payload.EvTaskCompleted || ev.Type == payload.EvTicketResolved
		if !done && i%97 != 0 || ev.Type == payload.EvSessionEnded {
			continue
		}
		e, err := sim.Rebuild(seqOf(evs[:i+1]), "golden", sim.Config{})
		if err != nil {
			t.Fatal(err)
		}
		st, err := org.Restore(e.State().World, e.State().Snapshot())
		if err != nil {
			t.Fatalf("restore at seq %d: %v", ev.Seq, err)
		}
		st.SetJudge(policies.Judge)
		if st.Hash() != e.State().Hash() {
			t.Fatalf("restored at seq %d: the hash differs", ev.Seq)
		}
		for _, next := range evs[i+1:] {
			if err := st.Apply(next); err != nil {
				t.Fatalf("restored at seq %d: %v", ev.Seq, err)
			}
		}
		if st.Hash() != end.Hash() || st.Retired().N != end.Retired().N {
			t.Fatalf("restored at seq %d: ends with %d retired and another hash; the session %d", ev.Seq, st.Retired().N, end.Retired().N)
		}
		restores++
	}
	if restores < 20 {
		t.Fatalf("only %d restores", restores)
	}
}

// When every ticket has retired, the state holds no tasks, and its
// checkpoint restores to the same hash (an empty list and none encode
// alike).
func TestFormat4EmptyStateRestores(t *testing.T) {
	src, err := worlds.Source("support-desk-bench")
	if err != nil {
		t.Fatal(err)
	}
	w, err := worlds.Load("support-desk-bench.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: 1, Session: "golden", Load: 0.005})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	evs := playOn(t, e, w, goldenCase{world: "support-desk-bench", agent: "greedy", seed: 1})
	if n := len(e.State().Tasks()); n != 0 || e.State().Retired().N < 500 {
		t.Fatalf("%d tasks live, %d retired, after %d events: want every ticket retired", n, e.State().Retired().N, len(evs))
	}
	hash, snap := e.Checkpoint()
	r, err := sim.Restore(sim.Config{World: w, Source: src, Seed: 1, Session: "golden"}, snap, hash)
	if err != nil {
		t.Fatal(err)
	}
	if r.StateHash() != e.EndStateHash() && r.StateHash() != e.StateHash() {
		t.Fatal("the restored state hashes otherwise")
	}
}
