package app_test

import (
	"context"
	"errors"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/app"
)

// tampered is a log whose Scan hands out event seq with an empty payload, or
// whose Checkpoints lists checkpoint cp's hash wrong.
type tampered struct {
	events.Log
	seq uint64 // the event changed, or 0
	cp  uint64 // the checkpoint whose listed hash is wrong, or 0
}

func (l tampered) Scan(ctx context.Context, id string, from uint64, fn func(*events.Event) error) error {
	return l.Log.Scan(ctx, id, from, func(ev *events.Event) error {
		if ev.Seq == l.seq {
			c := ev.Clone()
			c.Payload = []byte(`{}`)
			return fn(&c)
		}
		return fn(ev)
	})
}

func (l tampered) Checkpoints(ctx context.Context, id string) ([]events.Checkpoint, error) {
	cps, err := l.Log.Checkpoints(ctx, id)
	for i := range cps {
		if cps[i].Seq == l.cp {
			cps[i].StateHash = "0000"
		}
	}
	return cps, err
}

// Replay in segments from checkpoints (on several processors) ends at the
// state a pass from event 1 reaches, whatever the number of segments; and
// a wrong event in any segment, or a checkpoint that does not hold the
// state replayed up to it, is a mismatch, as it is for the one pass.
func TestReplayInSegmentsIsReplayFromEventOne(t *testing.T) {
	ctx := context.Background()
	log := memlog.New()
	res, err := app.Run(ctx, app.RunOptions{World: "support-desk", Seed: 3, Agents: "greedy", Log: log, CheckpointEvery: 300})
	if err != nil {
		t.Fatal(err)
	}
	cps, err := log.Checkpoints(ctx, res.Session)
	if err != nil || len(cps) < 6 {
		t.Fatalf("precondition: %d checkpoints, %v; want several to cut at", len(cps), err)
	}
	one, err := app.ReplayEngine(ctx, log, res.Session, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := one.EndStateHash()
	if want == "" || want != res.StateHash {
		t.Fatalf("one pass: end hash %q, the run's %q", want, res.StateHash)
	}
	for _, k := range []int{2, 3, 5, 8} {
		e, err := app.ReplayEngine(ctx, log, res.Session, k)
		if err != nil || e.EndStateHash() != want || e.State().LastSeq != one.State().LastSeq {
			t.Fatalf("%d segments: %v; end hash %q at seq %d, want %q at %d", k, err, e.EndStateHash(), e.State().LastSeq, want, one.State().LastSeq)
		}
	}
	last := one.State().LastSeq
	// created is the first task.created at or after seq: an event whose
	// payload emptied cannot be applied.
	created := func(seq uint64) uint64 {
		for ev, err := range log.Read(ctx, res.Session, seq) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Type == "task.created" {
				return ev.Seq
			}
		}
		t.Fatalf("no task.created from seq %d", seq)
		return 0
	}
	for _, bad := range []struct {
		name string
		log  tampered
	}{
		{"an event of the first segment", tampered{Log: log, seq: created(100)}},
		{"an event of a middle segment", tampered{Log: log, seq: created(last / 2)}},
		{"an event of the last segment", tampered{Log: log, seq: created(last * 9 / 10)}},
		{"a checkpoint that is not the state before it", tampered{Log: log, cp: cps[len(cps)/2].Seq}},
	} {
		t.Run(bad.name, func(t *testing.T) {
			for _, k := range []int{1, 2, 4} {
				_, err := app.ReplayEngine(ctx, bad.log, res.Session, k)
				if bad.log.cp != 0 && k == 1 {
					continue // the one pass does not read the list
				}
				if err == nil {
					t.Fatalf("%d segments: no error", k)
				}
				if bad.log.cp != 0 && !errors.Is(err, sim.ErrReplayMismatch) {
					t.Fatalf("%d segments: %v, want a mismatch", k, err)
				}
			}
		})
	}
}
