package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/worlds"
)

// ErrNotASession is returned when a log does not begin with session.started.
var ErrNotASession = errors.New("sim: log does not begin with session.started")

// Rebuild replays a session's recorded events into a new engine. The world
// comes from the log itself (session.started records the world file), so a
// log replays without the file it was made from; a base.World whose hash is
// the one recorded is that world, loaded already, and is used as it is (a
// loaded World is read-only). The returned engine's state
// is the state after the last event; call Resume to continue a session that
// did not end. A session.ended whose state hash differs from the replayed
// state's is an error wrapping ErrReplayMismatch.
func Rebuild(evs iter.Seq2[events.Event, error], session string, base Config) (*Engine, error) {
	r := rebuilder{session: session, base: base}
	for ev, err := range evs {
		if err != nil {
			return r.e, err
		}
		if err := r.apply(&ev); err != nil {
			return r.e, err
		}
	}
	return r.finish()
}

// Scanner is the part of an events.Log that RebuildLog reads with.
type Scanner interface {
	Scan(ctx context.Context, session string, from uint64, fn func(*events.Event) error) error
}

// RebuildLog is Rebuild reading the session's events from log with Scan:
// each event is borrowed from the log, applied and dropped, never copied.
// Apply keeps nothing of an event's payload (decoding it copies what the
// state keeps), which is what makes the borrowing safe.
func RebuildLog(ctx context.Context, log Scanner, session string, base Config) (*Engine, error) {
	r := rebuilder{session: session, base: base}
	if err := log.Scan(ctx, session, 1, r.apply); err != nil {
		return r.e, err
	}
	return r.finish()
}

// rebuilder is the state of a Rebuild: the engine, made from the first
// event, and the events applied to it.
type rebuilder struct {
	session string
	base    Config
	e       *Engine
}

func (r *rebuilder) apply(ev *events.Event) error {
	if r.e == nil {
		cfg, err := r.config(ev)
		if err != nil {
			return err
		}
		if r.e, err = New(cfg); err != nil {
			return err
		}
	}
	return r.e.Apply(*ev)
}

// config is the engine's configuration for the session whose first event
// is ev (session.started): the base's, with the recorded world (base's
// World when it has the recorded hash), seed, load and limits.
func (r *rebuilder) config(ev *events.Event) (Config, error) {
	if ev.Type != payload.EvSessionStarted || ev.Seq != 1 {
		return Config{}, fmt.Errorf("%w (first event is seq %d, %s)", ErrNotASession, ev.Seq, ev.Type)
	}
	var p payload.SessionStarted
	if err := json.Unmarshal(ev.Payload, &p); err != nil {
		return Config{}, fmt.Errorf("sim: session.started: %w", err)
	}
	if err := p.CheckFormat(); err != nil {
		return Config{}, fmt.Errorf("sim: %w", err)
	}
	w, lim := r.base.World, recordedLimits(&p)
	if w == nil || w.Hash != p.WorldHash {
		var err error
		if w, lim, err = RecordedWorld(&p); err != nil {
			return Config{}, fmt.Errorf("sim: %w", err)
		}
	}
	cfg := r.base
	cfg.World, cfg.Source, cfg.Seed, cfg.Session, cfg.Load = w, []byte(p.Source), p.Seed, r.session, p.Load
	cfg.DrawKey = p.DrawKey
	cfg.WorldLimits = lim
	return cfg, nil
}

// restore makes the rebuilder's engine from checkpoint cp of its session
// (whose first event it reads from log for the world): the events after
// cp.Seq are then applied to it.
func (r *rebuilder) restore(ctx context.Context, log Scanner, cp events.Checkpoint) error {
	var cfg Config
	errStop := errors.New("stop")
	err := log.Scan(ctx, r.session, 1, func(ev *events.Event) error {
		var err error
		if cfg, err = r.config(ev); err != nil {
			return err
		}
		return errStop
	})
	switch {
	case err == nil:
		return fmt.Errorf("%w (the log is empty)", ErrNotASession)
	case !errors.Is(err, errStop):
		return err
	}
	e, err := Restore(cfg, cp.Data, cp.StateHash)
	if err != nil {
		return fmt.Errorf("sim: session %s: checkpoint at seq %d: %w", r.session, cp.Seq, err)
	}
	r.e = e
	return nil
}

func (r *rebuilder) finish() (*Engine, error) {
	if r.e == nil {
		return nil, fmt.Errorf("%w (the log is empty)", ErrNotASession)
	}
	return r.e, nil
}

// RecordedWorld loads the world session.started p recorded, within the
// world limits it recorded (the ones its session raised; the defaults
// otherwise), checks it against the recorded hash, and returns it with
// those limits.
func RecordedWorld(p *payload.SessionStarted) (*worlds.World, worlds.Limits, error) {
	return RecordedWorldWith(p, nil)
}

// RecordedWorldWith is RecordedWorld loading the file with load (nil:
// worlds.LoadLimited), such as one that decodes a large file's parts at
// once or returns a world loaded already from the same bytes.
func RecordedWorldWith(p *payload.SessionStarted, load func(name string, src []byte, lim worlds.Limits) (*worlds.World, error)) (*worlds.World, worlds.Limits, error) {
	lim := recordedLimits(p)
	if load == nil {
		load = worlds.LoadLimited
	}
	w, err := load(p.WorldFile, []byte(p.Source), lim)
	if err != nil {
		return nil, lim, fmt.Errorf("the world recorded in the log does not load: %w", err)
	}
	if w.Hash != p.WorldHash {
		return nil, lim, fmt.Errorf("recorded world hash %s does not match its source (%s)", p.WorldHash, w.Hash)
	}
	return w, lim, nil
}

// recordedLimits are the world limits session.started p recorded (the
// ones its session raised; zero fields: the defaults).
func recordedLimits(p *payload.SessionStarted) worlds.Limits {
	r := p.WorldLimits
	return worlds.Limits{FileBytes: r.FileBytes, Depth: r.Depth, Members: r.Members, Tasks: r.Tasks,
		Arrivals: r.Arrivals, Burst: r.Burst, MaxLoad: r.MaxLoad, Nodes: r.Nodes, Recorded: true}
}

// recordWorldLimits is what session.started records of lim: the limits
// raised above the defaults.
func recordWorldLimits(lim worlds.Limits) payload.WorldLimits {
	r := lim.Raised()
	return payload.WorldLimits{FileBytes: r.FileBytes, Depth: r.Depth, Members: r.Members, Tasks: r.Tasks,
		Arrivals: r.Arrivals, Burst: r.Burst, MaxLoad: r.MaxLoad, Nodes: r.Nodes}
}
