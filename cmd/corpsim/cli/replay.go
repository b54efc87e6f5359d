package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

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

func (a *app) replayCmd() *cobra.Command {
	var data string
	var asJSON bool
	c := &cobra.Command{
		Use:   "replay SESSION",
		Short: "Re-apply a session's stored events and check the final state hash",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			id := args[0]
			log, meta, err := a.openSession(ctx, data, id)
			if err != nil {
				return err
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
				if errors.Is(err, sim.ErrReplayMismatch) {
					return withCode(ExitMismatch, fmt.Errorf("session %s: %w", id, err))
				}
				return fmt.Errorf("session %s: %w", id, err)
			}
			// Rebuild has already checked the replayed state against the hash in
			// session.ended; this checks it against the session's metadata too.
			res.Match = res.Ended && meta.StateHash != "" && res.Replayed == meta.StateHash
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(res); err != nil {
					return err
				}
			} else if res.Match {
				fmt.Fprintf(a.stdout, "session %s: replayed %d events; state hash matches: %s\n", id, res.Events, res.Recorded)
			} else if res.Ended {
				fmt.Fprintf(a.stdout, "session %s: replayed %d events; state hash %s differs from the recorded %s\n", id, res.Events, res.Replayed, res.Recorded)
			} else {
				fmt.Fprintf(a.stdout, "session %s: replayed %d events; state hash %s; the session did not end (status %s), so there is no final hash to check\n",
					id, res.Events, res.Replayed, meta.Status)
			}
			if !res.Match {
				return withCode(ExitMismatch, fmt.Errorf("session %s: state hash not verified", id))
			}
			return nil
		},
	}
	c.Flags().StringVar(&data, "data", DefaultData, "data folder of the event log")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
