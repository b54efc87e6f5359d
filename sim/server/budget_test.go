package server

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

// The service's MaxEvents is every session's budget: a session that spends
// it ends finished, "event_limit", with its log within the budget.
func TestServiceMaxEvents(t *testing.T) {
	bus := mustBus(t)
	log := memlog.New()
	svc, err := New(Config{Log: log, Bus: bus, Logger: hclog.NewNullLogger(), MaxEvents: 250})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, err := svc.Create(ctx, wire.CreateRequest{World: "support-desk", Seed: 3, Agents: "greedy"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := svc.Wait(ctx, r.Session)
	if err != nil || m.Status != events.StatusFinished || m.LastSeq > 250 || m.LastSeq < 230 {
		t.Fatalf("session: %s with %d events, %v; want finished within 250 events", m.Status, m.LastSeq, err)
	}
	e, _, err := driver.Load(ctx, log, r.Session, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := e.State().EndReason; got != "event_limit" {
		t.Fatalf("ended %q, want event_limit", got)
	}
}

// MaxWorldMemory bounds the estimated memory of the worlds the running
// sessions play: more sessions of a world already running are admitted
// (it counts once), a session of another world that would pass the bound
// is refused naming the flag, and admitted once the others have ended.
func TestServiceMaxWorldMemory(t *testing.T) {
	desk, err := driver.LoadWorld("support-desk.yaml", simtest.Source(t, "support-desk"), worlds.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	proc, err := driver.LoadWorld("procurement.yaml", simtest.Source(t, "procurement"), worlds.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := New(Config{Log: memlog.New(), Bus: mustBus(t), Logger: hclog.NewNullLogger(),
		MaxWorldMemory: int64(driver.WorldWeight(desk) + driver.WorldWeight(proc) - 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var held []string
	for seed := uint64(1); seed <= 3; seed++ { // waiting for a start message: running until stopped
		r, err := svc.Create(ctx, wire.CreateRequest{World: "support-desk", Seed: seed, Agents: "greedy", Wait: true})
		if err != nil {
			t.Fatalf("session %d of the world already running: %v", seed, err)
		}
		held = append(held, r.Session)
	}
	svc.mu.Lock()
	first, second := svc.sessions[held[0]].world, svc.sessions[held[1]].world
	svc.mu.Unlock()
	if first != second {
		t.Error("two sessions of one world each loaded it: they should share it (driver.LoadWorld)")
	}
	_, err = svc.Create(ctx, wire.CreateRequest{World: "procurement", Seed: 1, Agents: "greedy", Wait: true})
	if !errors.Is(err, ErrTooManySessions) || !strings.Contains(err.Error(), "--max-world-memory") {
		t.Fatalf("a session of another world past the bound: %v; want it refused naming --max-world-memory", err)
	}
	for _, id := range held {
		svc.mu.Lock()
		ss := svc.sessions[id]
		svc.mu.Unlock()
		ss.cancel()
		<-ss.done
	}
	if _, err := svc.Create(ctx, wire.CreateRequest{World: "procurement", Seed: 1, Agents: "greedy", Wait: true}); err != nil {
		t.Fatalf("once the others ended: %v", err)
	}
}
