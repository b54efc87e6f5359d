package analyze

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/simtest"
	"github.com/corpsim/corpsim/worlds"
)

// heldMeanwhileByWalk is what heldMeanwhile answers, found the way it
// was before the per-member index: by walking every task's holds.
func (s *Session) heldMeanwhileByWalk(member, skip string, a, b clock.Time) (what []string, total clock.Duration) {
	for _, task := range s.State.AllTasks() {
		if task.ID == skip {
			continue
		}
		var held clock.Duration // a task held more than once is named once
		for _, h := range s.spans(task.ID) {
			if h.member != member {
				continue
			}
			from, to := h.fromT, b
			if h.to != 0 {
				to = h.toT
			}
			if w := s.work(max(from, a), min(to, b)); w.MS > 0 {
				held += w.MS
				total += w.MS
			}
		}
		if held > 0 {
			what = append(what, fmt.Sprintf("%s (%s)", task.ID, s.dur(held).Text))
		}
	}
	return what, total
}

// TestHeldMeanwhileIndex: the per-member index of holds answers who held
// what in a window exactly as the walk over every task did, for windows
// around each hold's start and end and at random, on a desk whose
// colleagues and agents hand work back and forth (handoffs reopen holds)
// and on a project world.
func TestHeldMeanwhileIndex(t *testing.T) {
	for _, name := range []string{"support-desk", "product-launch", "claims"} {
		t.Run(name, func(t *testing.T) {
			src, err := worlds.Source(name)
			if err != nil {
				t.Fatal(err)
			}
			w, err := worlds.Load(name+".yaml", src)
			if err != nil {
				t.Fatal(err)
			}
			e, err := sim.New(sim.Config{World: w, Source: src, Seed: 7, Session: "s"})
			if err != nil {
				t.Fatal(err)
			}
			e.Start()
			evs := simtest.Events(t, e)
			s, err := Load(func(yield func(events.Event, error) bool) {
				for _, ev := range evs {
					if !yield(ev, nil) {
						return
					}
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(7, 7))
			end := s.State.Now
			var windows [][2]clock.Time
			var skips []string
			for _, task := range s.State.AllTasks() {
				for _, h := range s.spans(task.ID) {
					to := end
					if h.to != 0 {
						to = h.toT
					}
					windows = append(windows, [2]clock.Time{h.fromT - 1, h.fromT + 1}, [2]clock.Time{h.fromT, to}, [2]clock.Time{to - clock.Time(clock.Hour), to + clock.Time(clock.Hour)})
					skips = append(skips, task.ID)
				}
			}
			if len(windows) == 0 {
				t.Fatal("no holds: the test covers nothing")
			}
			for range 200 {
				a := clock.Time(rng.Int64N(int64(end) + 1))
				windows = append(windows, [2]clock.Time{a, a + clock.Time(rng.Int64N(int64(72*clock.Hour)))})
			}
			hits := 0
			for i, win := range windows {
				skip := ""
				if i/3 < len(skips) {
					skip = skips[i/3]
				}
				for _, m := range s.State.Members {
					got, gotTotal := s.heldMeanwhile(m.ID, skip, win[0], win[1])
					want, wantTotal := s.heldMeanwhileByWalk(m.ID, skip, win[0], win[1])
					if !slices.Equal(got, want) || gotTotal != wantTotal {
						t.Fatalf("%s from %d to %d (not %q): the index says %v (%d), the walk %v (%d)", m.ID, win[0], win[1], skip, got, gotTotal, want, wantTotal)
					}
					hits += len(got)
				}
			}
			if hits == 0 {
				t.Fatal("no window overlapped a hold: the test compares nothing")
			}
		})
	}
}
