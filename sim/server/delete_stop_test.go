package server

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
)

// slowEndLog holds the record of a chosen session's interrupted end for
// a while after storing it: its log says interrupted, its engine is not
// let go of yet (the window a client that saw it stopped asks in).
type slowEndLog struct {
	*memlog.Log
	mu       sync.Mutex
	target   string
	recorded chan struct{}
	release  chan struct{}
}

func (l *slowEndLog) UpdateSession(ctx context.Context, m events.SessionMeta) error {
	err := l.Log.UpdateSession(ctx, m)
	l.mu.Lock()
	hit := m.ID == l.target && m.Status == events.StatusInterrupted
	l.mu.Unlock()
	if hit {
		close(l.recorded)
		<-l.release
	}
	return err
}

// TestDeleteWithForksWaitsForAStoppedFork: a fork stopped (op stop) whose
// interrupted end is in the log while it is still finishing here is
// waited for by a delete of its parent with its forks, not refused as
// running.
func TestDeleteWithForksWaitsForAStoppedFork(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lg := &slowEndLog{Log: memlog.New(), recorded: make(chan struct{}), release: make(chan struct{})}
	gate := make(chan struct{}) // never closed: the fork runs until stopped
	var fork string
	var fmu sync.Mutex
	gated := make(chan struct{})
	var gatedOnce sync.Once
	hooks := Hooks{Gate: func(ctx context.Context, id string) error {
		fmu.Lock()
		f := fork
		fmu.Unlock()
		if id != f {
			return nil
		}
		gatedOnce.Do(func() { close(gated) })
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	}}
	svc := mustServiceWith(t, Config{Log: lg, Bus: mustBus(t), Hooks: hooks})
	r, err := svc.Create(ctx, wire.CreateRequest{World: "meetings", Seed: 1, Agents: "greedy"})
	if err != nil {
		t.Fatal(err)
	}
	p := r.Session
	if m, err := svc.Wait(ctx, p); err != nil || m.Status != events.StatusFinished {
		t.Fatal(m.Status, err)
	}
	// The fork's id is not known before Create: make every later gate block
	// by naming it right after.
	r, err = svc.Create(ctx, wire.CreateRequest{Parent: p, ForkSeq: 1, Agents: "greedy"})
	if err != nil {
		t.Fatal(err)
	}
	f := r.Session
	fmu.Lock()
	fork = f
	fmu.Unlock()
	lg.mu.Lock()
	lg.target = f
	lg.mu.Unlock()
	<-gated
	// Stop it as op stop does.
	svc.mu.Lock()
	ss := svc.sessions[f]
	svc.mu.Unlock()
	ss.mu.Lock()
	ss.stopped = true
	ss.mu.Unlock()
	ss.cancel()
	select {
	case <-lg.recorded:
	case <-time.After(100 * time.Second):
		t.Fatal("fork's interrupted end never recorded")
	}
	if m, _ := lg.Session(ctx, f); m.Status != events.StatusInterrupted {
		t.Fatalf("fork's log status %s", m.Status)
	}
	go func() { time.Sleep(time.Second); close(lg.release) }()
	start := time.Now()
	done, err := svc.Delete(ctx, []string{p}, true)
	t.Logf("after %v: deleted %v, err %v", time.Since(start), done, err)
	if errors.Is(err, ErrRunning) || len(done) != 2 {
		t.Fatalf("delete of %s with its fork %s, stopped and finishing: %v, %v; want both deleted", p, f, done, err)
	}
}
