package server

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/sim/driver"
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
