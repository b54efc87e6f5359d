package server

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents/natsserver"
	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/sim/driver"
)

// mustBus starts an in-process NATS server that the test shuts down.
func mustBus(tb testing.TB) *natsserver.Server {
	tb.Helper()
	bus, err := natsserver.Start(natsserver.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(bus.Shutdown)
	return bus
}

// A session that panics (here its gate, after a few steps) is recorded
// failed with its last durable seq; the service and its other sessions go
// on, and a session created afterwards runs to its end.
func TestPanickingSessionFailsAlone(t *testing.T) {
	bus := mustBus(t)
	log := memlog.New()
	var mu sync.Mutex
	poisoned := map[string]bool{}
	steps := map[string]int{}
	hooks := Hooks{
		Starting: func(_ context.Context, l Launched) error {
			mu.Lock()
			defer mu.Unlock()
			poisoned[l.Meta.ID] = l.Meta.Seed == 13
			return nil
		},
		Gate: func(_ context.Context, id string) error {
			mu.Lock()
			steps[id]++
			bad := poisoned[id] && steps[id] > 20
			mu.Unlock()
			if bad {
				panic("a defect in session " + id)
			}
			return nil
		},
	}
	svc, err := New(Config{Log: log, Bus: bus, Logger: hclog.NewNullLogger(), Hooks: hooks})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	create := func(seed uint64) string {
		r, err := svc.Create(ctx, wire.CreateRequest{World: "support-desk", Seed: seed, Agents: "greedy"})
		if err != nil {
			t.Fatal(err)
		}
		return r.Session
	}
	bad, good := create(13), create(14)
	if _, err := svc.Wait(ctx, bad); !errors.Is(err, ErrPanicked) {
		t.Fatalf("the panicking session ended with %v, want ErrPanicked", err)
	}
	meta, err := log.Session(ctx, bad)
	if err != nil {
		t.Fatal(err)
	}
	last, _ := log.LastSeq(ctx, bad)
	if meta.Status != events.StatusFailed || meta.LastSeq != last || last == 0 {
		t.Fatalf("the panicking session is recorded %s at seq %d; the log holds %d events", meta.Status, meta.LastSeq, last)
	}
	for _, id := range []string{good, create(15)} {
		m, err := svc.Wait(ctx, id)
		if err != nil || m.Status != events.StatusFinished {
			t.Fatalf("session %s: %s, %v; want finished", id, m.Status, err)
		}
		if r := driver.Verify(ctx, log, m); !r.OK {
			t.Fatalf("session %s does not verify: %v", id, r.Problems)
		}
	}
}

// A session paused by its operator stays paused across a restart of the
// service: resumed from the state file, it waits until a start.
func TestPauseSurvivesRestart(t *testing.T) {
	bus := mustBus(t)
	log := memlog.New()
	stateFile := filepath.Join(t.TempDir(), "serve-state.json")
	op, err := bus.Connect("operator")
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	control := func(id string, o wire.ControlOp) wire.ControlReply {
		t.Helper()
		req, _ := json.Marshal(wire.ControlRequest{Op: o})
		msg, err := op.Request(wire.ControlSubject(id), req, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var r wire.ControlReply
		if err := json.Unmarshal(msg.Data, &r); err != nil || r.Error != "" {
			t.Fatalf("%s: %s, %v", o, r.Error, err)
		}
		return r
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	svc, err := New(Config{Log: log, Bus: bus, Logger: hclog.NewNullLogger(), StateFile: stateFile})
	if err != nil {
		t.Fatal(err)
	}
	r, err := svc.Create(ctx, wire.CreateRequest{World: "support-desk-bench", Load: 0.1, Seed: 3, Agents: "greedy"})
	if err != nil {
		t.Fatal(err)
	}
	id := r.Session
	control(id, wire.OpPause)
	svc.Close() // the restart: the session is interrupted and kept for ResumeSaved

	svc2, err := New(Config{Log: log, Bus: bus, Logger: hclog.NewNullLogger(), StateFile: stateFile})
	if err != nil {
		t.Fatal(err)
	}
	defer svc2.Close()
	if got, err := svc2.ResumeSaved(ctx); err != nil || len(got) != 1 || got[0] != id {
		t.Fatalf("resumed %v, %v; want [%s]", got, err, id)
	}
	if st := control(id, wire.OpStatus); st.Status != "paused" {
		t.Fatalf("resumed session is %q, want paused", st.Status)
	}
	before, _ := log.LastSeq(ctx, id)
	time.Sleep(300 * time.Millisecond)
	if after, _ := log.LastSeq(ctx, id); after != before {
		t.Fatalf("a paused session went on from seq %d to %d", before, after)
	}
	control(id, wire.OpStart)
	m, err := svc2.Wait(ctx, id)
	if err != nil || m.Status != events.StatusFinished {
		t.Fatalf("after start: %s, %v; want finished", m.Status, err)
	}
	if r := driver.Verify(ctx, log, m); !r.OK {
		t.Fatalf("verify: %v", r.Problems)
	}
}
