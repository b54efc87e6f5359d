package sim_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

// hoarder claims up to three of the tasks it may take, last listed first
// (so not in the order they were created), works what greedy would, and
// never hands anything over: at a shift's end it still holds them, and
// the handover violation names them.
func hoarder(o org.Observation) sim.Answer {
	var acts []org.Action
	if len(o.Assigned) < 3 {
		avail := o.Available[:min(len(o.Available), 3)]
		for _, t := range slices.Backward(avail) {
			acts = append(acts, org.Action{Type: org.ActClaim, Task: t.ID})
		}
	}
	for _, a := range greedy(o).Actions {
		if a.Type != org.ActHandoff && a.Type != org.ActClaim {
			acts = append(acts, a)
		}
	}
	return sim.Answer{Member: o.Member, Turn: o.Turn, Actions: acts}
}

// TestRestoredCheckpointContinuesTheSameLog cuts a wind-ops run (shifts
// with handover) at many points, restores an engine from the checkpoint
// taken there and resumes it: the continuation must be the uninterrupted
// run's log, byte for byte. Its members hold several tasks taken out of
// creation order when their shifts end; the handover violation lists
// them, in the order a restored state holds them too.
func TestRestoredCheckpointContinuesTheSameLog(t *testing.T) {
	src, err := worlds.Source("wind-ops")
	if err != nil {
		t.Fatal(err)
	}
	w, err := worlds.Load("wind-ops.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.Config{World: w, Source: src, Seed: 2, Session: "s"}
	full, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	full.Start()
	type cut struct {
		events     int
		hash       string
		checkpoint []byte
	}
	var want []events.Event
	var cuts []cut
	for step := 0; ; step++ {
		rd := full.Ready()
		want = append(want, rd.Events...)
		full.Advance()
		if rd.Done {
			break
		}
		if step%401 == 50 {
			h, cp := full.Checkpoint()
			cuts = append(cuts, cut{len(want), h, cp})
		}
		if len(rd.Turns) == 0 {
			full.Tick()
			continue
		}
		var ans []sim.Answer
		for _, tu := range rd.Turns {
			ans = append(ans, hoarder(tu.Observation))
		}
		full.Step(ans)
	}
	listed := 0 // handover violations naming more than one task
	for _, ev := range want {
		if ev.Type == payload.EvActionRejected {
			r, err := payload.As[payload.ActionRejected](&ev, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r.Rule == worlds.RuleHandover && strings.Contains(r.Reason, ", ") {
				listed++
			}
		}
	}
	if listed == 0 || len(cuts) < 5 {
		t.Fatalf("the run has %d handover violations naming several tasks and %d cuts: it tests nothing", listed, len(cuts))
	}
	for _, c := range cuts {
		e, err := sim.Restore(cfg, c.checkpoint, c.hash)
		if err != nil {
			t.Fatalf("cut at %d events: %v", c.events, err)
		}
		e.Resume()
		rest := drive(t, e, hoarder, false, 0)
		equalLogs(t, append(slices.Clone(want[:c.events]), rest...), want)
	}
	t.Logf("%d events, %d cuts, %d handover violations naming several tasks", len(want), len(cuts), listed)
}
