// Package workers runs functions on goroutines that stay a while after
// their last one, so that the stack a goroutine grew while it asked a seat,
// landed a batch or let an agent decide serves the next function: a new
// goroutine's stack starts small and is copied each time it doubles, and at
// tens of thousands of turns a second that copying was a tenth of a
// session's CPU. A function waits for no other: when no worker is idle, a
// new one starts. The driver and the in-process seats each keep a Pool.
package workers

import "time"

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
