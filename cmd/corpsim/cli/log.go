package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/events"
)

func (a *app) logCmd() *cobra.Command {
	var data, typ string
	var from uint64
	c := &cobra.Command{
		Use:   "log SESSION",
		Short: "Print a session's events as JSON Lines",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			log, err := OpenLog(data, false)
			if err != nil {
				return err
			}
			defer log.Close()
			ctx := cmd.Context()
			if _, err := log.Session(ctx, args[0]); err != nil {
				if errors.Is(err, events.ErrNoSession) {
					return fmt.Errorf("no session %s in %s", args[0], data)
				}
				return err
			}
			w := bufio.NewWriter(a.stdout)
			defer w.Flush()
			for ev, err := range log.Read(ctx, args[0], max(from, 1)) {
				if err != nil {
					return err
				}
				if typ != "" && ev.Type != typ {
					continue
				}
				b, err := json.Marshal(ev)
				if err != nil {
					return err
				}
				w.Write(b)
				w.WriteByte('\n')
			}
			return nil
		},
	}
	c.Flags().StringVar(&data, "data", DefaultData, "data folder of the event log")
	c.Flags().Uint64Var(&from, "from", 1, "first sequence number to print")
	c.Flags().StringVar(&typ, "type", "", "print only events of this type")
	return c
}
