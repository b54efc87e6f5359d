package app

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/analyze"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/sim/report"
)

// LoadAnalysis reads a whole stored session (a fork's shared prefix
// included) for analysis: trace and diff.
func LoadAnalysis(ctx context.Context, data, id string, logger hclog.Logger) (*analyze.Session, error) {
	log, meta, err := OpenSession(ctx, data, id, logger)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	s, err := analyze.LoadWith(log.Read(ctx, meta.ID, 1), analyze.LoadOptions{Events: meta.LastSeq})
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", meta.ID, err)
	}
	// A fork may have another seed than the root session.started recorded.
	s.ID, s.Seed = meta.ID, meta.Seed
	s.Agents, s.Parent, s.ForkSeq = meta.Agents, meta.Parent, meta.ForkSeq
	return s, nil
}

// BuildReport replays a stored session into its report, with the "why"
// section answered by the session's analysis (the one trace uses). A log
// whose replay does not match its recorded end is still reported, without
// that section, so that the page can show the mismatch.
func BuildReport(ctx context.Context, data, session string, o report.Options, logger hclog.Logger) (*report.Report, error) {
	log, meta, err := OpenSession(ctx, data, session, logger)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	o.Session, o.Agents = meta.ID, meta.Agents
	o.Parent, o.ForkSeq, o.Seed = meta.Parent, meta.ForkSeq, meta.Seed
	// One pass: the report's builder observes each event as the analysis
	// applies it, on the analysis's state.
	var b *report.Builder
	s, err := analyze.LoadWith(log.Read(ctx, meta.ID, 1), analyze.LoadOptions{Events: meta.LastSeq,
		Observe: func(s *analyze.Session, ev *events.Event, typed any) error {
			if b == nil {
				b = report.NewBuilderOn(s.World, s.State, o)
			}
			return b.Observe(ev, typed) // its error is the session's, below
		}})
	switch {
	case err == nil:
		s.ID, s.Seed = meta.ID, meta.Seed
		s.Agents, s.Parent, s.ForkSeq = meta.Agents, meta.Parent, meta.ForkSeq
		b.SetExplainer(s)
		return b.Report(), nil
	case !errors.Is(err, analyze.ErrMismatch):
		return nil, fmt.Errorf("session %s: %w", meta.ID, err)
	}
	origin, err := driver.ReadOrigin(ctx, log, session)
	if err != nil {
		return nil, err
	}
	// A mismatch: the report alone, on a state of its own, to show it.
	b = report.NewBuilder(origin.World, o)
	// Borrowed events (Scan): the builder keeps nothing of an event's payload.
	err = log.Scan(ctx, session, 1, func(ev *events.Event) error {
		if err := b.Add(*ev); err != nil {
			return fmt.Errorf("session %s: %w", session, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return b.Report(), nil
}

// Score rebuilds a stored session's final state from its log and scores it
// with the current rubric.
func Score(ctx context.Context, data, id string, logger hclog.Logger) (*RunResult, error) {
	log, meta, err := OpenSession(ctx, data, id, logger)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	e, replayed, err := driver.Load(ctx, log, meta.ID, 0, 0)
	if err != nil {
		return nil, err
	}
	res := ResultOf(meta, e)
	rec := e.Recorded()
	// The engine counts the rewards of the events it applied: those after
	// the checkpoint it was loaded from. The ones before are read here.
	if from := e.State().LastSeq - uint64(replayed); from > 0 {
		if rec, err = recordedUpTo(ctx, log, meta.ID, from, rec); err != nil {
			return nil, err
		}
	}
	res.Recorded = &rec
	return res, nil
}

// recordedUpTo adds to after (the rewards recorded past seq upTo) those of
// session's reward events up to upTo, their rubrics first.
func recordedUpTo(ctx context.Context, log events.Log, session string, upTo uint64, after sim.Recorded) (sim.Recorded, error) {
	var rec sim.Recorded
	err := log.Scan(ctx, session, 1, func(ev *events.Event) error {
		if ev.Seq > upTo {
			return errStop
		}
		if ev.Type != payload.EvReward {
			return nil
		}
		p, err := payload.As[payload.Reward](ev, nil)
		if err != nil {
			return fmt.Errorf("session %s: reward at seq %d: %w", session, ev.Seq, err)
		}
		rec.Team += p.Team
		if !slices.Contains(rec.Rubrics, p.Rubric) {
			rec.Rubrics = append(rec.Rubrics, p.Rubric)
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return sim.Recorded{}, err
	}
	rec.Team += after.Team
	for _, r := range after.Rubrics {
		if !slices.Contains(rec.Rubrics, r) {
			rec.Rubrics = append(rec.Rubrics, r)
		}
	}
	return rec, nil
}

// Verify checks every stored event's checksum of session id and replays it
// against its checkpoints and final hash.
func Verify(ctx context.Context, data, id string, logger hclog.Logger) (driver.VerifyReport, events.SessionMeta, error) {
	log, meta, err := OpenSession(ctx, data, id, logger)
	if err != nil {
		return driver.VerifyReport{}, meta, err
	}
	defer log.Close()
	return driver.Verify(ctx, log, meta), meta, nil
}
