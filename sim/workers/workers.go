// Package workers runs functions on goroutines that stay a while after
// their last one, so that the stack a goroutine grew while it asked a seat,
// landed a batch or let an agent decide serves the next function: a new
// goroutine's stack starts small and is copied each time it doubles, and at
// tens of thousands of turns a second that copying was a tenth of a
// session's CPU. A function waits for no other: when no worker is idle, a
// new one starts. The driver, the in-process seats and the in-memory logs'
// compression (sim/app) each keep a Pool.
package workers

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Idle is how long an idle worker waits for more work before it ends.
const Idle = time.Second

// A Pool runs functions on its workers. The zero value is not usable: make
// one with New. It is safe for concurrent use.
type Pool struct{ work chan func() }

// New returns an empty Pool.
func New() *Pool { return &Pool{work: make(chan func())} }

// Run calls f on an idle worker, or on a new one.
func (p *Pool) Run(f func()) {
	select {
	case p.work <- f:
	default:
		go p.loop(f)
	}
}

func (p *Pool) loop(f func()) {
	idle := time.NewTimer(Idle)
	defer idle.Stop()
	for {
		f()
		idle.Reset(Idle)
		select {
		case f = <-p.work:
		case <-idle.C:
			return
		}
	}
}

// Parallel calls f(0), f(1), …, f(n-1) on up to GOMAXPROCS goroutines, each
// taking the next index as it finishes one, and returns once every call
// has returned. It is the worlds package's Options.Parallel: CPU-bound
// work split into parts of about the same size.
func Parallel(n int, f func(i int)) { ParallelN(0, n, f) }

// ParallelN is Parallel on up to k goroutines (k <= 0: GOMAXPROCS), for
// work whose parts wait as well as compute (credit's forks, each a
// session with its own syncs).
func ParallelN(k, n int, f func(i int)) {
	if k <= 0 {
		k = runtime.GOMAXPROCS(0)
	}
	k = min(k, n)
	if k <= 1 {
		for i := range n {
			f(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range k {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				f(i)
			}
		})
	}
	wg.Wait()
}

// A Chain runs the functions given to Do one after another, in the order
// given, each on a goroutine of its own once the one before has returned;
// Wait returns once every one given so far has. No goroutine outlives its
// function, so a chain dropped with work under way leaks nothing. It is
// org's Sequencer, which a state hands the hashing of the tickets it
// retires. Not safe for concurrent use: one owner gives it work and waits.
type Chain struct{ last chan struct{} }

// NewChain returns an empty Chain as an org.Sequencer (for sim.Config's
// NewSequencer).
func NewChain() *Chain { return &Chain{} }

// Do runs f after the functions given before it.
func (c *Chain) Do(f func()) {
	prev, done := c.last, make(chan struct{})
	c.last = done
	go func() {
		if prev != nil {
			<-prev
		}
		f()
		close(done)
	}()
}

// Wait returns once every function given has returned.
func (c *Chain) Wait() {
	if c.last != nil {
		<-c.last
		c.last = nil
	}
}
