package policies_test

import (
	"math"
	"os"
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/worlds"
)

// TestLatenessOnTheTeamsSchedule checks that a late task loses value for
// the working time of its team past the deadline: round the clock for the
// 24/7 desk, none over a weekend for the Tokyo team.
func TestLatenessOnTheTeamsSchedule(t *testing.T) {
	src, err := os.ReadFile("../worlds/testdata/rota.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w, err := worlds.Load("rota.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	s := org.New(w)
	// Time 0 is Monday 2026-03-23 08:00 UTC; from Saturday 00:00 UTC to Sunday 00:00 UTC.
	sat := clock.Time(4*24*clock.Hour + 16*clock.Hour)
	late := func(team string) float64 {
		v, onTime := policies.Earned(s, &org.Task{Team: team, Value: 10, Deadline: sat, DoneAt: sat.Add(24 * clock.Hour)})
		if onTime {
			t.Fatalf("%s: on time", team)
		}
		return v
	}
	want := 10 * math.Pow(0.5, float64(24*clock.Hour)/float64(w.Scoring.LateHalfLife))
	if got := late("desk"); math.Abs(got-want) > 1e-9 {
		t.Errorf("desk: earned %v, want %v (a whole day late)", got, want)
	}
	if got := late("eng"); got != 10 {
		t.Errorf("eng: earned %v, want 10 (no working time on a weekend)", got)
	}
}
