package server

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
)

// damagedLog is a log whose event at seq bad no longer reads, as after a
// lost WAL: a scan or read that reaches it fails naming the session and
// seq, as pebblelog's does.
type damagedLog struct {
	*memlog.Log
	bad uint64
}

func (l damagedLog) Scan(ctx context.Context, id string, from uint64, fn func(*events.Event) error) error {
	return l.Log.Scan(ctx, id, from, func(ev *events.Event) error {
		if ev.Seq == l.bad {
			return &events.CorruptError{Session: id, Seq: l.bad, Err: errors.New("event missing")}
		}
		return fn(ev)
	})
}

// A server restarted on a log damaged before the session's latest
// checkpoint does not resume the session from that checkpoint (which
// made a session that could never be verified): ResumeSaved names the
// damage, session and seq.
func TestResumeSavedRefusesADamagedLog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	bus := mustBus(t)
	mem := memlog.New()
	stateFile := filepath.Join(t.TempDir(), "state.json")
	svc, err := New(Config{Log: mem, Bus: bus, Logger: hclog.NewNullLogger(), StateFile: stateFile, CheckpointEvery: 20})
	if err != nil {
		t.Fatal(err)
	}
	r, err := svc.Create(ctx, wire.CreateRequest{World: "support-desk-bench", Seed: 1, Agents: "greedy"})
	if err != nil {
		t.Fatal(err)
	}
	// A checkpoint is stored after its batch lands, so the log can pass
	// seq 20 before the first is there: wait for the checkpoint itself.
	past := func() bool {
		cps, _ := mem.Checkpoints(ctx, r.Session)
		return len(cps) > 0 && cps[len(cps)-1].Seq > 5
	}
	for !past() && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	svc.Close() // it stays in the state file, interrupted past a checkpoint
	if !past() {
		t.Fatal("no checkpoint after seq 5 within a minute: the test needs one")
	}
	again, err := New(Config{Log: damagedLog{mem, 5}, Bus: bus, Logger: hclog.NewNullLogger(), StateFile: stateFile})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	resumed, err := again.ResumeSaved(ctx)
	var ce *events.CorruptError
	if len(resumed) != 0 || !errors.As(err, &ce) || ce.Session != r.Session || ce.Seq != 5 {
		t.Fatalf("resumed %v, %v; want none, and the damage at seq 5 of %s", resumed, err, r.Session)
	}
}
