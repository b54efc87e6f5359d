package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/sim/analyze"
	"github.com/corpsim/corpsim/sim/app"
)

// diagnoseCmd says where sessions' lost value went (package sim/analyze
// does the work; a sweep's diagnoses are read from its output folder).
func (a *cmdline) diagnoseCmd() *cobra.Command {
	var data, sweep string
	var asJSON bool
	c := &cobra.Command{
		Use:   "diagnose SESSION… | --sweep DIR",
		Short: "Say where the lost value went, by cause, in points and working hours",
		Long: `Replay sessions and split their lost value — what the world's work could have given (every
task's and arrived ticket's value, every project's bonus, every case's value) minus the team
score — by cause:

  unclaimed    ready and open while a member who could take it was free (and what those members
               were doing instead: idle, or holding other work without working on it)
  capacity     ready and open while everyone who could take it was working (or away), or held by
               someone working on another task
  approval     an approval step on an approver's desk (whose desk)
  information  held while its holder had not learnt the information it needs (from whom)
  dependency   its dependencies not done yet
  leave        its holder, its approver, or everyone who could take it on leave (who)
  outage       its queue down
  rework       work or holding after one of its actions was refused by a rule or its approval rejected
  held         held, not worked, nothing to wait on (the holder's own pace)
  work         its own effort: points only when it waited on nothing else (under way at the end)
  not_started  its project never started
  npc_not_asked  a case step an NPC performs, ready, and nobody had asked the NPC (which)
  npc          a case step asked of an NPC, waiting for its answer (which)
  separation   a case step every member who may take it is barred from by a separation rule (which)
  unverified   completed, but the rubric does not count it
  wrong_outcome  a case step completed with its outcome unmet: the case's value (who completed it)
  collateral   the penalty for record writes no case asked for (who wrote them)
  violations   the penalty for attempted policy violations
  budget       the penalty for spending beyond a budget

Hours are working hours of the items that lost value; each item's lost points (its value not
earned, its SLA penalty, its share of a lost project bonus) are split over its causes by their
hours, its own work left out. A case is one item: its value, its steps' values and its SLA
penalty, split over what its steps waited on once each was ready. The causes' points add up to the lost value.

With several sessions, each is diagnosed and their mean is printed as well. --sweep DIR reads
the diagnoses corpsim sweep -o DIR wrote (DIR/diagnose.jsonl) and prints each run, the mean per
load and agents, and the mean of all runs.

--json prints one JSON object per line. For one session: {"lost": points, "causes": [{"cause":
name, "hours": h, "points": p}, …]}. For several: one such object per session with its
"session" ID, then the mean with "sessions": N. With --sweep: one per run with its "world",
"load", "agents" and "seed", one per load and agents with "sessions", then the mean of all runs.`,
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case sweep != "" && len(args) > 0:
				return usagef("diagnose takes sessions or --sweep DIR, not both")
			case sweep == "" && len(args) == 0:
				return usagef("diagnose needs at least one SESSION, or --sweep DIR")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if sweep != "" {
				runs, err := app.ReadSweep(sweep)
				if err != nil {
					return err
				}
				return a.printSweepDiagnoses(runs, asJSON)
			}
			var ds []*analyze.Diagnosis
			for _, id := range args {
				d, err := app.Diagnose(cmd.Context(), data, id, a.logger)
				if err != nil {
					return err
				}
				ds = append(ds, d)
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				if len(ds) == 1 {
					return enc.Encode(ds[0])
				}
				for _, d := range ds {
					if err := enc.Encode(sessionDiagnosis{Session: d.Session, Diagnosis: d}); err != nil {
						return err
					}
				}
				return enc.Encode(aggregateDiagnosis{Sessions: len(ds), Diagnosis: analyze.Aggregate(ds)})
			}
			for i, d := range ds {
				if i > 0 {
					fmt.Fprintln(a.stdout)
				}
				d.WriteText(a.stdout, fmt.Sprintf("session %s (%s)", d.Session, d.World))
			}
			if len(ds) > 1 {
				fmt.Fprintln(a.stdout)
				analyze.Aggregate(ds).WriteText(a.stdout, fmt.Sprintf("all %d sessions", len(ds)))
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&data, "data", DefaultData, "data folder of the event log")
	f.StringVar(&sweep, "sweep", "", "read the diagnoses of a corpsim sweep -o output folder")
	f.BoolVar(&asJSON, "json", false, "print JSON, one object per line")
	return c
}

type sessionDiagnosis struct {
	Session string `json:"session"`
	*analyze.Diagnosis
}

type aggregateDiagnosis struct {
	Load     *float64 `json:"load,omitempty"`
	Agents   string   `json:"agents,omitempty"`
	Sessions int      `json:"sessions"`
	*analyze.Diagnosis
}

type runDiagnosis struct {
	World  string  `json:"world"`
	Load   float64 `json:"load"`
	Agents string  `json:"agents"`
	Seed   uint64  `json:"seed"`
	*analyze.Diagnosis
}

// cell is one (load, agents) of a sweep and its runs' diagnoses.
type cell struct {
	load   float64
	agents string
	ds     []*analyze.Diagnosis
}

func (a *cmdline) printSweepDiagnoses(runs []app.SweepRun, asJSON bool) error {
	var cells []*cell
	var all []*analyze.Diagnosis
	for _, r := range runs {
		if n := len(cells); n == 0 || cells[n-1].load != r.Load || cells[n-1].agents != r.Agents {
			cells = append(cells, &cell{load: r.Load, agents: r.Agents})
		}
		c := cells[len(cells)-1]
		c.ds = append(c.ds, r.Diagnosis)
		all = append(all, r.Diagnosis)
	}
	if asJSON {
		enc := json.NewEncoder(a.stdout)
		for _, r := range runs {
			if err := enc.Encode(runDiagnosis{World: r.World, Load: r.Load, Agents: r.Agents, Seed: r.Seed, Diagnosis: r.Diagnosis}); err != nil {
				return err
			}
		}
		for _, c := range cells {
			load := c.load
			if err := enc.Encode(aggregateDiagnosis{Load: &load, Agents: c.agents, Sessions: len(c.ds), Diagnosis: analyze.Aggregate(c.ds)}); err != nil {
				return err
			}
		}
		return enc.Encode(aggregateDiagnosis{Sessions: len(all), Diagnosis: analyze.Aggregate(all)})
	}
	for _, r := range runs {
		r.Diagnosis.WriteText(a.stdout, fmt.Sprintf("%s · load %g · %s · seed %d", r.World, r.Load, r.Agents, r.Seed))
		fmt.Fprintln(a.stdout)
	}
	var aggs []*analyze.Diagnosis
	for _, c := range cells {
		agg := analyze.Aggregate(c.ds)
		aggs = append(aggs, agg)
		agg.WriteText(a.stdout, fmt.Sprintf("load %g · %s · %d seeds", c.load, c.agents, len(c.ds)))
		fmt.Fprintln(a.stdout)
	}
	analyze.Aggregate(all).WriteText(a.stdout, fmt.Sprintf("all %d runs", len(all)))
	fmt.Fprintln(a.stdout)
	return writeShares(a.stdout, cells, aggs)
}

// writeShares writes each cell's share of the lost value by cause: the
// reasons beside the completion-versus-load curve.
func writeShares(w io.Writer, cells []*cell, aggs []*analyze.Diagnosis) error {
	var causes []string
	seen := map[string]bool{}
	for _, c := range analyze.Aggregate(aggs).Causes {
		if c.Points > 0 && !seen[c.Cause] {
			seen[c.Cause] = true
			causes = append(causes, c.Cause)
		}
	}
	fmt.Fprintln(w, "share of the lost value by cause")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "LOAD\tAGENTS\tLOST\t%s\t\n", strings.ToUpper(strings.Join(causes, "\t")))
	for i, c := range cells {
		row := []string{strconv.FormatFloat(c.load, 'g', -1, 64), c.agents, strconv.FormatFloat(aggs[i].Lost, 'f', 2, 64)}
		for _, name := range causes {
			row = append(row, strconv.FormatFloat(100*aggs[i].Share(name), 'f', 1, 64)+"%")
		}
		fmt.Fprintf(tw, "%s\t\n", strings.Join(row, "\t"))
	}
	return tw.Flush()
}
