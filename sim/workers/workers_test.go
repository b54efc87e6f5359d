package workers

import (
	"sync"
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
