package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/oklog/ulid/v2"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/worlds"
)

// Resume continues the interrupted session id of the log in o.Data from its
// last durable event, with o.Agents from here on if given (else the
// session's). It refuses a finished session.
func Resume(ctx context.Context, o RunOptions, id string) (*RunResult, error) {
	if err := checkPlay(o); err != nil {
		return nil, err
	}
	log, meta, err := OpenSessionWrite(ctx, o.Data, id, o.Logger)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	if meta.Status == events.StatusFinished {
		return nil, fmt.Errorf("session %s already finished (%d events)", meta.ID, meta.LastSeq)
	}
	origin, err := driver.ReadOrigin(ctx, log, meta.ID)
	if err != nil {
		return nil, err
	}
	if err := admitOrigin(origin, o.WorldLimits); err != nil {
		return nil, fmt.Errorf("session %s: %w", meta.ID, err)
	}
	// Load reads from the latest checkpoint on: the events before it are
	// read here, so that a damaged log is refused, not continued.
	if err := driver.CheckPrefix(ctx, log, meta.ID, 0); err != nil {
		return nil, err
	}
	e, n, err := driver.Load(ctx, log, meta.ID, 0, meta.Seed)
	if err != nil {
		return nil, err
	}
	meta.Reason = "" // resumed by hand: whatever stopped it is for its new end to say
	// Its budget of events, unless the resume gives another (then kept).
	if o.MaxEvents == 0 {
		o.MaxEvents = meta.MaxEvents
	} else {
		meta.MaxEvents = RecordedBudget(o.MaxEvents)
	}
	orNull(o.Logger).Info("resuming", "session", meta.ID, "at_seq", e.State().LastSeq, "replayed", n)
	if o.Agents != "" {
		if meta.Agents, err = ParseAgents(o.Agents, e.State().World, o.LLM != nil); err != nil {
			return nil, err
		}
	}
	return play(ctx, o, log, meta, e, playContinue)
}

// ForkOptions describe a fork or a reset of a stored session.
type ForkOptions struct {
	Parent     string
	At         uint64 // the last event of the parent the fork shares
	Reset      bool   // a fresh episode of the parent's world and seed: a fork at event 1
	Seed       uint64 // the seed for what follows, if SeedSet (else the parent's)
	SeedSet    bool
	CreateOnly bool // create the session without running it (Resume runs it later)
}

