package server

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/worlds"
)

// A server with a secret keys the sessions it creates: session.started
// records NewDrawKey(secret, seed), the built-in oracle is told the keyed
// truth (its session is the one app.Run plays with the same secret, state
// hash for state hash), and a fork with another seed goes on with the
// recorded key and verifies, with no secret asked.
func TestServedSessionsAreKeyed(t *testing.T) {
	bus := mustBus(t)
	log := memlog.New()
	secret := []byte("operator's secret")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	svc := mustServiceWith(t, Config{Log: log, Bus: bus, Secret: secret})
	finish := func(req wire.CreateRequest) events.SessionMeta {
		t.Helper()
		r, err := svc.Create(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		m, err := svc.Wait(ctx, r.Session)
		if err != nil || m.Status != events.StatusFinished {
			t.Fatalf("%s: %s, %v; want finished", r.Session, m.Status, err)
		}
		if res := driver.Verify(ctx, log, m); !res.OK {
			t.Fatalf("verify %s: %v", r.Session, res.Problems)
		}
		return m
	}
	m := finish(wire.CreateRequest{World: "meetings", Seed: 3, Agents: "oracle"})
	open := finish(wire.CreateRequest{World: "meetings", Seed: 3, Agents: "oracle", DrawDomain: wire.DrawDomainOpen})
	keyOf := func(id string) []byte {
		t.Helper()
		for ev, err := range log.Read(ctx, id, 1) {
			var p payload.SessionStarted
			if err != nil || json.Unmarshal(ev.Payload, &p) != nil {
				t.Fatalf("session.started of %s: %v", id, err)
			}
			return p.DrawKey
		}
		return nil
	}
	if a, b := keyOf(open.ID), keyOf(m.ID); len(a) == 0 || bytes.Equal(a, b) {
		t.Fatalf("the open domain's key %x; the operator's %x: want another key", a, b)
	}
	var first *events.Event
	for ev, err := range log.Read(ctx, m.ID, 1) {
		if err != nil {
			t.Fatal(err)
		}
		first = &ev
		break
	}
	var p payload.SessionStarted
	if err := json.Unmarshal(first.Payload, &p); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(p.DrawKey, payload.NewDrawKey(secret, 3)) || p.Format != payload.LogFormat {
		t.Fatalf("served session.started: format %d, key %x; want format %d and the secret's key", p.Format, p.DrawKey, payload.LogFormat)
	}
	var ended payload.SessionEnded
	for ev, err := range log.Read(ctx, m.ID, m.LastSeq) {
		if err != nil || ev.Type != payload.EvSessionEnded {
			t.Fatalf("event %d: %s, %v; want session.ended", m.LastSeq, ev.Type, err)
		}
		if err := json.Unmarshal(ev.Payload, &ended); err != nil {
			t.Fatal(err)
		}
	}
	res, err := app.Run(ctx, app.RunOptions{World: "meetings", Seed: 3, Agents: "oracle", Secret: secret, Ephemeral: true, CheckpointEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	if res.StateHash != ended.StateHash || res.Events != m.LastSeq {
		t.Fatalf("served oracle session: %d events, state hash %s; app.Run's with the same secret: %d, %s", m.LastSeq, ended.StateHash, res.Events, res.StateHash)
	}
	fork := finish(wire.CreateRequest{Parent: m.ID, ForkSeq: 18, Seed: 9, Agents: "diligent"})
	e, _, err := driver.Load(ctx, log, fork.ID, 0, fork.Seed) // as the server continued it
	if err != nil {
		t.Fatal(err)
	}
	if d, want := e.Draws(), worlds.NewDraws(9, p.DrawKey); d.Seed() != 9 || worlds.Draw(d, "probe") != worlds.Draw(want, "probe") {
		t.Fatalf("fork's draws: seed %d, keyed %v; want seed 9 with the recorded key", d.Seed(), d.Keyed())
	}
}
