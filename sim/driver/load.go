package driver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

// Origin is what session.started recorded: the world and the seed.
type Origin struct {
	World  *worlds.World
	Source []byte
	Seed   uint64
	Load   float64
	// WorldLimits are the world budgets the session recorded (the ones it
	// raised; zero fields: the defaults), within which World was loaded.
	WorldLimits worlds.Limits
	// DrawKey is the draw key the session recorded (nil: none), which its
	// engines draw with (sim.Config.DrawKey).
	DrawKey []byte
}

// Config is the engine configuration of the session's events, named
// session and going on with seed (0: the recorded one), with the
// driver's sequencer. Callers set the rest (ApplyOnly, MaxEvents).
func (o Origin) Config(session string, seed uint64) sim.Config {
	if seed == 0 {
		seed = o.Seed
	}
	root := o.Seed
	return sim.Config{World: o.World, Source: o.Source, Seed: seed, Session: session, Load: o.Load, WorldLimits: o.WorldLimits,
		DrawKey: o.DrawKey, RootSeed: &root, NewSequencer: NewSequencer}
}

// ReadOrigin reads a session's first event (its root ancestor's, for a fork)
// and loads the world it recorded.
func ReadOrigin(ctx context.Context, log events.Log, session string) (Origin, error) {
	for ev, err := range log.Read(ctx, session, 1) {
		if err != nil {
			return Origin{}, err
		}
		if ev.Type != payload.EvSessionStarted || ev.Seq != 1 {
			return Origin{}, fmt.Errorf("%w (session %s begins with seq %d, %s)", sim.ErrNotASession, session, ev.Seq, ev.Type)
		}
		var p payload.SessionStarted
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			return Origin{}, &events.CorruptError{Session: session, Seq: 1, Err: err}
		}
		if err := p.CheckFormat(); err != nil {
			return Origin{}, fmt.Errorf("session %s: %w", session, err)
		}
		// A world loaded already is not read again (LoadWorld), and a large
		// one's parts are decoded on every processor: a fork or a resume of
		// the 10,000-member world waits half as long for it.
		w, lim, err := sim.RecordedWorldWith(&p, LoadWorld)
		if err != nil {
			return Origin{}, fmt.Errorf("session %s: %w", session, err)
		}
		return Origin{World: w, Source: []byte(p.Source), Seed: p.Seed, Load: p.Load, WorldLimits: lim, DrawKey: p.DrawKey}, nil
	}
	return Origin{}, fmt.Errorf("%w (session %s is empty)", sim.ErrNotASession, session)
}

// Load rebuilds the engine of a session as it was after event at (0 means
// its last event): from the nearest checkpoint at or before at, verified
// against its state hash, then event by event. Corrupt checkpoints are
// skipped; corrupt events are errors. seed is the seed for what
// follows (0 keeps the recorded one). It returns the engine and the number
// of events replayed after the checkpoint.
func Load(ctx context.Context, log events.Log, session string, at, seed uint64) (*sim.Engine, int, error) {
	return load(ctx, log, session, session, at, seed)
}

// LoadFork builds the engine of fork m before the fork is in the log: its
// parent's engine after event m.ForkSeq (as Load builds it), named m.ID
// and going on with m.Seed (0 keeps the recorded one). Driver.Fork then
// founds the fork with its first batch, one durable write.
func LoadFork(ctx context.Context, log events.Log, m events.SessionMeta) (*sim.Engine, int, error) {
	if m.Parent == "" || m.ForkSeq == 0 {
		return nil, 0, fmt.Errorf("driver: session %s is not a fork (parent %q, fork seq %d)", m.ID, m.Parent, m.ForkSeq)
	}
	return load(ctx, log, m.Parent, m.ID, m.ForkSeq, m.Seed)
}

// LoadFrom is Load (with the recorded seed) given the session's origin,
// read already with ReadOrigin: engines of one session built at once, such
// as a replay's segments, share one world instead of each loading it from
// its source again (seconds for the 10,000-member world). A loaded World is
// read-only: no engine changes it. With applyOnly, the engine only
// re-applies events (sim.Config.ApplyOnly): it keeps no timers and cannot
// go on.
func LoadFrom(ctx context.Context, log events.Log, origin Origin, session string, at uint64, applyOnly bool) (*sim.Engine, int, error) {
	return loadFrom(ctx, log, origin, session, session, at, 0, applyOnly)
}

