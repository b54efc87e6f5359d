package pebblelog

import "sync"

// flushGroup shares flushes between the callers that want one at once, as
// a group commit shares a sync: each caller is answered by a flush that
// began after it called, and the callers that arrive while one runs share
// the next. Sessions that end together (a server's episodes reset by many
// clients) then pay one flush between them instead of one each, and none
// returns before its end is in a table. Safe for concurrent use.
type flushGroup struct {
	mu   sync.Mutex
	busy bool       // a flush runs
	next *flushCall // the callers waiting for the flush after it
}

// flushCall is one flush and the callers it answers.
type flushCall struct {
	done  chan struct{}
	err   error
	panic any // what the flush panicked with, raised again in each caller
}

// do returns the error of a flush (made by calling flush) that began after
// do was called.
func (g *flushGroup) do(flush func() error) error {
	g.mu.Lock()
	if g.next == nil {
		g.next = &flushCall{done: make(chan struct{})}
	}
	c := g.next
	if !g.busy {
		g.busy, g.next = true, nil
		go g.run(c, flush)
	}
	g.mu.Unlock()
	<-c.done
	if c.panic != nil {
		// As if the caller had flushed: a session's guard records it.
		panic(c.panic)
	}
	return c.err
}

// run makes flush c, then the one the callers that came meanwhile wait
// for, until none waits.
func (g *flushGroup) run(c *flushCall, flush func() error) {
	for c != nil {
		c.panic, c.err = call(flush)
		close(c.done)
		g.mu.Lock()
		c, g.next = g.next, nil
		g.busy = c != nil
		g.mu.Unlock()
	}
}

// call returns flush's error, or what it panicked with.
func call(flush func() error) (p any, err error) {
	defer func() { p = recover() }()
	return nil, flush()
}
