package driver_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

// LoadWorld reads a file once for all its sessions: the same name, bytes
// and limits give the world loaded before; other bytes, another name or
// other limits are loaded on their own; a file that does not load is an
// error every time; and the least recently used world is let go once more
// are kept.
func TestLoadWorldReadsAFileOnce(t *testing.T) {
	src := simtest.Source(t, "procurement")
	first, err := driver.LoadWorld("procurement.yaml", src, worlds.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := driver.LoadWorld("procurement.yaml", append([]byte(nil), src...), worlds.Limits{}); again != first {
		t.Error("the same file was loaded again")
	}
	want, err := worlds.Load("procurement.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first, want) {
		t.Error("the world kept differs from the file loaded")
	}
	for name, other := range map[string]func() (*worlds.World, error){
		"other bytes": func() (*worlds.World, error) {
			return driver.LoadWorld("procurement.yaml", append(append([]byte(nil), src...), "\n# changed\n"...), worlds.Limits{})
		},
		"another name": func() (*worlds.World, error) { return driver.LoadWorld("elsewhere.yaml", src, worlds.Limits{}) },
		"other limits": func() (*worlds.World, error) {
			return driver.LoadWorld("procurement.yaml", src, worlds.Limits{Members: 100})
		},
	} {
		w, err := other()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if w == first {
			t.Errorf("%s: given the world of another file", name)
		}
	}
	bad := []byte("name: bad\nmembers: [\n")
	for range 2 {
		if _, err := driver.LoadWorld("bad.yaml", bad, worlds.Limits{}); err == nil {
			t.Fatal("a file that does not parse loaded")
		}
	}
	// Limits the file does not keep refuse it, whatever was loaded before.
	if _, err := driver.LoadWorld("procurement.yaml", src, worlds.Limits{Members: 2}); err == nil {
		t.Error("a world of more members than its limit loaded")
	}
	// Many other worlds later, the first is loaded anew.
	for i := range 40 {
		if _, err := driver.LoadWorld(fmt.Sprintf("w%d.yaml", i), src, worlds.Limits{}); err != nil {
			t.Fatal(err)
		}
	}
	if w, _ := driver.LoadWorld("procurement.yaml", src, worlds.Limits{}); w == first {
		t.Error("the least recently used world was kept past the bound")
	}
}

// Sessions share the worlds LoadWorld keeps, so playing one must not
// change its world: a session played on a world another session played
// before is event for event the one played on a world of its own.
func TestSessionsOnASharedWorldAreTheirOwn(t *testing.T) {
	for _, name := range []string{"product-launch", "support-desk", "procurement"} {
		src := simtest.Source(t, name)
		shared, err := driver.LoadWorld(name+".yaml", src, worlds.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		own, err := worlds.Load(name+".yaml", src)
		if err != nil {
			t.Fatal(err)
		}
		play := func(w *worlds.World, seed uint64) []events.Event {
			e, err := sim.New(sim.Config{World: w, Source: src, Seed: seed, Session: "s"})
			if err != nil {
				t.Fatal(err)
			}
			e.Start()
			return simtest.Events(t, e)
		}
		play(shared, 1)
		play(shared, 2)
		if !reflect.DeepEqual(shared, own) {
			t.Errorf("%s: playing sessions changed the world they share", name)
		}
		if got, want := play(shared, 3), play(own, 3); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: a session on the shared world played otherwise (%d events, %d on its own)", name, len(got), len(want))
		}
	}
}
