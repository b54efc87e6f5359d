package cli

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/app"
)

func (a *cmdline) replayCmd() *cobra.Command {
	var data string
	var asJSON bool
	c := &cobra.Command{
		Use:   "replay SESSION",
		Short: "Re-apply a session's stored events and check the final state hash",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			res, meta, err := app.Replay(cmd.Context(), data, id, a.logger)
			if errors.Is(err, sim.ErrReplayMismatch) {
				return withCode(ExitMismatch, err)
			}
			if err != nil {
				return err
			}
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
			if res.Match {
				return nil
			}
			if res.Ended {
				return withCode(ExitMismatch, fmt.Errorf("session %s: state hash not verified", id))
			}
			// A session that did not end (interrupted, running, a fork
			// made with --create-only) replays whole and has no final
			// hash to check: not damage (verify checks its checkpoints).
			// One whose metadata says it ended, and whose log does not
			// hold that end, lost the log's tail: damage.
			if err := events.CheckEnd(meta, res.Events); err != nil {
				return withCode(ExitMismatch, err)
			}
			if meta.StateHash != "" {
				return withCode(ExitMismatch, fmt.Errorf("session %s: its metadata records the final state hash %s, but its log (%d events) holds no end", id, meta.StateHash, res.Events))
			}
			return nil
		},
	}
	c.Flags().StringVar(&data, "data", DefaultData, "data folder of the event log")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
