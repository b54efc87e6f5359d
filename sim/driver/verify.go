package driver

import (
	"context"
	"errors"
	"fmt"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim"
)

// VerifyReport is what Verify found.
type VerifyReport struct {
	Session     string   `json:"session"`
	Events      uint64   `json:"events"`
	Checkpoints int      `json:"checkpoints"`
	StateHash   string   `json:"state_hash"` // the final state's (session.ended's, if it ended)
	Problems    []string `json:"problems,omitempty"`
	OK          bool     `json:"ok"`
}

// Verify reads every event of a session, which checks each one's checksum,
// replays them all from event 1, and compares the replayed state hash with
// each checkpoint's (and restores each checkpoint to check it decodes to
// that hash), with the hash in session.ended and with the session's
// metadata. A problem does not stop the check; every one is reported.
func Verify(ctx context.Context, log events.Log, meta events.SessionMeta) VerifyReport {
	r := VerifyReport{Session: meta.ID}
	verify(ctx, log, meta, &r)
	r.OK = len(r.Problems) == 0
	return r
}

func verify(ctx context.Context, log events.Log, meta events.SessionMeta, r *VerifyReport) {
	problem := func(format string, args ...any) { r.Problems = append(r.Problems, fmt.Sprintf(format, args...)) }

	cps, err := log.Checkpoints(ctx, meta.ID)
	if err != nil {
		problem("checkpoints: %v", err)
	}
	r.Checkpoints = len(cps)
	origin, err := ReadOrigin(ctx, log, meta.ID)
	if err != nil {
		problem("%v", err)
		return
	}
	// The engine only re-applies (no timers) and hashes the tickets it
	// retires beside itself, as a replay's do: what is checked is state
	// hashes, which neither changes.
	cfg := origin.Config(meta.ID, 0)
	cfg.ApplyOnly = true
	e, err := sim.New(cfg)
	if err != nil {
		problem("%v", err)
		return
	}
	next := 0
	// Each event is borrowed from the log (Scan): Apply and the checks
	// below keep nothing of it.
	errStop := errors.New("stop")
	err = log.Scan(ctx, meta.ID, 1, func(ev *events.Event) error {
		if err := e.Apply(*ev); err != nil {
			if errors.Is(err, sim.ErrReplayMismatch) {
				problem("session.ended at seq %d: %v", ev.Seq, err)
			} else {
				problem("replay stops at seq %d: %v", ev.Seq, err)
			}
			return errStop
		}
		r.Events = ev.Seq
		for next < len(cps) && cps[next].Seq < ev.Seq {
			problem("checkpoint at seq %d was not reached in order", cps[next].Seq)
			next++
		}
		if next < len(cps) && cps[next].Seq == ev.Seq {
			cp := cps[next]
			if got := e.StateHash(); got != cp.StateHash {
				problem("checkpoint at seq %d records state hash %s; replay gives %s", cp.Seq, cp.StateHash, got)
			}
			full, err := log.LatestCheckpoint(ctx, meta.ID, cp.Seq)
			switch {
			case err != nil:
				problem("checkpoint at seq %d: %v", cp.Seq, err)
			case full.Seq != cp.Seq:
				problem("checkpoint at seq %d: lookup found seq %d", cp.Seq, full.Seq)
			default:
				if _, err := sim.Restore(cfg, full.Data, full.StateHash); err != nil {
					problem("checkpoint at seq %d does not restore: %v", cp.Seq, err)
				}
			}
			next++
		}
		return nil
	})
	lost := errors.Is(err, events.ErrLost) // a read-only log's scan checks the end marker itself
	if err != nil && err != errStop {
		problem("%v", err)
	}
	for ; next < len(cps); next++ {
		problem("checkpoint at seq %d is past the last event %d", cps[next].Seq, r.Events)
	}
	r.StateHash = e.StateHash()
	if e.State().Ended {
		r.StateHash = e.EndStateHash()
		if meta.StateHash != "" && meta.StateHash != r.StateHash {
			problem("session metadata records state hash %s; replay gives %s", meta.StateHash, r.StateHash)
		}
	}
	last, err := log.LastSeq(ctx, meta.ID)
	if err == nil && last != r.Events {
		problem("the log's last seq is %d but replay read %d events", last, r.Events)
	}
	if err == nil {
		// The end marker: a session that ended records its last seq; a log
		// that stops short of it lost events (a damaged WAL, a cut file).
		if err := events.CheckEnd(meta, last); err != nil && !lost {
			problem("%v", err)
		}
	}
}
