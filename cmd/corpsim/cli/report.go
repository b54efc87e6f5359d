package cli

import (
	"bufio"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/sim/report"
)

// reportCmd writes a session's HTML report.
func (a *cmdline) reportCmd() *cobra.Command {
	var data, out string
	var asJSON bool
	o := report.Options{}
	c := &cobra.Command{
		Use:   "report SESSION",
		Short: "Write a session's report: one self-contained HTML page with charts",
		Long: `Replay a session's log and write one self-contained HTML page (inline CSS and SVG,
no script, nothing fetched from the network): the scorecard (a fork's header names its parent,
fork point and own seed); where the lost value went, by cause (as diagnose splits it); why each
project missed its bonus and why the latest tasks and tickets were late, from the same analysis
as trace; the members with their roles, credit, approvals decided and answers given; a Gantt
chart of each member's work, claims and leave; the task DAG with the critical path, done-late
and open-past-deadline tasks; open items per queue, cumulative reward and approvals waiting by
approver over time, every time chart with the outages and leaves marked; approvals by approver;
the SLA by priority, queue and arrival stream; cases (format 2): lead time per template (mean
and p90, working time), SLA by priority, and where each late or breached case waited (the step,
and whether for a claim, an ask of its NPC, the NPC's answer or an approval); outcomes (format 2 systems): per template and step the outcomes, their mean score and the
wrong ones (who completed them, what they read and what was needed), and every collateral write
with who made it and what it changed; and refused actions grouped by rule, races for
the same item apart from policy violations. --json writes the report's data instead of the page:
the header, the scorecard (with its per-step outcome cards) and the outcomes section. Long sessions stay small: time series are
downsampled, and the charts and tables keep their most relevant rows and say what they left out.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" && asJSON {
				out = "-"
			}
			if out == "" {
				return usagef("-o FILE is required (- for stdout)")
			}
			if out != "-" {
				if err := app.CheckWritable(out); err != nil {
					return err // before reading the session
				}
			}
			start := time.Now()
			r, err := app.BuildReport(cmd.Context(), data, args[0], o, a.logger)
			if err != nil {
				return err
			}
			write := r.WriteHTML
			if asJSON {
				write = r.WriteJSON
			}
			if out == "-" {
				w := bufio.NewWriter(a.stdout)
				if err := write(w); err != nil {
					return err
				}
				return w.Flush()
			}
			n, err := app.WriteFileAtomic(out, write)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "wrote %s (%d bytes, %d events) in %s\n", out, n, r.Events, time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&data, "data", DefaultData, "data folder of the event log")
	f.StringVarP(&out, "output", "o", "", "HTML file to write (- for stdout; with --json the default)")
	f.BoolVar(&asJSON, "json", false, "write the report's data as JSON (header, scorecard, outcomes) instead of the HTML page")
	f.IntVar(&o.MaxGanttRows, "gantt-rows", 30, "members shown in the Gantt chart at most")
	f.IntVar(&o.MaxDAGNodes, "dag-nodes", 60, "tasks shown in the DAG at most")
	f.IntVar(&o.Buckets, "points", 300, "time buckets per series (each keeps its low and high point)")
	f.IntVar(&o.MaxLateCases, "late-cases", 20, "late or breached cases the cases section explains at most (the rest are counted)")
	return c
}
