package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"iter"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/worlds"
)

// ErrNotASession is returned when a log does not begin with session.started.
var ErrNotASession = errors.New("sim: log does not begin with session.started")

// Rebuild replays a session's recorded events into a new engine. The world
// comes from the log itself (session.started records the world file), so a
// log replays without the file it was made from. The returned engine's state
// is the state after the last event; call Resume to continue a session that
// did not end. A session.ended whose state hash differs from the replayed
// state's is an error wrapping ErrReplayMismatch.
func Rebuild(evs iter.Seq2[events.Event, error], session string, base Config) (*Engine, error) {
	var e *Engine
	for ev, err := range evs {
		if err != nil {
			return e, err
		}
		if e == nil {
			if ev.Type != org.EvSessionStarted || ev.Seq != 1 {
				return nil, fmt.Errorf("%w (first event is seq %d, %s)", ErrNotASession, ev.Seq, ev.Type)
			}
			var p org.SessionStarted
			if err := json.Unmarshal(ev.Payload, &p); err != nil {
				return nil, fmt.Errorf("sim: session.started: %w", err)
			}
			w, err := worlds.Load(p.WorldFile, []byte(p.Source))
			if err != nil {
				return nil, fmt.Errorf("sim: the world recorded in the log does not load: %w", err)
			}
			if w.Hash != p.WorldHash {
				return nil, fmt.Errorf("sim: recorded world hash %s does not match its source (%s)", p.WorldHash, w.Hash)
			}
			cfg := base
			cfg.World, cfg.Source, cfg.Seed, cfg.Session, cfg.Load = w, []byte(p.Source), p.Seed, session, p.Load
			if e, err = New(cfg); err != nil {
				return nil, err
			}
		}
		if err := e.Apply(ev); err != nil {
			return e, err
		}
	}
	if e == nil {
		return nil, fmt.Errorf("%w (the log is empty)", ErrNotASession)
	}
	return e, nil
}
