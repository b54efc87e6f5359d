package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/driver"
)

// A session that kills the process (memory, a panic outside the session's
// guard, an infinite loop the operator ends with kill -9) would kill it
// again on every restart if the restart resumed it blindly, taking the
// healthy sessions with it. So before the service resumes a saved session
// it records in the state file that it is resuming it, and when (Resuming;
// the file is synced before the session's log is even read), and clears
// the mark once the session has shown that it runs: its log holds a
// durable batch past the point it was resumed at, and either
// probationEvents more events or probationTime of running. A session that
// waits for something outside it (its remote seats, a start message, an
// operator's pause) is not running: the mark is cleared while it waits and
// set again when it goes on, if it had not shown it runs. A session that
// ends while the process lives (finished, failed, stopped, interrupted by
// a shutdown) is cleared too.
//
// A restarted service that finds a session still marked does not resume
// it: the process stopped while resuming it. It records it failed, with
// ReasonStoppedResuming, and resumes the others. Saved sessions are
// resumed one at a time: the next once the previous has shown it runs, or
// waits, or after settleFor, so that a process killed by one session
// usually finds only that one marked.
const (
	probationEvents = 200
	probationTime   = 2 * time.Second
	settleFor       = 5 * time.Second
)

// ReasonStoppedResuming is the reason recorded for a session that was
// being resumed when the process stopped.
const ReasonStoppedResuming = "the process stopped while resuming this session; it is not resumed again: resume it by hand with corpsim resume if it is safe"

// probation follows one resumed session until it has shown that it runs.
// It watches the session's durable batches as its driver's Observer
// (passing them on to inner). Safe for concurrent use.
type probation struct {
	s     *Service
	id    string
	at    uint64 // the last durable event when the resume began
	inner driver.Observer
	// settled is closed once the session has shown it runs, waits, or
	// ended: ResumeSaved goes on to the next session.
	settled chan struct{}
	settle  sync.Once

	mu     sync.Mutex
	mark   string    // the mark in the state file (RFC 3339), "" when cleared
	since  time.Time // when the session last began running
	passed bool      // it has shown it runs (or ended)
	due    uint64    // it has shown it runs at this event: step clears the mark
}

// markResuming records durably that the service is resuming session id.
func (s *Service) markResuming(id string) (*probation, error) {
	p := &probation{s: s, id: id, settled: make(chan struct{}), since: time.Now()}
	p.mark = p.since.UTC().Format(time.RFC3339Nano)
	if err := s.state.setResuming(id, p.mark); err != nil {
		return nil, fmt.Errorf("server: cannot record that the session is being resumed, so it is not: %w", err)
	}
	return p, nil
}

// resuming is the mark to keep in the state file for the session.
func (p *probation) resuming() string {
	if p == nil {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mark
}

// Appended notes when the log holds enough past the resume point.
func (p *probation) Appended(session string, batch []events.Event, d time.Duration) {
	if p.inner != nil {
		p.inner.Appended(session, batch, d)
	}
	if len(batch) == 0 {
		return
	}
	last := batch[len(batch)-1].Seq
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.passed && last > p.at && (last >= p.at+probationEvents || time.Since(p.since) >= probationTime) {
		// Cleared by step, before the session's next step: an Observer
		// must not block on a synced write, and the next batch is not
		// made before the mark is gone.
		p.passed, p.due = true, last
	}
}

// step, before each of the session's steps, clears the mark once the
// session has shown it runs.
func (p *probation) step() {
	if p == nil {
		return
	}
	p.mu.Lock()
	due := p.due
	p.due = 0
	p.mu.Unlock()
	if due > 0 {
		p.clear("it runs", due)
	}
}

// Turn passes a turn on.
func (p *probation) Turn(session, member string, d time.Duration, failed bool) {
	if p.inner != nil {
		p.inner.Turn(session, member, d, failed)
	}
}

// hold: the session waits for something outside it; nothing of it runs.
func (p *probation) hold() {
	if p == nil {
		return
	}
	p.mu.Lock()
	clear := !p.passed && p.mark != ""
	p.mu.Unlock()
	if clear {
		p.clear("it waits", 0)
	}
	p.settle.Do(func() { close(p.settled) })
}

// run: the session goes on; it is marked again unless it has shown it runs.
func (p *probation) run() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.passed {
		return
	}
	p.since = time.Now()
	if p.mark == "" {
		p.mark = p.since.UTC().Format(time.RFC3339Nano)
		if err := p.s.state.setResuming(p.id, p.mark); err != nil {
			p.s.logger.Warn("cannot record that the session is being resumed", "session", p.id, "error", err)
		}
	}
}

