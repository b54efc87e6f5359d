package cli

import (
	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/sim/app"
)

func (a *cmdline) logCmd() *cobra.Command {
	var o app.LogOptions
	c := &cobra.Command{
		Use:   "log SESSION",
		Short: "Print a session's events as JSON Lines",
		Long: `Print a session's events as JSON Lines, from --from on, optionally only of one --type.
With --follow, tail a running session through NATS until it ends: the running corpsim
must have been started with --listen (its address is in DATA/bus.url), or give --nats URL.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Session, o.Logger = args[0], a.logger
			return app.PrintLog(cmd.Context(), o, a.stdout)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Data, "data", DefaultData, "data folder of the event log")
	f.Uint64Var(&o.From, "from", 1, "first sequence number to print")
	f.StringSliceVar(&o.Types, "type", nil, "print only events of these types (repeat the flag, or separate them with commas)")
	f.BoolVar(&o.Follow, "follow", false, "tail a running session through NATS until it ends")
	f.StringVar(&o.Token, "token", "", "operator token of the running corpsim (default: DATA/operator.token)")
	f.StringVar(&o.NATS, "nats", "", "NATS URL of the running corpsim (default: DATA/bus.url)")
	return c
}