// LastWhole returns the last seq of session: its last event's, or, when a
// read of its end meets damage (a *events.CorruptError at seq D), D-1, the
// last event a read from its start reaches, with that error: a fork or a
// replay up to an event before the damage can still be made.
func LastWhole(ctx context.Context, log events.Log, session string) (uint64, error) {
	last, err := log.LastSeq(ctx, session)
	var ce *events.CorruptError
	if err != nil && errors.As(err, &ce) && ce.Session == session && ce.Seq > 0 {
		return ce.Seq - 1, err
	}
	return last, err
}

// load is Load of session's events up to at, for an engine named name.
func load(ctx context.Context, log events.Log, session, name string, at, seed uint64) (*sim.Engine, int, error) {
	origin, err := ReadOrigin(ctx, log, session)
	if err != nil {
		return nil, 0, err
	}
	return loadFrom(ctx, log, origin, session, name, at, seed, false)
}

// loadFrom is load with session's origin read.
func loadFrom(ctx context.Context, log events.Log, origin Origin, session, name string, at, seed uint64, applyOnly bool) (*sim.Engine, int, error) {
	last, err := LastWhole(ctx, log, session)
	if err != nil && (at == 0 || at > last) {
		return nil, 0, err
	}
	if at == 0 || at > last {
		if at > last {
			return nil, 0, fmt.Errorf("session %s has %d events; there is no event %d", session, last, at)
		}
		at = last
	}
	cfg := origin.Config(name, seed)
	cfg.ApplyOnly = applyOnly
	var e *sim.Engine
	from := uint64(1)
	cp, err := log.LatestCheckpoint(ctx, session, at)
	// A checkpoint only saves replay time: skip corrupt ones (Verify reports
	// them) and start from an older one, or from the first event.
	for ce := (*events.CorruptError)(nil); errors.As(err, &ce) && ce.Kind == events.CorruptCheckpoint; {
		if ce.Seq <= 1 {
			err = events.ErrNoCheckpoint
			break
		}
		cp, err = log.LatestCheckpoint(ctx, session, ce.Seq-1)
	}
	switch {
	case err == nil:
		if e, err = sim.Restore(cfg, cp.Data, cp.StateHash); err != nil {
			return nil, 0, fmt.Errorf("session %s: checkpoint at seq %d: %w", session, cp.Seq, err)
		}
		from = cp.Seq + 1
	case errors.Is(err, events.ErrNoCheckpoint):
		if e, err = sim.New(cfg); err != nil {
			return nil, 0, err
		}
	default:
		return nil, 0, err
	}
	n := 0
	// Borrowed events (Scan): Apply keeps nothing of them.
	errStop := errors.New("stop")
	err = log.Scan(ctx, session, from, func(ev *events.Event) error {
		if ev.Seq > at {
			return errStop
		}
		if err := e.Apply(*ev); err != nil {
			return fmt.Errorf("session %s: replay at seq %d: %w", session, ev.Seq, err)
		}
		n++
		return nil
	})
	if err != nil && err != errStop {
		return nil, n, err
	}
	if got := e.State().LastSeq; got != at {
		return nil, n, fmt.Errorf("session %s: replay stopped at seq %d, want %d", session, got, at)
	}
	return e, n, nil
}

// LoggedEnd reads event last of session id: if it is session.ended, it
// returns its payload and true. A session whose log ends so has ended,
// whatever its metadata says (its process may have died before recording
// it): it must not be resumed.
func LoggedEnd(ctx context.Context, log events.Log, id string, last uint64) (payload.SessionEnded, bool, error) {
	var end payload.SessionEnded
	if last == 0 {
		return end, false, nil
	}
	for ev, err := range log.Read(ctx, id, last) {
		if err != nil {
			return end, false, err
		}
		if ev.Type != payload.EvSessionEnded {
			return end, false, nil
		}
		if err := json.Unmarshal(ev.Payload, &end); err != nil {
			return end, false, &events.CorruptError{Session: id, Seq: ev.Seq, Err: err}
		}
		return end, true, nil
	}
	return end, false, nil
}

// InsideTurnError is CheckForkPoint's refusal of a fork point that falls
// between a member's turn and the events its actions made: a fork there
// would keep the turn (the member busy, its actions said) without what
// they did.
type InsideTurnError struct {
	Member string
	Turn   uint64 // the turn's seq
	End    uint64 // the last event its actions made
}

func (e *InsideTurnError) Error() string {
	did := fmt.Sprintf("%d–%d what its actions did", e.Turn+1, e.End)
	if e.End == e.Turn+1 {
		did = fmt.Sprintf("%d what its actions did", e.End)
	}
	return fmt.Sprintf("event %d is %s's turn and %s: fork at %d to ask %s again, or at %d to keep the turn",
		e.Turn, e.Member, did, e.Turn-1, e.Member, e.End)
}

