package pebblelog_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/pebblelog"
)

// A session founded with its first batch is one write: a crash keeps all
// of it (the write was synced) or, for an unsynced log that loses some of
// what it had not synced, all of it or none of it — never the metadata
// without the events, nor some of the events. Each crash image is taken
// with a different share of the unsynced bytes kept.
func TestFoundingIsOneWriteThroughACrash(t *testing.T) {
	ctx := context.Background()
	const n = 300 // events of the founding batch: several WAL blocks
	for _, noSync := range []bool{false, true} {
		fs := vfs.NewCrashableMem()
		l := mustOpen(t, "db", pebblelog.Options{FS: fs, NoSync: noSync})
		mustCreate(t, l, meta("before"))
		appendN(t, l, "before", 0, 10)
		if err := events.Found(ctx, l, meta("founded"), mkEvents(1, n)); err != nil {
			t.Fatalf("Found: %v", err)
		}
		whole, partial := 0, 0
		for seed := range uint64(40) {
			cfg := vfs.CrashCloneCfg{}
			if noSync {
				cfg = vfs.CrashCloneCfg{UnsyncedDataPercent: int(seed * 100 / 40), RNG: rand.New(rand.NewPCG(seed, 7))}
			}
			img := fs.CrashClone(cfg)
			r := mustOpen(t, "db", pebblelog.Options{FS: img, ReadOnly: true})
			_, serr := r.Session(ctx, "founded")
			evs, rerr := readAll(r, "founded", 1)
			switch {
			case serr == nil && rerr == nil && len(evs) == n:
				whole++
			case errors.Is(serr, events.ErrNoSession) && !noSync:
				t.Fatalf("synced: the founded session is gone after a crash")
			case errors.Is(serr, events.ErrNoSession):
				partial++ // nothing of it: allowed when unsynced
			default:
				t.Fatalf("noSync=%v, seed %d: the founded session after a crash: metadata %v, %d events, %v; want it whole or absent", noSync, seed, serr, len(evs), rerr)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
		}
		if !noSync && whole != 40 {
			t.Fatalf("synced: whole in %d of 40 crash images", whole)
		}
		t.Logf("noSync=%v: whole in %d crash images, absent in %d", noSync, whole, partial)
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
