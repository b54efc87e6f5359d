package server

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/payload"
)

// A fork created on the service is played by agents made anew; those that
// remember (here planners, estimating the rate purchases come at from the
// ones they have seen) are shown their members' past turns first, so the
// fork of a finished session with the same seed and agents ends as its
// parent did. The fork points are states turns saw: the ends of steps.
// Without the recall, two of these six forks end otherwise.
func TestForkedPlannersRememberThePast(t *testing.T) {
	log := memlog.New()
	svc, err := New(Config{Log: log, Bus: mustBus(t), Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := svc.Create(ctx, wire.CreateRequest{World: "procurement", Seed: 3, Agents: "planner"})
	if err != nil {
		t.Fatal(err)
	}
	parent, err := svc.Wait(ctx, r.Session)
	if err != nil || parent.Status != events.StatusFinished {
		t.Fatalf("parent: %s, %v", parent.Status, err)
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
		f, err := svc.Create(ctx, wire.CreateRequest{Parent: parent.ID, ForkSeq: at, Agents: "planner"})
		if err != nil {
			t.Fatal(err)
		}
		m, err := svc.Wait(ctx, f.Session)
		if err != nil {
			t.Fatal(err)
		}
		if m.LastSeq != parent.LastSeq || m.StateHash != parent.StateHash {
			t.Errorf("fork at %d: %s with %d events, state hash %s; the parent has %d, %s", at, m.Status, m.LastSeq, m.StateHash, parent.LastSeq, parent.StateHash)
		}
	}
}
