package cli

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/sim/app"
)

// creditCmd gives each seat of a session its counterfactual credit by
// forking the session (package sim/app's Credit does the work).
func (a *cmdline) creditCmd() *cobra.Command {
	ro := app.RunOptions{}
	o := app.CreditOptions{}
	var asJSON bool
	c := &cobra.Command{
		Use:   "credit SESSION",
		Short: "Credit each seat by counterfactual forks: the team score with and without its play",
		Long: `Fork a finished session once per seat, at the seat's first action (its first turn that did
anything but wait), with that seat played by --baseline from there and every other seat by its
agent in the session (the built-in agents decide again, seeded as in the session), play each
fork to its end, and report each seat's marginal contribution to the team score: the session's
score minus its fork's (with --members, only those seats'; one fork each, for a session of many
seats; --parallel of them are played at once). With --shapley K, also estimate Shapley values from K permutations of
the seats drawn from --seed (the same seed, the same estimate): a coalition is played as in the
session by its seats and by the baseline for the others, from the earliest first action of
those. Deterministic agents make the result reproducible.

The forks are kept as sessions in the data folder (their IDs are printed): compare one with its
parent with corpsim diff SESSION FORK. Only sessions whose seats are all built-in agents can be
credited this way (a remote or llm seat cannot be asked again offline).

--json prints the result: the session's score, and per seat its agent, first action, fork,
fork score, marginal contribution and, with --shapley, its Shapley estimate; then every fork.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Session = args[0]
			ro.Logger = a.logger
			start := time.Now()
			progress := isTerminal(a.stderr) && !asJSON
			if progress {
				o.Progress = func(done, total int) {
					if done <= total {
						fmt.Fprintf(a.stderr, "\r\033[Kcredit: %d/%d forks", done, total)
					} else {
						fmt.Fprintf(a.stderr, "\r\033[Kcredit: %d forks (Shapley)", done)
					}
				}
			}
			res, err := app.Credit(cmd.Context(), ro, o)
			if progress {
				fmt.Fprint(a.stderr, "\r\033[K") // clear the progress line
			}
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			fmt.Fprintf(a.stdout, "session %s (%s): team score %.2f; each seat played by %s from its first action, the others as in the session\n\n",
				res.Session, res.World, res.Score, res.Baseline)
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			head := "MEMBER\tAGENT\tFIRST ACTION\tFORK SCORE\tMARGINAL"
			if res.Shapley > 0 {
				head += "\tSHAPLEY"
			}
			fmt.Fprintln(tw, head+"\tFORK")
			for _, s := range res.Seats {
				first := "—" // no turn (in a fork: after its fork point), so nothing to credit
				if s.FirstAction > 0 {
					first = "#" + strconv.FormatUint(s.FirstAction, 10)
				}
				row := []string{s.Member, s.Agent, first, signed(s.ForkScore), signed(s.Marginal)}
				if s.Shapley != nil {
					row = append(row, signed(*s.Shapley))
				}
				fmt.Fprintln(tw, strings.Join(append(row, s.Fork), "\t"))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if res.Shapley > 0 {
				fmt.Fprintf(a.stdout, "\nShapley: %d permutations from seed %d; every seat by %s: %.2f\n", res.Shapley, res.ShapleySeed, res.Baseline, *res.Empty)
			}
			fmt.Fprintf(a.stdout, "\n%d forks kept in %s, in %s; compare one with: corpsim diff %s FORK --data %s\n",
				len(res.Forks), ro.Data, time.Since(start).Round(time.Millisecond), res.Session, ro.Data)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&ro.Data, "data", DefaultData, "data folder of the event log (the forks are kept there)")
	f.StringVar(&o.Baseline, "baseline", "idle", "built-in agent that plays each seat in its fork: "+strings.Join(agents.Names(), ", "))
	f.IntVar(&o.Shapley, "shapley", 0, "also estimate Shapley values from this many sampled permutations of the seats")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the Shapley permutations")
	f.IntVar(&o.Parallel, "parallel", 0, "forks played at once (0: one per core); the Shapley estimate's are played one at a time")
	f.StringSliceVar(&o.Members, "members", nil, "credit only these seats (comma-separated; default every seat): one fork each, for a session of many seats")
	f.DurationVar(&ro.TurnTimeout, "turn-timeout", 30*time.Second, "wall-clock budget of one agent turn in the forks (the llm agent's and a remote seat's; the other built-in agents decide at once and are not timed)")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

func signed(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }
