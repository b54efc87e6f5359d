package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim/analyze"
)

// diffCmd compares two sessions of the same data folder (package
// sim/analyze does the work).
func (a *app) diffCmd() *cobra.Command {
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
			sa, err := a.loadAnalysis(ctx, data, args[0])
			if err != nil {
				return err
			}
			sb, err := a.loadAnalysis(ctx, data, args[1])
			if err != nil {
				return err
			}
			d := analyze.Compare(sa, sb)
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(d)
			}
			printDiff(a.stdout, d)
			return nil
		},
	}
	c.Flags().StringVar(&data, "data", DefaultData, "data folder of the event log")
	c.Flags().BoolVar(&asJSON, "json", false, "print the comparison as JSON")
	return c
}

// maxOutcomeRows bounds the tasks diff lists in its human output.
const maxOutcomeRows = 20

func printDiff(w io.Writer, d *analyze.Difference) {
	A, B := d.Sides[0], d.Sides[1]
	fmt.Fprintf(w, "A  %s  (%s, seed %d, %d events)\n", A.Session, A.World, A.Seed, A.Events)
	fmt.Fprintf(w, "B  %s  (%s, seed %d, %d events)\n", B.Session, B.World, B.Seed, B.Events)
	if !d.Diverged {
		fmt.Fprintf(w, "no divergence: both logs hold the same %d events", A.Events)
		if d.IDsFrom != 0 {
			fmt.Fprintf(w, " (event IDs differ from seq %d: another seed)", d.IDsFrom)
		}
		fmt.Fprintln(w)
		return
	}
	fmt.Fprintf(w, "first divergence at seq %d (%s differ; %d events shared before it)\n", d.Seq, strings.Join(d.Fields, ", "), d.Seq-1)
	eventLine(w, "A", d.A, d.AWall, d.AText)
	eventLine(w, "B", d.B, d.BWall, d.BText)
	if d.IDsFrom != 0 && d.IDsFrom < d.Seq {
		fmt.Fprintf(w, "event IDs differ from seq %d (another seed), while the events stay the same until seq %d\n", d.IDsFrom, d.Seq)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\tA\tB")
	row := func(name, f string, x, y any) { fmt.Fprintf(tw, "%s\t"+f+"\t"+f+"\n", name, x, y) }
	row("team score", "%.2f", A.TeamScore, B.TeamScore)
	row("delivered", "%.2f", A.Delivered, B.Delivered)
	row("penalties", "%.2f", A.Penalties, B.Penalties)
	if A.Tasks+B.Tasks > 0 {
		row("tasks done", "%s", fmt.Sprintf("%d/%d", A.TasksDone, A.Tasks), fmt.Sprintf("%d/%d", B.TasksDone, B.Tasks))
		row("on time", "%d", A.OnTime, B.OnTime)
	}
	row("late", "%d", A.Late, B.Late)
	if A.Tickets+B.Tickets > 0 {
		row("tickets resolved", "%s", fmt.Sprintf("%d/%d", A.Resolved, A.Tickets), fmt.Sprintf("%d/%d", B.Resolved, B.Tickets))
		row("within SLA", "%d", A.InSLA, B.InSLA)
		row("SLA breaches", "%d", A.Breaches, B.Breaches)
	}
	row("violations", "%d", A.Violations, B.Violations)
	row("rejected actions", "%d", A.Rejections, B.Rejections)
	row("timeouts", "%d", A.Timeouts, B.Timeouts)
	row("events", "%d", A.Events, B.Events)
	row("from the divergence", "%d", A.After, B.After)
	row("ended", "%s", orDash(A.Ended), orDash(B.Ended))
	row("state hash", "%s", abbrev(A.StateHash), abbrev(B.StateHash))
	tw.Flush()
	if len(d.Outcomes) > 0 {
		fmt.Fprintf(w, "\nTASKS WHOSE OUTCOME DIFFERS (%d)\n", len(d.Outcomes))
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  TASK\tA\tB")
		for i, o := range d.Outcomes {
			if i == maxOutcomeRows && len(d.Outcomes) > maxOutcomeRows+1 {
				fmt.Fprintf(tw, "  … and %d more (--json lists them all)\n", len(d.Outcomes)-i)
				break
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", o.Task, o.A, o.B)
		}
		tw.Flush()
	}
	if len(d.Rules) > 0 {
		fmt.Fprintln(w, "\nREFUSALS BY RULE")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  RULE\tA\tB")
		for _, r := range d.Rules {
			fmt.Fprintf(tw, "  %s\t%d\t%d\n", r.Rule, r.A, r.B)
		}
		tw.Flush()
	}
}

func eventLine(w io.Writer, side string, ev *events.Event, wall, text string) {
	if ev == nil {
		fmt.Fprintf(w, "  %s  (no event: its log ends before)\n", side)
		return
	}
	actor := ""
	if ev.Actor != "" {
		actor = " " + ev.Actor
	}
	fmt.Fprintf(w, "  %s  #%d %s %s%s (cause #%d): %s\n", side, ev.Seq, shortWall(wall), ev.Type, actor, ev.Cause, text)
}

func abbrev(h string) string {
	if len(h) > 12 {
		return h[:12] + "…"
	}
	return h
}
