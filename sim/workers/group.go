package workers

import (
	"runtime"
	"sync"
)

// A Group shares a durable write between the callers that want one at
// once, as a group commit shares a sync: each caller of Do is answered by
// a call of f that began after it called, and the callers that come while
// one runs share the next. f writes what is current when it runs (the
// pebblelog's flush of a memtable, a state file rewritten whole), so one
// call answers every caller that came before it began. The zero value is
// ready; it is safe for concurrent use. Every caller of one Group must give
// it the same f: the call that answers it may be another's.
type Group struct {
	mu   sync.Mutex
	busy bool       // a call runs
	next *groupCall // the callers waiting for the call after it
}

// groupCall is one call and the callers it answers.
type groupCall struct {
	done   chan struct{}
	err    error
	panic  any  // what the call panicked with, raised again in each caller
	goexit bool // the call called runtime.Goexit, as each caller then does
}

// Do returns the error of a call of f that began after Do was called. If
// that call panicked, Do panics with the same value, as if the caller had
// made it; if it called runtime.Goexit (a test's FailNow), so does Do.
func (g *Group) Do(f func() error) error {
	g.mu.Lock()
	if g.next == nil {
		g.next = &groupCall{done: make(chan struct{})}
	}
	c := g.next
	if !g.busy {
		g.busy, g.next = true, nil
		go g.run(c, f)
	}
	g.mu.Unlock()
	<-c.done
	switch {
	case c.panic != nil:
		panic(c.panic)
	case c.goexit:
		runtime.Goexit()
	}
	return c.err
}

// run makes call c, then the one the callers that came meanwhile wait
// for, until none waits. No call is made for nobody: each has callers
// waiting for it. If f ends run's goroutine (runtime.Goexit), its callers
// are answered and the next call runs on a goroutine of its own.
func (g *Group) run(c *groupCall, f func() error) {
	exited := true
	defer func() {
		if exited {
			c.goexit = true
			close(c.done)
			if c := g.take(); c != nil {
				go g.run(c, f)
			}
		}
	}()
	for c != nil {
		c.panic, c.err = call(f)
		close(c.done)
		c = g.take()
	}
	exited = false
}

// take returns the call the callers that came meanwhile wait for, if any,
// and marks the group busy with it.
func (g *Group) take() *groupCall {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.next
	g.next, g.busy = nil, c != nil
	return c
}

// call returns f's error, or what it panicked with.
func call(f func() error) (p any, err error) {
	defer func() { p = recover() }()
	return nil, f()
}
