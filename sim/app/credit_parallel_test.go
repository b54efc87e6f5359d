package app

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/corpsim/corpsim/sim/analyze"
)

// playAll returns the forks in the order of their coalitions however they
// end, tells done each count once, and stops at the first error: the
// forks not begun are not played, and those under way see their context
// cancelled.
func TestPlayAllKeepsOrderAndStopsAtAnError(t *testing.T) {
	ins := make([]analyze.Coalition, 9)
	for i := range ins {
		ins[i] = analyze.Coalition{fmt.Sprint(i)}
	}
	for _, parallel := range []int{1, 3, 20} {
		var seen []int
		forks, err := playAll(context.Background(), ins, parallel, func(_ context.Context, in analyze.Coalition) (CreditFork, error) {
			return CreditFork{Session: "f" + in[0]}, nil
		}, func(n int) { seen = append(seen, n) })
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range forks {
			if f.Session != fmt.Sprint("f", i) {
				t.Fatalf("parallel %d: fork %d is %s", parallel, i, f.Session)
			}
		}
		if len(seen) != len(ins) || seen[len(seen)-1] != len(ins) {
			t.Fatalf("parallel %d: done told %v", parallel, seen)
		}
	}

	bad := errors.New("fork 2 failed")
	var played atomic.Int32
	var cancelled atomic.Bool
	_, err := playAll(context.Background(), ins, 1, func(ctx context.Context, in analyze.Coalition) (CreditFork, error) {
		played.Add(1)
		if in[0] == "2" {
			return CreditFork{}, bad
		}
		return CreditFork{}, nil
	}, func(int) {})
	if !errors.Is(err, bad) || played.Load() != 3 {
		t.Fatalf("one at a time: %v after %d forks; want fork 2's error after 3", err, played.Load())
	}
	// Two at once: the one under way when the other fails is cancelled.
	release := make(chan struct{})
	_, err = playAll(context.Background(), ins[:2], 2, func(ctx context.Context, in analyze.Coalition) (CreditFork, error) {
		if in[0] == "0" {
			<-release
			return CreditFork{}, bad
		}
		close(release)
		<-ctx.Done()
		cancelled.Store(true)
		return CreditFork{}, ctx.Err()
	}, func(int) {})
	if !errors.Is(err, bad) || !cancelled.Load() {
		t.Fatalf("two at once: %v, the other cancelled %v; want fork 0's error and the other cancelled", err, cancelled.Load())
	}
}
