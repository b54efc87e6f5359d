package driver

import "time"

// workers run functions on goroutines that stay a while after their last
// one, so that the stack a goroutine grew while it asked a seat or landed
// a batch serves the next: a new goroutine's stack starts small and is
// copied each time it doubles, and at tens of thousands of turns a second
// that copying was a tenth of a session's CPU. A function waits for no other: when no
// worker is idle, a new one starts.
type workers struct{ work chan func() }

// workerIdle is how long an idle worker waits for more work before it ends.
const workerIdle = time.Second

// workerPool runs the turns asked and the batches landed, for all drivers.
var workerPool = workers{work: make(chan func())}

// run calls f on an idle worker, or on a new one.
func (w *workers) run(f func()) {
	select {
	case w.work <- f:
	default:
		go w.loop(f)
	}
}

func (w *workers) loop(f func()) {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		f()
		idle.Reset(workerIdle)
		select {
		case f = <-w.work:
		case <-idle.C:
			return
		}
	}
}