// end: the session stopped while the process lives.
func (p *probation) end() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.passed = true
	marked := p.mark != ""
	p.mu.Unlock()
	if marked {
		p.clear("it ended", 0)
	}
	p.settle.Do(func() { close(p.settled) })
}

// clear removes the mark from the state file.
func (p *probation) clear(why string, seq uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mark == "" {
		return
	}
	if err := p.s.state.setResuming(p.id, ""); err != nil {
		p.s.logger.Warn("cannot clear the resuming mark; a restart would not resume the session", "session", p.id, "error", err)
		return
	}
	p.mark = ""
	p.s.logger.Debug("resumed session cleared", "session", p.id, "because", why, "at_seq", seq, "resumed_at", p.at)
	if p.passed {
		p.settle.Do(func() { close(p.settled) })
	}
}

// wait waits until the session has settled, for at most settleFor.
func (p *probation) wait(ctx context.Context) {
	t := time.NewTimer(settleFor)
	defer t.Stop()
	select {
	case <-p.settled:
	case <-t.C:
	case <-ctx.Done():
	}
}

// failStopped records a session that was being resumed when the process
// stopped as failed, with ReasonStoppedResuming.
func (s *Service) failStopped(ctx context.Context, id string) error {
	meta, err := s.cfg.Log.Session(ctx, id)
	if err != nil {
		return err
	}
	if last, err := s.cfg.Log.LastSeq(ctx, id); err == nil {
		meta.LastSeq = last
	}
	meta.Status, meta.Reason = events.StatusFailed, ReasonStoppedResuming
	return s.cfg.Log.UpdateSession(ctx, meta)
}

// probationSeats are a resumed session's seats, which tell its probation
// that the session waits while a seat outside the process (remote) has a
// turn: nothing of the session runs until it answers, which may take the
// whole turn budget, and a mark left meanwhile made a restart after
// another session killed the process record this one failed too.
type probationSeats struct {
	driver.Seats
	pr     *probation
	remote map[string]bool

	mu      sync.Mutex
	waiting int // remote turns out
}

// withProbation returns seats that hold pr while a member of remote has a
// turn (seats themselves when there is no probation or no remote seat).
func withProbation(seats driver.Seats, pr *probation, remote []string) driver.Seats {
	if pr == nil || len(remote) == 0 {
		return seats
	}
	ps := &probationSeats{Seats: seats, pr: pr, remote: map[string]bool{}}
	for _, m := range remote {
		ps.remote[m] = true
	}
	return ps
}

// Ask implements driver.Seats.
func (s *probationSeats) Ask(ctx context.Context, session, member string, obs org.Observation) (sim.Answer, error) {
	if !s.remote[member] {
		return s.Seats.Ask(ctx, session, member, obs)
	}
	s.mu.Lock()
	if s.waiting++; s.waiting == 1 {
		s.pr.hold()
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.waiting--; s.waiting == 0 {
			s.pr.run()
		}
		s.mu.Unlock()
	}()
	return s.Seats.Ask(ctx, session, member, obs)
}

// Omits implements driver.PartialSeats, as the seats wrapped do.
func (s *probationSeats) Omits(member string) org.Omit {
	if p, ok := s.Seats.(driver.PartialSeats); ok {
		return p.Omits(member)
	}
	return 0
}

// Immediate implements driver.ImmediateSeats, as the seats wrapped do.
func (s *probationSeats) Immediate(member string) bool {
	i, ok := s.Seats.(driver.ImmediateSeats)
	return ok && i.Immediate(member)
}
