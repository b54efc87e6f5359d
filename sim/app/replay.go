package app

import (
	"context"
	"fmt"

	"github.com/hashicorp/go-hclog"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim"
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
// checks the final state hash against the one the live run recorded. The
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
	e, err := sim.RebuildLog(ctx, log, id, sim.Config{})
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
