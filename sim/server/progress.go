package server

import (
	"sync"
	"time"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/sim/driver"
)

// progress is what status reports of a running session: the simulated
// time of its last durable event and its team score so far (the sum of its
// reward events), kept as its batches land, since the engine is the
// driver's while it runs. It passes what it observes on to inner.
type progress struct {
	inner driver.Observer

	mu    sync.Mutex
	seq   uint64 // the last event appended (0: none yet)
	time  int64
	score float64
}

// newProgress starts from a session's simulated time and team score
// before it runs (a resumed or forked session's are not 0).
func newProgress(inner driver.Observer, time int64, score float64) *progress {
	return &progress{inner: inner, time: time, score: score}
}

// Appended adds the batch's rewards to the score and takes its last
// event's time.
func (p *progress) Appended(session string, batch []events.Event, d time.Duration) {
	if p.inner != nil {
		p.inner.Appended(session, batch, d)
	}
	if len(batch) == 0 {
		return
	}
	var add float64
	for i := range batch {
		if r, err := payload.TeamReward(&batch[i]); err == nil {
			add += r
		}
	}
	p.mu.Lock()
	p.seq, p.time, p.score = batch[len(batch)-1].Seq, batch[len(batch)-1].Time, p.score+add
	p.mu.Unlock()
}

// Turn passes a turn on.
func (p *progress) Turn(session, member string, d time.Duration, timedOut bool) {
	if p.inner != nil {
		p.inner.Turn(session, member, d, timedOut)
	}
}

// now is the session's simulated time and team score as its log holds
// them now.
func (p *progress) now() (int64, float64) {
	_, t, score := p.upTo()
	return t, score
}

// upTo is now, with the last event appended that they are as of (0 when
// no batch has been appended yet).
func (p *progress) upTo() (seq uint64, t int64, score float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seq, p.time, p.score
}