// Fork makes a new session in the log in o.Data (or in o.Log, open, when
// given: Credit plays its forks at once in one) that shares f.Parent's
// events up to f.At (no copy), with o.Agents if given (else the parent's),
// and continues it unless f.CreateOnly. It returns the new session's
// metadata and, when it ran, its result.
func Fork(ctx context.Context, o RunOptions, f ForkOptions) (events.SessionMeta, *RunResult, error) {
	if err := checkPlay(o); err != nil {
		return events.SessionMeta{}, nil, err
	}
	log, parent, err := o.Log, events.SessionMeta{}, error(nil)
	if log != nil {
		parent, err = sessionIn(ctx, log, o.Data, f.Parent)
	} else if log, parent, err = OpenSessionWrite(ctx, o.Data, f.Parent, o.Logger); err == nil {
		defer log.Close()
	}
	if err != nil {
		return events.SessionMeta{}, nil, err
	}
	at := f.At
	if f.Reset {
		at = 1
	}
	// The metadata's LastSeq is only updated when a run stops; the log
	// knows. A log damaged after the fork point still gives what it shares.
	last, err := driver.LastWhole(ctx, log, parent.ID)
	if err != nil && (at == 0 || at > last) {
		return events.SessionMeta{}, nil, err
	}
	if at > last {
		// A session whose metadata records an end its log no longer
		// reaches lost its tail (events.CheckEnd): a fork within it
		// needs events that are missing, damage as replay and verify
		// report it (events.ErrLost), not a seq beyond the end.
		if lost := events.CheckEnd(parent, last); lost != nil {
			if at <= parent.LastSeq {
				return events.SessionMeta{}, nil, fmt.Errorf("--at %d: %w", at, lost)
			}
			return events.SessionMeta{}, nil, Usagef("--at %d is beyond the end of session %s, which has %d events (its log lost the last %d)",
				at, parent.ID, parent.LastSeq, parent.LastSeq-last)
		}
		return events.SessionMeta{}, nil, Usagef("--at %d is beyond the end of session %s, which has %d events", at, parent.ID, last)
	}
	if at == 0 {
		return events.SessionMeta{}, nil, Usagef("fork needs --at SEQ (1 to %d)", last)
	}
	var inside *driver.InsideTurnError
	if err := driver.CheckForkPoint(ctx, log, parent.ID, at); errors.As(err, &inside) {
		return events.SessionMeta{}, nil, Usagef("--at %d: %v", at, inside)
	} else if err != nil {
		return events.SessionMeta{}, nil, err
	}
	// The prefix the fork shares, read whole: Load starts from the
	// checkpoint before at, and a fork of a damaged prefix could never
	// be verified or replayed.
	if err := driver.CheckPrefix(ctx, log, parent.ID, at); err != nil {
		return events.SessionMeta{}, nil, err
	}
	seed := parent.Seed
	if f.SeedSet {
		seed = f.Seed
	}
	origin, err := driver.ReadOrigin(ctx, log, parent.ID)
	if err != nil {
		return events.SessionMeta{}, nil, err
	}
	if err := admitOrigin(origin, o.WorldLimits); err != nil {
		return events.SessionMeta{}, nil, fmt.Errorf("session %s: %w", parent.ID, err)
	}
	seats := parent.Agents
	if o.Agents != "" {
		if seats, err = ParseAgents(o.Agents, origin.World, o.LLM != nil); err != nil {
			return events.SessionMeta{}, nil, err
		}
	}
	meta := events.SessionMeta{ID: ulid.Make().String(), World: parent.World, WorldHash: parent.WorldHash, Seed: seed,
		Agents: seats, Created: time.Now().UTC().Format(time.RFC3339), Parent: parent.ID, ForkSeq: at,
		Status: events.StatusInterrupted, LastSeq: at, MaxEvents: parent.MaxEvents}
	// The parent's budget of events, unless the fork gives another.
	if o.MaxEvents != 0 {
		meta.MaxEvents = RecordedBudget(o.MaxEvents)
	}
	o.MaxEvents = meta.MaxEvents
	if f.CreateOnly {
		start := time.Now()
		if err := log.CreateSession(ctx, meta); err != nil {
			return events.SessionMeta{}, nil, err
		}
		orNull(o.Logger).Info("forked", "session", meta.ID, "parent", parent.ID, "at", at, "took", time.Since(start))
		return meta, nil, nil
	}
	// A fork that goes on is founded with its first batch (one durable
	// write), from an engine built on the parent's prefix.
	e, _, err := driver.LoadFork(ctx, log, meta)
	if err != nil {
		return events.SessionMeta{}, nil, err
	}
	orNull(o.Logger).Info("forking", "session", meta.ID, "parent", parent.ID, "at", at)
	res, err := play(ctx, o, log, meta, e, playFork)
	return meta, res, err
}

// admitOrigin checks a stored session's world and load against lim, raised
// to the limits the session recorded (it was started within them), before
// a resume or a fork plays it. The recorded world loaded within the
// recorded limits; other limits are checked on its source again.
func admitOrigin(o driver.Origin, lim worlds.Limits) error {
	if err := lim.Validate(); err != nil {
		return usage(err)
	}
	lim = lim.Raise(o.WorldLimits)
	lim.Recorded = true // a recorded world reads as it did then
	if lim.WithDefaults() != o.WorldLimits.WithDefaults() {
		if _, err := worlds.LoadLimited(o.World.File, o.Source, lim); err != nil {
			return err
		}
	}
	return admit(o.World, loadOr1(o.Load), lim)
}

// orNull is l, or a silent logger.
func orNull(l hclog.Logger) hclog.Logger {
	if l == nil {
		return hclog.NewNullLogger()
	}
	return l
}
