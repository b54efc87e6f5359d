package pebblelog

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Every caller of a flushGroup is answered by a flush that began after it
// called, and the callers that come while one runs share the next: a
// flush held while ten callers arrive is followed by one more, not ten.
func TestFlushGroupSharesTheNextFlush(t *testing.T) {
	var (
		g       flushGroup
		mu      sync.Mutex
		begun   int
		holding = make(chan struct{})
		release = make(chan struct{})
	)
	// flush numbers itself in its error, so a caller knows which one
	// answered it.
	flush := func() error {
		mu.Lock()
		begun++
		n := begun
		mu.Unlock()
		if n == 1 {
			close(holding)
			<-release
		}
		return fmt.Errorf("%d", n)
	}
	answered := func() int {
		mu.Lock()
		defer mu.Unlock()
		return begun
	}
	first := make(chan error, 1)
	go func() { first <- g.do(flush) }()
	<-holding
	const callers = 10
	var wg sync.WaitGroup
	errs := make([]string, callers)
	var called sync.WaitGroup
	called.Add(callers)
	for i := range callers {
		wg.Go(func() {
			called.Done()
			errs[i] = g.do(flush).Error()
		})
	}
	called.Wait()
	// Each has called, or is about to (given a moment to): none may be
	// answered by flush 1, which began before them.
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	if err := <-first; err.Error() != "1" {
		t.Fatalf("the first caller was answered by flush %v, want 1", err)
	}
	for i, e := range errs {
		if n, _ := strconv.Atoi(e); n < 2 {
			t.Errorf("caller %d, who called while flush 1 ran, was answered by flush %s", i, e)
		}
	}
	if n := answered(); n > 6 {
		// 2 when all ten joined the flush after the held one, more when
		// the scheduler let some call only after flush 2 had begun; 11
		// if each had its own.
		t.Fatalf("%d flushes for 11 callers, ten of them at once; want them to share", n)
	}
	t.Logf("%d flushes for 11 callers", answered())
	// An idle group flushes for a lone caller at once.
	if err := g.do(flush); err.Error() != strconv.Itoa(answered()) {
		t.Fatalf("a lone caller was answered by flush %v, want the last, %d", err, answered())
	}
}

// A flush that panics (Pebble's broken invariant) panics in the callers it
// answers, as if each had flushed itself, and not on the group's own
// goroutine, where nothing could recover it; the group goes on.
func TestFlushGroupPanicsInItsCallers(t *testing.T) {
	var g flushGroup
	got := func() (p any) {
		defer func() { p = recover() }()
		_ = g.do(func() error { panic("broken invariant") })
		return nil
	}()
	if got != "broken invariant" {
		t.Fatalf("the caller recovered %v, want the flush's panic", got)
	}
	if err := g.do(func() error { return nil }); err != nil {
		t.Fatalf("the next flush: %v", err)
	}
}
