package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/sim/server"
)

func (a *cmdline) soakCmd() *cobra.Command {
	o := server.SoakOptions{}
	var asJSON bool
	c := &cobra.Command{
		Use:   "soak",
		Short: "Run many sessions with misbehaving remote agents for a while and check that no event was lost",
		Long: `Start an embedded service (NATS on loopback, a Pebble log in --data or a temporary
folder) and keep --sessions sessions running for --duration, starting a new one as
each finishes. Every seat is played by a remote agent on its own NATS connection
(the greedy agent); faults drawn from --seed are injected: killed agents,
garbage and flooding replies, agents that disconnect and come back, and slow
watchers of the event feed. At the end every session's log is read back (it must
be gapless) and replayed (each finished session must verify to its recorded state
hash). Exit 3 if any event was lost.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Sessions < 1 {
				return usagef("--sessions must be at least 1")
			}
			if o.Duration <= 0 {
				return usagef("--duration must be positive")
			}
			o.Logger = a.logger
			if f := cmd.Flag("log-level"); f == nil || !f.Changed {
				// Killed and hanging agents make a warning per turn; keep stderr for errors.
				o.Logger = hclog.New(&hclog.LoggerOptions{Name: "corpsim", Level: hclog.Error, Output: a.stderr})
			}
			rep, err := server.Soak(cmd.Context(), o)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rep); err != nil {
					return err
				}
			} else {
				printSoak(a.stdout, rep)
			}
			if rep.Lost > 0 {
				return withCode(ExitMismatch, fmt.Errorf("soak lost %d event(s): %s", rep.Lost, strings.Join(rep.Problems, "; ")))
			}
			return nil
		},
	}
	f := c.Flags()
	f.DurationVar(&o.Duration, "duration", 2*time.Minute, "how long to keep sessions running")
	f.IntVar(&o.Sessions, "sessions", 4, "sessions running at once")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the sessions and of the faults")
	f.StringVar(&o.World, "world", "startup", "shipped world name or world file")
	f.StringVar(&o.Data, "data", "", "data folder of the log (default: a temporary folder, removed afterwards)")
	f.DurationVar(&o.TurnTimeout, "turn-timeout", time.Second, "a seat's wall-clock budget per turn")
	f.DurationVar(&o.Grace, "grace", 30*time.Second, "how long sessions still running at the end may take to finish (then they are interrupted)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	return c
}

func printSoak(w io.Writer, r *server.SoakReport) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	mib := func(b uint64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	var faults []string
	for _, k := range server.FaultKinds {
		faults = append(faults, fmt.Sprintf("%s %d", k, r.Faults[k]))
	}
	fmt.Fprintf(tw, "soak\t%s of %s (seed %d), %d sessions at once, %.0fs wall\n", r.Duration, r.World, r.Seed, r.Sessions, r.WallSeconds)
	fmt.Fprintf(tw, "sessions\t%d started: %d finished, %d interrupted at the end, %d failed\n", r.Started, r.Finished, r.Interrupted, r.Failed)
	fmt.Fprintf(tw, "events\t%d appended\n", r.EventsAppended)
	fmt.Fprintf(tw, "lost\t%d  (gaps %d, sessions failing verify %d)\n", r.Lost, r.Gaps, r.Unverified)
	fmt.Fprintf(tw, "faults\t%s\n", strings.Join(faults, ", "))
	fmt.Fprintf(tw, "recorded\t%d rejected actions, %d turn timeouts; %d reconnects\n", r.Rejected, r.Timeouts, r.Reconnects)
	fmt.Fprintf(tw, "event feed\t%d slow-consumer notices, %d messages dropped by slow watchers, %d re-read from history\n", r.SlowNotices, r.FeedDropped, r.CaughtUp)
	fmt.Fprintf(tw, "heap\t%s -> %s\n", mib(r.HeapStart), mib(r.HeapEnd))
	fmt.Fprintf(tw, "rss\t%s -> %s\n", mib(r.RSSStart), mib(r.RSSEnd))
	tw.Flush()
	for _, p := range r.Problems {
		fmt.Fprintln(w, "problem:", p)
	}
}
