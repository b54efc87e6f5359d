package app_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/oklog/ulid/v2"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/sim/driver"
)

// BenchmarkForkLoad measures what a rollout's start costs a server: the
// engine of a fork of a stored support-desk session (load 10, greedy,
// 13,655 events, durable, the default checkpoints) built at a quarter, a
// half and the end of it: the latest checkpoint restored, the events
// since re-applied (driver.LoadFork). Each op is one fork.
func BenchmarkForkLoad(b *testing.B) {
	ctx := context.Background()
	data := b.TempDir()
	res, err := app.Run(ctx, app.RunOptions{World: "support-desk", Seed: 1, Load: 10, Agents: "greedy", Data: data, Logger: hclog.NewNullLogger()})
	if err != nil {
		b.Fatal(err)
	}
	log, meta, err := app.OpenSession(ctx, data, res.Session, hclog.NewNullLogger())
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	for _, at := range []uint64{meta.LastSeq / 4, meta.LastSeq / 2, meta.LastSeq} {
		b.Run(fmt.Sprint("at=", at), func(b *testing.B) {
			for b.Loop() {
				m := events.SessionMeta{ID: ulid.Make().String(), World: meta.World, WorldHash: meta.WorldHash, Seed: meta.Seed,
					Parent: meta.ID, ForkSeq: at, Status: events.StatusInterrupted, LastSeq: at, Agents: meta.Agents}
				if _, _, err := driver.LoadFork(ctx, log, m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
