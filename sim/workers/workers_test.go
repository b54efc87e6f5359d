package workers

import (
	"sync"
	"sync/atomic"
	"testing"
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
