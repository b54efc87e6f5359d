package driver_test

import (
	"bytes"
	"cmp"
	"context"
	"reflect"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/memlog"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

// ReadOrigin loads a large recorded world with its parts decoded on every
// processor (LoadWorld): the world is the one Load reads in one go.
func TestReadOriginOfALargeWorld(t *testing.T) {
	src := worlds.Generate(worlds.GenOptions{Seed: 2, Teams: 20, Members: 8000, Projects: 40, Tasks: 200, Chains: 4, Dispatch: worlds.DispatchOne})
	if len(src) < 3*256<<10 {
		t.Fatalf("precondition: the world file is %d bytes; want several of the 256 KiB parts it is read in", len(src))
	}
	w, err := worlds.Load("big.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: 1, Session: "big"})
	if err != nil {
		t.Fatal(err)
	}
	e.Start()
	first := e.Ready().Events[:1]
	ctx := context.Background()
	log := memlog.New()
	if err := events.Found(ctx, log, events.SessionMeta{ID: "big", Status: events.StatusInterrupted}, first); err != nil {
		t.Fatal(err)
	}
	o, err := driver.ReadOrigin(ctx, log, "big")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(o.World, w) {
		t.Fatal("the recorded world read back differs from the world loaded")
	}
	// A second fork or resume of the session shares the world loaded.
	if again, err := driver.ReadOrigin(ctx, log, "big"); err != nil || again.World != o.World {
		t.Fatalf("the origin read again loaded its world again (%v)", err)
	}
}

// A keyed session's engines draw with its recorded key, without the
// secret: a resume with its own seed, a fork going on with another seed
// with that seed and the key; an unkeyed session's with the seed alone.
func TestLoadKeepsTheDrawKey(t *testing.T) {
	src := simtest.Source(t, "meetings")
	w, err := worlds.Shipped("meetings")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	log := memlog.New()
	key := payload.NewDrawKey([]byte("secret"), 5)
	for id, k := range map[string][]byte{"keyed": key, "plain": nil} { // order: each session is its own
		e, err := sim.New(sim.Config{World: w, Source: src, Seed: 5, Session: id, DrawKey: k})
		if err != nil {
			t.Fatal(err)
		}
		e.Start()
		if err := events.Found(ctx, log, events.SessionMeta{ID: id, Status: events.StatusInterrupted}, e.Ready().Events[:1]); err != nil {
			t.Fatal(err)
		}
		o, err := driver.ReadOrigin(ctx, log, id)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(o.DrawKey, k) {
			t.Fatalf("%s: origin's key %x, want %x", id, o.DrawKey, k)
		}
		for _, seed := range []uint64{0, 9} {
			got, _, err := driver.Load(ctx, log, id, 0, seed)
			if err != nil {
				t.Fatal(err)
			}
			want := worlds.NewDraws(cmp.Or(seed, 5), k)
			if d := got.Draws(); d.Seed() != want.Seed() || d.Keyed() != (k != nil) || worlds.Draw(d, "probe") != worlds.Draw(want, "probe") {
				t.Errorf("%s loaded with seed %d: draws of seed %d, keyed %v; want seed %d with the recorded key", id, seed, d.Seed(), d.Keyed(), want.Seed())
			}
		}
	}
}
