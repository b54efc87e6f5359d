package app

import (
	"os"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/worlds"
)

// TestAdmitOriginReadsAsRecorded: a resume, fork or reset checks the
// session's world again only within the limits given, and reads it as it
// was recorded: a check the loader gained since (here an outcome's value
// outside its field's enum) does not refuse a session recorded before it.
func TestAdmitOriginReadsAsRecorded(t *testing.T) {
	base, err := os.ReadFile("../../worlds/shipped/billing-support.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := []byte(strings.Replace(string(base), `status: "'refunded'"`, `status: "'refundd'"`, 1))
	if _, err := worlds.Load("w.yaml", src); err == nil {
		t.Fatal("the world loads as a new one; want it refused (the test shows nothing)")
	}
	w, err := worlds.LoadLimited("w.yaml", src, worlds.Limits{Recorded: true})
	if err != nil {
		t.Fatal(err)
	}
	o := driver.Origin{World: w, Source: src, Seed: 1, Load: 1, WorldLimits: worlds.Limits{Recorded: true}}
	for _, lim := range []worlds.Limits{{}, {Members: 30_000}} {
		if err := admitOrigin(o, lim); err != nil {
			t.Fatalf("limits %+v: %v", lim, err)
		}
	}
}
