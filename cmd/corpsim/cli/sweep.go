package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/sim/analyze"
	"github.com/corpsim/corpsim/sim/app"
)

func printSweep(w io.Writer, r *app.SweepResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	// A world with cases adds a column per case template: the mean cases
	// done of those opened, and the mean share done.
	var cases string
	if len(r.Points) > 0 {
		for _, t := range r.Points[0].Templates {
			cases += "CASES " + strings.ToUpper(t.Template) + " DONE/OPENED\t"
		}
	}
	fmt.Fprintf(tw, "LOAD\tAGENTS\tCOMPLETION\tSD\tON TIME\tSD\tSCORE\tSD\t%s\n", cases)
	for _, p := range r.Points {
		cases = ""
		for _, t := range p.Templates {
			cases += fmt.Sprintf("%.1f/%.1f (%.1f%%)\t", t.Done, t.Opened, 100*t.Completion)
		}
		fmt.Fprintf(tw, "%g\t%s\t%.1f%%\t%.1f\t%.1f%%\t%.1f\t%.2f\t%.2f\t%s\n", p.Load, p.Agents, 100*p.Completion, 100*p.CompletionSD,
			100*p.OnTime, 100*p.OnTimeSD, p.Score, p.ScoreSD, cases)
	}
	return tw.Flush()
}

func (a *cmdline) sweepCmd() *cobra.Command {
	o := app.SweepOptions{}
	ro := app.RunOptions{}
	var loads, agentList, out string
	var asJSON bool
	var sf secretFlag
	c := &cobra.Command{
		Use:   "sweep",
		Short: "Run a world over loads × agents × seeds; table, CSV and a completion-vs-load SVG",
		Long: `Run every (load, agents, seed) of a world in memory, as eval runs each seed, and report
per load and agents the mean and standard deviation over seeds of the completion rate, the
on-time rate (work done and verified by its deadline or SLA, over all work: tasks, tickets and cases) and the team score;
in a world with cases, each case template's cases done of those opened.
With -o DIR it writes DIR/sweep.csv, DIR/sweep.svg (completion against load, one line per
agents) and DIR/diagnose.jsonl (each run's diagnosis, for corpsim diagnose --sweep DIR). --agents is a comma-separated list of agent names; to compare mixed seatings, separate
specs with ';' instead (e.g. "greedy;greedy,alice=idle").`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.FirstSeedSet = cmd.Flags().Changed("first-seed")
			var err error
			if o.Loads, err = parseLoads(loads); err != nil {
				return err
			}
			o.Agents = splitAgents(agentList)
			if ro.Secret, err = sf.read(); err != nil {
				return err
			}
			ro.Logger = a.logger
			progress := isTerminal(a.stderr) && !asJSON
			if progress {
				o.Progress = func(done, total int) { fmt.Fprintf(a.stderr, "\r\033[Ksweep: %d/%d runs", done, total) }
			}
			o.Diagnose = out != "" // for corpsim diagnose --sweep
			if out != "" {
				// Checked before the runs (a sweep can take hours), and
				// made after them (a sweep refused leaves no folder).
				if err := app.CheckFolder(out); err != nil {
					return fmt.Errorf("-o %s: %w", out, err)
				}
			}
			res, err := app.Sweep(cmd.Context(), o, ro)
			if progress {
				fmt.Fprint(a.stderr, "\r\033[K")
			}
			if err != nil {
				return err
			}
			// The results are printed even when the files cannot be
			// written (a folder removed meanwhile, a full disk).
			var werr error
			if out != "" {
				werr = writeSweep(out, res)
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(res); err != nil {
					return err
				}
				return werr
			}
			fmt.Fprintf(a.stdout, "world %s, %s from %d%s, %s, %s\n\n", res.World, analyze.Plural(res.Seeds, "seed"), firstSeed(o.FirstSeed, o.FirstSeedSet), keyedNote(res.Keyed), res.Wall, res.Rubric)
			if err := printSweep(a.stdout, res); err != nil {
				return err
			}
			if werr != nil {
				return werr
			}
			if out != "" {
				fmt.Fprintf(a.stdout, "\nwrote %s, %s and %s\n", filepath.Join(out, "sweep.csv"), filepath.Join(out, "sweep.svg"), filepath.Join(out, app.SweepDiagnoses))
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&o.World, "world", "support-desk", "shipped world name or world file path")
	f.StringVar(&loads, "loads", "0.25,0.5,1,2", "comma-separated load factors")
	f.StringVar(&agentList, "agents", "idle,greedy", "comma-separated agent names (or ';'-separated specs as for run)")
	f.IntVar(&o.Seeds, "seeds", 3, "episodes per (load, agents): seeds first-seed, first-seed+1, …")
	f.Uint64Var(&o.FirstSeed, "first-seed", 1, "seed of the first episode")
	f.IntVar(&o.Parallel, "parallel", 0, "episodes run at once (0: one per core)")
	f.StringVarP(&out, "output", "o", "", "folder to write sweep.csv, sweep.svg and "+app.SweepDiagnoses+" (for diagnose --sweep) to")
	f.DurationVar(&ro.TurnTimeout, "turn-timeout", 30*time.Second, "wall-clock budget of one agent turn, 0 meaning 30s (the llm agent's and a remote seat's; the other built-in agents decide at once and are not timed)")
	seatsFlag(c, &ro)
	sf.add(c)
	worldLimitFlags(c, &ro.WorldLimits)
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}

func parseLoads(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		x, err := strconv.ParseFloat(f, 64)
		if err != nil || !(x > 0) || math.IsInf(x, 0) {
			return nil, usagef("--loads: %q is not a positive number", f)
		}
		out = append(out, x)
	}
	if len(out) == 0 {
		return nil, usagef("--loads needs at least one load factor")
	}
	return out, nil
}

func splitAgents(s string) []string {
	sep := ","
	if strings.Contains(s, ";") {
		sep = ";"
	}
	var out []string
	for _, a := range strings.Split(s, sep) {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// writeSweep writes res's CSV, chart and diagnoses into folder out.
func writeSweep(out string, res *app.SweepResult) error {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("-o %s: %w", out, err)
	}
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{{"sweep.csv", res.WriteCSV}, {"sweep.svg", res.Chart().WriteSVG}, {app.SweepDiagnoses, res.WriteDiagnoses}} {
		if _, err := app.WriteFileAtomic(filepath.Join(out, f.name), f.write); err != nil {
			return err
		}
	}
	return nil
}

// firstSeed is the first seed a sweep of first (given if set) plays.
func firstSeed(first uint64, set bool) uint64 {
	if first == 0 && !set {
		return 1
	}
	return first
}
