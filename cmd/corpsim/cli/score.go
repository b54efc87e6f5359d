package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/policies"
	"github.com/corpsim/corpsim/sim/analyze"
	"github.com/corpsim/corpsim/sim/app"
)

func (a *cmdline) scoreCmd() *cobra.Command {
	var data string
	var asJSON bool
	c := &cobra.Command{
		Use:   "score SESSION",
		Short: "Recompute a session's scorecard from its log with the current rubric",
		Long: `Rebuild a session's final state from its log and score it with the rubric of this
corpsim (its version is printed), so old sessions can be re-graded after the rubric changes.
The reward recorded during the run is shown next to it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := app.Score(cmd.Context(), data, args[0], a.logger)
			if err != nil {
				return err
			}
			if asJSON {
				return a.report(res, true)
			}
			printScorecard(a.stdout, res)
			if r := res.Recorded; r != nil && len(r.Rubrics) > 0 {
				regraded := ""
				if !slices.Equal(r.Rubrics, []string{res.Score.Rubric}) {
					regraded = fmt.Sprintf("; re-graded under %s", res.Score.Rubric)
				}
				fmt.Fprintf(a.stdout, "recorded reward %.2f under %s%s\n", r.Team, strings.Join(r.Rubrics, ", "), regraded)
			}
			printMembers(a.stdout, res.Score)
			return nil
		},
	}
	c.Flags().StringVar(&data, "data", DefaultData, "data folder of the event log")
	c.Flags().BoolVar(&asJSON, "json", false, "print the scorecard as JSON")
	return c
}

func printMembers(w io.Writer, s policies.Scorecard) {
	if len(s.Members) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tDELIVERED\tSHARE\tCRITICAL PATH\tVIOLATIONS\tBLOCKED OTHERS\tSENT\tANSWERED")
	for _, m := range s.Members {
		fmt.Fprintf(tw, "%s\t%.2f\t%.1f%%\t%.1f%%\t%d\t%s\t%d\t%d\n", m.Member, m.Delivered, 100*m.Share, 100*m.Critical,
			m.Violations, analyze.FormatWork(m.BlockedOthers, 0), m.MessagesSent, m.MessagesAnswered)
	}
	tw.Flush()
}

func (a *cmdline) evalCmd() *cobra.Command {
	o := app.EvalOptions{}
	ro := app.RunOptions{}
	var asJSON bool
	var lf llmFlags
	var sf secretFlag
	c := &cobra.Command{
		Use:   "eval",
		Short: "Run a world over K seeds and report mean, spread, pass@1 and pass^k",
		Long: `Run a world over K seeds in memory and report the team score's mean, spread, pass@1 and
pass^k, of every goal and of all goals together. Goals: each project (project:<id>, completed:
every task verified and on time), the tickets' SLA (sla: at least 90% within it), each case
template (case_sla:<template>: at least 90% of its cases done within their SLA, or none opened;
its mean share within SLA is shown) and the budget (budget: no overrun).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := explicitLoad(cmd, o.Load); err != nil {
				return err
			}
			o.FirstSeedSet = cmd.Flags().Changed("first-seed")
			ro.Logger = a.logger
			var err error
			if ro.Secret, err = sf.read(); err != nil {
				return err
			}
			if ro.LLM, err = lf.agent(cmd, o.Agents, a); err != nil {
				return err
			}
			res, err := app.Eval(cmd.Context(), o, ro)
			if err != nil {
				return err
			}
			// Seeds whose agents failed every turn gave no result: they are
			// listed, left out of the figures, and fail the command.
			var failed error
			if len(res.Failed) > 0 {
				failed = withCode(ExitError, fmt.Errorf("%d of %d seeds gave no result (their agents failed every turn): seed %d: %s",
					len(res.Failed), len(res.Failed)+len(res.Seeds), res.Failed[0].Seed, res.Failed[0].Error))
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(res); err != nil {
					return err
				}
				return failed
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintf(tw, "world\t%s (load %g%s)\n", res.World, res.Load, keyedNote(res.Keyed))
			fmt.Fprintf(tw, "agents\t%s\n", res.Agents)
			fmt.Fprintf(tw, "seeds\t%d (%d..%d), %s, %s\n", len(res.Seeds), res.Seeds[0], res.Seeds[len(res.Seeds)-1], res.Wall, res.Rubric)
			fmt.Fprintf(tw, "team score\tmean %.2f  sd %.2f  min %.2f  max %.2f\n", res.Mean, res.StdDev, res.Min, res.Max)
			fmt.Fprintf(tw, "completion\tmean %.1f%%\n", 100*res.Completion)
			if res.OutcomeMean != nil {
				fmt.Fprintf(tw, "outcome\tmean %.2f of %.2f\n", *res.OutcomeMean, *res.OutcomeMax)
			}
			fmt.Fprintf(tw, "all goals\tpass@1 %.2f  pass^%d %s\n", res.PassAt1, len(res.Seeds), yesNo(res.PassK))
			if line := turnTrouble(res); line != "" {
				fmt.Fprintf(tw, "turns\t%s\n", line)
			}
			tw.Flush()
			fmt.Fprintln(a.stdout)
			tw = tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			// A world with cases adds a column: the mean share of each case
			// template's cases done within their SLA.
			shares := false
			for _, g := range res.Goals {
				shares = shares || g.Share != nil
			}
			head := fmt.Sprintf("GOAL\tPASSES\tPASS@1\tPASS^%d", len(res.Seeds))
			if shares {
				head += "\tWITHIN SLA"
			}
			fmt.Fprintln(tw, head)
			for _, g := range res.Goals {
				row := fmt.Sprintf("%s\t%d/%d\t%.2f\t%s", g.Goal, g.Passes, len(res.Seeds), g.PassAt1, yesNo(g.PassK))
				if g.Share != nil {
					row += fmt.Sprintf("\t%.1f%%", 100**g.Share)
				} else if shares {
					row += "\t"
				}
				fmt.Fprintln(tw, row)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, f := range res.Failed {
				fmt.Fprintf(a.stdout, "seed %d: no result: %s\n", f.Seed, f.Error)
			}
			return failed
		},
	}
	f := c.Flags()
	f.StringVar(&o.World, "world", "startup", "shipped world name or world file path")
	f.StringVar(&o.Agents, "agents", "greedy", "agents for the seats, as for run")
	f.Float64Var(&o.Load, "load", 1, "load factor")
	f.IntVar(&o.Seeds, "seeds", 5, "number of episodes (seeds first-seed, first-seed+1, …)")
	f.Uint64Var(&o.FirstSeed, "first-seed", 1, "seed of the first episode")
	f.IntVar(&o.Parallel, "parallel", 0, "episodes run at once (0: one per core)")
	f.DurationVar(&ro.TurnTimeout, "turn-timeout", 30*time.Second, "wall-clock budget of one agent turn, 0 meaning 30s (the llm agent's and a remote seat's; the other built-in agents decide at once and are not timed)")
	seatsFlag(c, &ro)
	sf.add(c)
	worldLimitFlags(c, &ro.WorldLimits)
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	lf.add(c)
	return c
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// turnTrouble says how many turns of an evaluation's seeds failed or timed
// out, and in which seeds; "" when none did.
func turnTrouble(res *app.EvalResult) string {
	var failed, late int
	var seeds []string
	for i, seed := range res.Seeds {
		failed, late = failed+res.TurnErrors[i], late+res.Timeouts[i]
		if res.TurnErrors[i]+res.Timeouts[i] > 0 {
			seeds = append(seeds, strconv.FormatUint(seed, 10))
		}
	}
	if len(seeds) == 0 {
		return ""
	}
	return fmt.Sprintf("%d failed (their agent's backend), %d timed out, in seeds %s: those seats did not act then",
		failed, late, strings.Join(seeds, ", "))
}
