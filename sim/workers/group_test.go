package workers

import (
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Every caller of a Group is answered by a call that began after it
// called, and the callers that come while one runs share the next: a call
// held while ten callers arrive is followed by one more, not ten.
func TestGroupSharesTheNextCall(t *testing.T) {
	var (
		g       Group
		mu      sync.Mutex
		begun   int
		holding = make(chan struct{})
		release = make(chan struct{})
	)
	// f numbers itself in its error, so a caller knows which call
	// answered it.
	f := func() error {
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
	made := func() int {
		mu.Lock()
		defer mu.Unlock()
		return begun
	}
	first := make(chan error, 1)
	go func() { first <- g.Do(f) }()
	<-holding
	const callers = 10
	var wg sync.WaitGroup
	errs := make([]string, callers)
	var called sync.WaitGroup
	called.Add(callers)
	for i := range callers {
		wg.Go(func() {
			called.Done()
			errs[i] = g.Do(f).Error()
		})
	}
	called.Wait()
	// Each has called, or is about to (given a moment to): none may be
	// answered by call 1, which began before them.
	time.Sleep(20 * time.Millisecond)
	close(release)
	wg.Wait()
	if err := <-first; err.Error() != "1" {
		t.Fatalf("the first caller was answered by call %v, want 1", err)
	}
	for i, e := range errs {
		if n, _ := strconv.Atoi(e); n < 2 {
			t.Errorf("caller %d, who called while call 1 ran, was answered by call %s", i, e)
		}
	}
	if n := made(); n > 6 {
		// 2 when all ten joined the call after the held one, more when
		// the scheduler let some call only after call 2 had begun; 11 if
		// each had its own.
		t.Fatalf("%d calls for 11 callers, ten of them at once; want them to share", n)
	}
	t.Logf("%d calls for 11 callers", made())
	// An idle group calls for a lone caller at once.
	if err := g.Do(f); err.Error() != strconv.Itoa(made()) {
		t.Fatalf("a lone caller was answered by call %v, want the last, %d", err, made())
	}
}

// A call that panics panics in the callers it answers, as if each had
// made it, and not on the group's own goroutine, where nothing could
// recover it; the group goes on.
func TestGroupPanicsInItsCallers(t *testing.T) {
	var g Group
	// One f for every caller (see Group): the call that answers the next
	// caller may be begun by the goroutine that made the first.
	var broken atomic.Bool
	f := func() error {
		if broken.Load() {
			panic("broken invariant")
		}
		return nil
	}
	broken.Store(true)
	got := func() (p any) {
		defer func() { p = recover() }()
		_ = g.Do(f)
		return nil
	}()
	if got != "broken invariant" {
		t.Fatalf("the caller recovered %v, want the call's panic", got)
	}
	broken.Store(false)
	if err := g.Do(f); err != nil {
		t.Fatalf("the next call: %v", err)
	}
}

// A call that ends its goroutine (runtime.Goexit: a test's FailNow inside
// f) ends the callers it answers the same way, instead of leaving them and
// every later caller waiting for a call that never returns; the group goes
// on, the calls already asked for included.
func TestGroupGoexitsInItsCallers(t *testing.T) {
	var g Group
	var (
		holding = make(chan struct{})
		release = make(chan struct{})
		calls   atomic.Int32
	)
	// The first call holds until a second caller waits, then exits.
	f := func() error {
		if calls.Add(1) == 1 {
			close(holding)
			<-release
			runtime.Goexit()
		}
		return nil
	}
	first := make(chan bool)
	go func() {
		returned := false
		defer func() { first <- returned }()
		_ = g.Do(f)
		returned = true
	}()
	<-holding
	// A caller that comes while the first call runs waits for the next.
	second := make(chan error)
	go func() { second <- g.Do(f) }()
	for !g.waiting() {
		time.Sleep(time.Millisecond)
	}
	close(release)
	select {
	case returned := <-first:
		if returned {
			t.Fatal("Do returned from a call that called runtime.Goexit")
		}
	case <-time.After(time.Minute):
		t.Fatal("the caller of a call that called runtime.Goexit still waits")
	}
	select {
	case err := <-second:
		if err != nil {
			t.Fatalf("the call after it: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the caller waiting for the next call still waits")
	}
	if err := g.Do(f); err != nil {
		t.Fatalf("a later call: %v", err)
	}
}
