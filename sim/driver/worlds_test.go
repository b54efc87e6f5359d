package driver_test

import (
	"fmt"
	"reflect"
	"strings"
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

// Sessions share the worlds LoadWorld keeps, so playing one (cases,
// calendars and shifts, systems and meetings included) must not
// change its world: a session played on a world another session played
// before is event for event the one played on a world of its own.
func TestSessionsOnASharedWorldAreTheirOwn(t *testing.T) {
	for _, name := range []string{"product-launch", "support-desk", "procurement", "wind-ops", "claims", "billing-support", "meetings"} {
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

// What LoadWorld keeps is bounded by the worlds' weight, not their files':
// a small file whose long horizon lays out years of rotated shifts weighs
// its calendars, and one heavier than the bound is loaded every time.
func TestLoadWorldKeepsWhatItsBoundHolds(t *testing.T) {
	defer driver.KeepWorlds(16, 2<<20)()
	src := simtest.Source(t, "wind-ops")
	long := []byte(strings.Replace(string(src), "horizon: 14d", "horizon: 3650d", 1))
	if string(long) == string(src) {
		t.Fatal("precondition: wind-ops's horizon is not 14d")
	}
	short, err := driver.LoadWorld("wind-ops.yaml", src, worlds.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	heavy, err := driver.LoadWorld("wind-ops.yaml", long, worlds.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if ws, wl := driver.WorldWeight(short), driver.WorldWeight(heavy); ws >= 2<<20 || wl <= 2<<20 {
		t.Fatalf("precondition: weights %d (14 days) and %d (ten years) do not straddle the bound", ws, wl)
	}
	if again, _ := driver.LoadWorld("wind-ops.yaml", src, worlds.Limits{}.WithDefaults()); again != short {
		t.Error("the world under the bound was not kept (or default limits given explicitly are another key)")
	}
	if again, _ := driver.LoadWorld("wind-ops.yaml", long, worlds.Limits{}); again == heavy {
		t.Error("a world heavier than the bound was kept")
	}
}
