package worlds

import (
	"reflect"
	"testing"
)

// wantLoadError checks that src fails to load with exactly want, read at
// once and read a part at a time (as a large file is).
func wantLoadError(tb testing.TB, src []byte, want string) {
	tb.Helper()
	_, err := Load("w.yaml", src)
	if err == nil {
		tb.Fatalf("Load: no error, want %s", want)
	}
	if got := err.Error(); got != want {
		tb.Errorf("Load error:\ngot  %s\nwant %s", got, want)
	}
	if _, err := load("w.yaml", src, 1, Limits{}, nil); err == nil || err.Error() != want {
		tb.Errorf("load in parts: got error %v, want %s", err, want)
	}
}

// TestVersion2InParts: the version 2 constructs read a part at a time
// give the world read at once.
func TestVersion2InParts(t *testing.T) {
	for _, src := range [][]byte{
		mustEdit(t, v2("name: tiny\n", "name: tiny\ncosts: {claim: 1m}\nmessage_latency: 2h\n", "deadline: 12d", "deadline: 2026-01-21T17:00:00Z")...),
		mustEdit(t, v2(append(leave("{below: 1000}"), "horizon: 15d", "horizon: 2026-01-26T17:00:00Z")...)...),
		mustEdit(t, v2(slaArrival("{1: 1, 2: 1}", "{1: 1h, 2: 2h}")...)...),
	} {
		a := mustLoad(t, "w.yaml", src)
		b, err := load("w.yaml", src, 1, Limits{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if a.ActionCosts() != b.ActionCosts() || a.Horizon != b.Horizon || a.Projects[0].Deadline != b.Projects[0].Deadline ||
			!reflect.DeepEqual(a.Interruptions, b.Interruptions) || !reflect.DeepEqual(a.Arrivals, b.Arrivals) {
			t.Errorf("read in parts, the world differs:\n%+v\n%+v", a, b)
		}
	}
}
