package workers

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Every function given to Run runs exactly once, whether a worker is idle
// or a new one starts.
func TestRunCallsEachFunctionOnce(t *testing.T) {
	p := New()
	var mu sync.Mutex
	ran := map[int]int{}
	var wg sync.WaitGroup
	for i := range 500 {
		wg.Add(1)
		p.Run(func() {
			defer wg.Done()
			mu.Lock()
			ran[i]++
			mu.Unlock()
		})
	}
	wg.Wait()
	for i := range 500 {
		if ran[i] != 1 {
			t.Fatalf("function %d ran %d times", i, ran[i])
		}
	}
}

// Parallel calls f once for every index, whatever the number of indices
// against the processors, and only returns once all the calls have.
func TestParallelCallsEachIndexOnce(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3, 17, 1000} {
		calls := make([]atomic.Int32, n)
		var done atomic.Int32
		Parallel(n, func(i int) {
			calls[i].Add(1)
			done.Add(1)
		})
		if got := int(done.Load()); got != n {
			t.Fatalf("n=%d: %d calls had returned when Parallel did", n, got)
		}
		for i := range calls {
			if c := calls[i].Load(); c != 1 {
				t.Fatalf("n=%d: f(%d) called %d times, want once", n, i, c)
			}
		}
	}
}

// ParallelN runs at most k calls at once, each index once, and more than
// one at once when k allows it (each call sleeps a millisecond, so the
// goroutines' calls overlap).
func TestParallelNBoundsTheCallsAtOnce(t *testing.T) {
	for _, k := range []int{1, 2, 5} {
		var now, most atomic.Int32
		calls := make([]atomic.Int32, 40)
		ParallelN(k, len(calls), func(i int) {
			n := now.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(time.Millisecond)
			calls[i].Add(1)
			now.Add(-1)
		})
		for i := range calls {
			if c := calls[i].Load(); c != 1 {
				t.Fatalf("k=%d: f(%d) called %d times, want once", k, i, c)
			}
		}
		if m := int(most.Load()); m > k || k > 1 && m < 2 {
			t.Fatalf("k=%d: %d calls at once at most; want at most %d, and more than one", k, m, k)
		}
	}
}

// TestChainRunsInOrderOneAtATime gives a Chain functions that append to
// one slice without a lock: the race detector would see two at once, and
// the slice says in what order they ran. Wait returns once all have.
func TestChainRunsInOrderOneAtATime(t *testing.T) {
	c := NewChain()
	c.Wait() // nothing given yet
	var order []int
	for round := range 3 {
		for i := range 200 {
			c.Do(func() { order = append(order, round*200+i) })
		}
		c.Wait()
		if len(order) != (round+1)*200 {
			t.Fatalf("after round %d's Wait, %d functions had run", round, len(order))
		}
	}
	for i, v := range order {
		if v != i {
			t.Fatalf("function %d ran %dth", v, i)
		}
	}
}
