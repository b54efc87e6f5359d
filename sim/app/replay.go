package app

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/sim/workers"
)

// ReplayResult is what replay found.
type ReplayResult struct {
	Session   string `json:"session"`
	Events    uint64 `json:"events"`
	Recorded  string `json:"recorded_state_hash"`
	Replayed  string `json:"replayed_state_hash"`
	Match     bool   `json:"match"`
	Ended     bool   `json:"ended"`
	EndReason string `json:"end_reason,omitempty"`
}

// Replay re-applies session id's stored events from the log in data and
// checks the final state hash against the one the live run recorded; on
// several processors, in segments at once (see replayEngine). The
// error wraps sim.ErrReplayMismatch when the replay itself found a
// different state; a replay that ran, matched or not, returns no error
// (Match says) along with the session's metadata.
func Replay(ctx context.Context, data, id string, logger hclog.Logger) (ReplayResult, events.SessionMeta, error) {
	log, meta, err := OpenSession(ctx, data, id, logger)
	if err != nil {
		return ReplayResult{}, meta, err
	}
	defer log.Close()
	res := ReplayResult{Session: id, Recorded: meta.StateHash}
	e, err := replayEngine(ctx, log, id, runtime.GOMAXPROCS(0))
	if e != nil {
		res.Events = e.State().LastSeq
		res.Ended, res.EndReason = e.State().Ended, e.State().EndReason
		if res.Ended {
			res.Replayed = e.EndStateHash() // checked by Apply; hashing the state again costs a tenth of a replay
		} else {
			res.Replayed = e.StateHash()
		}
	}
	if err != nil {
		return res, meta, fmt.Errorf("session %s: %w", id, err)
	}
	// Rebuild has already checked the replayed state against the hash in
	// session.ended; this checks it against the session's metadata too.
	res.Match = res.Ended && meta.StateHash != "" && res.Replayed == meta.StateHash
	return res, meta, nil
}

// replayEngine re-applies session id's events and returns the engine after
// the last one: in one pass from event 1 (sim.RebuildLog), or, with k > 1
// and the session's own checkpoints to cut at, in up to k segments at
// once. The first segment starts from the world, as the one pass does;
// each other starts from the checkpoint at its cut, restored and checked
// against its state hash (driver.LoadFrom, as a resume does, on the world
// the segments share, loaded once); every segment but the last must end at
// the state hash of the checkpoint where the next one starts, and the last
// ends with session.ended, whose Apply checks the hash recorded there.
// Every event is applied once by the same state machine, and by induction
// the state at each cut is the one a pass from event 1 reaches, so a
// mismatch anywhere is found as by that pass; the first error in the order
// of the events is returned.
func replayEngine(ctx context.Context, log events.Log, id string, k int) (*sim.Engine, error) {
	cuts := replayCuts(ctx, log, id, k)
	if len(cuts) == 0 {
		return sim.RebuildLog(ctx, log, id, sim.Config{NewSequencer: driver.NewSequencer, ApplyOnly: true})
	}
	// The segments share the world, loaded once.
	o, err := driver.ReadOrigin(ctx, log, id)
	if err != nil {
		return nil, err
	}
	n := len(cuts) + 1
	engines, errs := make([]*sim.Engine, n), make([]error, n)
	workers.Parallel(n, func(i int) {
		end := uint64(0) // to the last event
		if i < len(cuts) {
			end = cuts[i].Seq
		}
		var e *sim.Engine
		var err error
		if i == 0 {
			e, err = replayFromWorld(ctx, log, o, id, end)
		} else if e, _, err = driver.LoadFrom(ctx, log, o, id, cuts[i-1].Seq, true); err == nil {
			err = replayRange(ctx, log, id, e, cuts[i-1].Seq+1, end)
		}
		if err == nil && end != 0 {
			if got := e.StateHash(); got != cuts[i].StateHash {
				err = fmt.Errorf("%w: after seq %d the replayed state hashes to %s, the checkpoint stored there to %s", sim.ErrReplayMismatch, end, got, cuts[i].StateHash)
			}
		}
		engines[i], errs[i] = e, err
	})
	for i, err := range errs {
		if err != nil {
			return engines[i], err
		}
	}
	return engines[n-1], nil
}

// replayCuts picks up to k-1 of session id's own checkpoints that split
// its events most evenly, in order; none when k < 2, when the session has
// no checkpoint past its first event, or when they cannot be read (the
// pass from event 1 then reports what is wrong).
func replayCuts(ctx context.Context, log events.Log, id string, k int) []events.Checkpoint {
	if k < 2 {
		return nil
	}
	last, err := log.LastSeq(ctx, id)
	if err != nil {
		return nil
	}
	cps, err := log.Checkpoints(ctx, id)
	if err != nil {
		return nil
	}
	var cuts []events.Checkpoint
	for i := 1; i < k; i++ {
		target := last * uint64(i) / uint64(k)
		j := sort.Search(len(cps), func(j int) bool { return cps[j].Seq >= target })
		if j == len(cps) || j > 0 && target-cps[j-1].Seq < cps[j].Seq-target {
			j-- // the nearer one below
		}
		if j < 0 {
			continue
		}
		cp := cps[j]
		if cp.Seq <= 1 || cp.Seq >= last || len(cuts) > 0 && cp.Seq <= cuts[len(cuts)-1].Seq {
			continue
		}
		cuts = append(cuts, cp)
	}
	return cuts
}

// replayFromWorld builds session id's engine from its world (o, read with
// driver.ReadOrigin) and applies its events 1 to end.
func replayFromWorld(ctx context.Context, log events.Log, o driver.Origin, id string, end uint64) (*sim.Engine, error) {
	cfg := o.Config(id, 0)
	cfg.ApplyOnly = true
	e, err := sim.New(cfg)
	if err != nil {
		return nil, err
	}
	return e, replayRange(ctx, log, id, e, 1, end)
}

// replayRange applies session id's events from to end (0: the last) to e,
// each borrowed from the log (Apply keeps nothing of it).
func replayRange(ctx context.Context, log events.Log, id string, e *sim.Engine, from, end uint64) error {
	errStop := errors.New("stop")
	err := log.Scan(ctx, id, from, func(ev *events.Event) error {
		if end != 0 && ev.Seq > end {
			return errStop
		}
		return e.Apply(*ev)
	})
	if err == errStop {
		err = nil
	}
	if err == nil && end != 0 && e.State().LastSeq != end {
		err = fmt.Errorf("session %s: the replay stopped at seq %d, before %d", id, e.State().LastSeq, end)
	}
	return err
}