// CheckForkPoint refuses, with an *InsideTurnError, a fork of session
// after event at that falls between a turn and the events its actions
// made: their cause is the turn, or, for an escalation the engine makes
// at once for a step that comes up for a member on leave, the action's
// own event (the request or the grant) it follows. A fork between the
// turn and such an escalation, or between the escalation and the turn's
// later actions, would keep the turn without it, and the fork's engine
// makes it no more: the step waited for the member away.
func CheckForkPoint(ctx context.Context, log events.Log, session string, at uint64) error {
	var turn uint64
	end := at
	ours := map[uint64]bool{} // the turn's action events (and their escalations)
	for ev, err := range log.Read(ctx, session, at+1) {
		if err != nil {
			return err
		}
		if turn == 0 {
			if ev.Cause == 0 || ev.Cause > at {
				return nil
			}
			t, err := turnOf(ctx, log, session, &ev)
			if err != nil || t == 0 {
				return err
			}
			turn = t
			ours[turn], ours[ev.Cause] = true, true
		} else if ev.Type == payload.EvTurn || !ours[ev.Cause] || (ev.Cause != turn && !stepUp(&ev)) {
			break
		}
		ours[ev.Seq] = true
		end = ev.Seq
	}
	if turn == 0 {
		return nil // at is the last event
	}
	for ev, err := range log.Read(ctx, session, turn) {
		if err != nil {
			return err
		}
		return &InsideTurnError{Member: ev.Actor, Turn: turn, End: end}
	}
	return nil
}

// stepUp reports whether ev is an escalation the engine made for a step
// that came up for a member on leave (made, not asked for: no actor).
func stepUp(ev *events.Event) bool {
	return ev.Type == payload.EvApprovalEscalated && ev.Actor == ""
}

// turnOf returns the turn whose actions made ev, the first event after a
// fork point: its cause, if that is a turn; for an escalation made at once
// (stepUp), the turn that made its cause, if that made it; else 0.
func turnOf(ctx context.Context, log events.Log, session string, ev *events.Event) (uint64, error) {
	cause, err := eventAt(ctx, log, session, ev.Cause)
	if err != nil || cause == nil {
		return 0, err
	}
	if cause.Type == payload.EvTurn {
		return cause.Seq, nil
	}
	if !stepUp(ev) || cause.Cause == 0 || cause.Time != ev.Time {
		return 0, nil
	}
	t, err := eventAt(ctx, log, session, cause.Cause)
	if err != nil || t == nil || t.Type != payload.EvTurn {
		return 0, err
	}
	return t.Seq, nil
}

// eventAt reads session's event seq (nil if there is none).
func eventAt(ctx context.Context, log events.Log, session string, seq uint64) (*events.Event, error) {
	for ev, err := range log.Read(ctx, session, seq) {
		if err != nil {
			return nil, err
		}
		return &ev, nil
	}
	return nil, nil
}

// errPrefixRead stops CheckPrefix's scan at its last event.
var errPrefixRead = errors.New("driver: prefix read")

// CheckPrefix reads session's events 1 to upTo (0: to its end), each
// checksummed, and returns the first damage it meets: a missing or
// corrupt event (*events.CorruptError, naming the session and seq), or
// events lost before an ended session's end marker. Load starts from the
// latest checkpoint and reads only the events after it, so a resume or a
// fork from a damaged log would otherwise go on, and make a session that
// can never be verified or replayed. A borrowed scan: about 10 million
// events a second.
func CheckPrefix(ctx context.Context, log events.Log, session string, upTo uint64) error {
	var last uint64
	err := log.Scan(ctx, session, 1, func(ev *events.Event) error { // the log reports a gap as corrupt
		last = ev.Seq
		if upTo != 0 && last >= upTo {
			return errPrefixRead
		}
		return nil
	})
	if errors.Is(err, errPrefixRead) {
		return nil
	}
	if err != nil {
		return err
	}
	if upTo != 0 && last < upTo {
		return &events.CorruptError{Session: session, Seq: last + 1, Kind: events.CorruptEvent,
			Err: fmt.Errorf("event missing (the log ends at seq %d, and %d is asked for)", last, upTo)}
	}
	if upTo == 0 {
		if m, err := log.Session(ctx, session); err == nil {
			return events.CheckEnd(m, last)
		}
	}
	return nil
}
