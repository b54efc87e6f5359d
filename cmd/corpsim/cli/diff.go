package cli

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/sim/analyze"
	"github.com/corpsim/corpsim/sim/app"
)

// diffCmd compares two sessions of the same data folder (package
// sim/analyze does the work).
func (a *cmdline) diffCmd() *cobra.Command {
	var data string
	var asJSON bool
	c := &cobra.Command{
		Use:   "diff SESSION_A SESSION_B",
		Short: "Find where two runs or forks diverge and compare what followed",
		Long: `Compare two sessions event by event and report the first seq at which they differ (in
time, type, actor, cause or payload; event IDs, which derive from the seed, are reported
apart), with both events, then each side's team score, tasks completed, on time and late,
tasks whose outcome differs, refusals by rule and event counts. A fork shares its parent's
events up to its fork point, so it diverges after it, if at all.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			sa, err := app.LoadAnalysis(ctx, data, args[0], a.logger)
			if err != nil {
				return err
			}
			sb, err := app.LoadAnalysis(ctx, data, args[1], a.logger)
			if err != nil {
				return err
			}
			d := analyze.Compare(sa, sb)
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(d)
			}
			d.WriteText(a.stdout)
			return nil
		},
	}
	c.Flags().StringVar(&data, "data", DefaultData, "data folder of the event log")
	c.Flags().BoolVar(&asJSON, "json", false, "print the comparison as JSON")
	return c
}
