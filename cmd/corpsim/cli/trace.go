package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/sim/analyze"
)

// traceCmd explains a task's, a member's or a project's outcome from a
// session's log (package sim/analyze does the work).
func (a *app) traceCmd() *cobra.Command {
	var data, task, member, goal string
	var asJSON bool
	c := &cobra.Command{
		Use:   "trace SESSION (--task T | --member M | --goal G)",
		Short: "Explain an outcome from the log: a task's causal chain, a member's holds and waits, a project's critical path",
		Long: `Replay a session's log and explain an outcome by following the events' Cause links.

--task T    when the task appeared and became ready (its dependencies completing, and who held
            them), who held it, which approval sat with whom for how long (escalations and
            leave included), which interruptions touched it (reprioritization, changed
            requirements, leave, queue outages), when it was completed and whether it was
            late; its waits longest first, the Cause chain of its completion, and a timeline.
--member M  what the member held, its leave, the approvals that sat with it (others waited
            on it), its own requests, what held up its tasks, and its refused actions.
--goal G    a project's tasks, its critical path as it happened and the longest waits on it.

Times are the world's wall clock (its start and calendar); durations are working time.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n := 0
			for _, f := range []string{task, member, goal} {
				if f != "" {
					n++
				}
			}
			if n != 1 {
				return usagef("trace needs exactly one of --task, --member or --goal")
			}
			s, err := a.loadAnalysis(cmd.Context(), data, args[0])
			if err != nil {
				return err
			}
			var res any
			switch {
			case task != "":
				res, err = s.Task(task)
			case member != "":
				res, err = s.Member(member)
			default:
				res, err = s.Goal(goal)
			}
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			switch r := res.(type) {
			case *analyze.TaskTrace:
				printTaskTrace(a.stdout, r)
			case *analyze.MemberTrace:
				printMemberTrace(a.stdout, r)
			case *analyze.GoalTrace:
				printGoalTrace(a.stdout, r)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&data, "data", DefaultData, "data folder of the event log")
	f.StringVar(&task, "task", "", "trace this task or ticket")
	f.StringVar(&member, "member", "", "trace this member")
	f.StringVar(&goal, "goal", "", "trace this project (goal)")
	f.BoolVar(&asJSON, "json", false, "print the trace as JSON")
	return c
}

// loadAnalysis reads a whole session (a fork's shared prefix included) for analysis.
func (a *app) loadAnalysis(ctx context.Context, data, id string) (*analyze.Session, error) {
	log, meta, err := a.openSession(ctx, data, id)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	s, err := analyze.Load(log.Read(ctx, meta.ID, 1))
	if err != nil {
		return nil, fmt.Errorf("session %s: %w", meta.ID, err)
	}
	// A fork may have another seed than the root session.started recorded.
	s.ID, s.Seed = meta.ID, meta.Seed
	return s, nil
}

// short formats an RFC 3339 stamp for a timeline: "Mon 2026-01-05 09:00".
func short(st analyze.Stamp) string { return st.Human() }

func shortWall(wall string) string { return analyze.Stamp{Wall: wall}.Human() }

func shortPtr(st *analyze.Stamp, otherwise string) string {
	if st == nil {
		return otherwise
	}
	return short(*st)
}

func seqNote(seq uint64) string {
	if seq == 0 {
		return ""
	}
	return fmt.Sprintf("  #%d", seq)
}

func printTimeline(w io.Writer, title string, tl []analyze.Entry) {
	if len(tl) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, e := range tl {
		because := ""
		if e.Because != nil {
			because = fmt.Sprintf("  ← #%d %s", e.Because.Seq, e.Because.Type)
		}
		fmt.Fprintf(tw, "  #%d\t%s\t%s\t%s%s\n", e.Seq, short(e.Stamp), e.Type, e.Text, because)
	}
	tw.Flush()
}

func printChain(w io.Writer, title string, chain []analyze.Link) {
	if len(chain) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", title)
	for i, l := range chain {
		arrow := "  "
		if i > 0 {
			arrow = "  ← "
		}
		if l.Seq == 0 { // a summary of links left out
			fmt.Fprintf(w, "%s… %s\n", arrow, l.Text)
			continue
		}
		fmt.Fprintf(w, "%s#%d %s %s: %s\n", arrow, l.Seq, short(l.Stamp), l.Type, l.Text)
		if l.Note != "" {
			fmt.Fprintf(w, "      (%s)\n", l.Note)
		}
	}
}

func printDelays(w io.Writer, title string, ds []analyze.Delay, withTask bool) {
	if len(ds) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, d := range ds {
		if withTask {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", d.Waited.Text, d.Task, d.Kind, d.Text)
		} else {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", d.Waited.Text, d.Kind, d.Text)
		}
	}
	tw.Flush()
}

func printTaskTrace(w io.Writer, t *analyze.TaskTrace) {
	where := "queue " + t.Queue
	if t.Project != "" {
		where = "project " + t.Project + ", " + where
	}
	fmt.Fprintf(w, "%s %s (%s): %s\n", t.Kind, t.Task, where, t.Outcome)
	fmt.Fprintf(w, "%s.\n\n", t.Summary)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "created\t%s%s\n", short(t.Created), seqNote(t.Created.Seq))
	if len(t.Deps) == 0 {
		fmt.Fprintf(tw, "ready\t%s\tno dependencies\n", shortPtr(t.Ready, "never"))
	} else {
		fmt.Fprintf(tw, "ready\t%s\n", shortPtr(t.Ready, "never: dependencies not done"))
		for _, d := range t.Deps {
			gate := ""
			if d.Gating {
				gate = " (done last: made it ready)"
			}
			fmt.Fprintf(tw, "  dependency %s\t%s by %s%s, held by %s\n", d.Task, shortPtr(d.Done, d.Status), orNone(d.DoneBy), gate, orNone(strings.Join(d.Holders, ", ")))
		}
	}
	for _, h := range t.Holds {
		fmt.Fprintf(tw, "held by %s\t%s → %s (%s, %s)\n", h.Member, short(h.From), shortPtr(h.To, "the end"), h.End, h.Held.Text)
	}
	fmt.Fprintf(tw, "effort\t%s spent of %s, in %d stint(s)\n", t.Spent.Text, t.Effort.Text, t.Stints)
	if t.Deadline != nil {
		fmt.Fprintf(tw, "deadline\t%s\n", short(*t.Deadline))
	}
	if t.Done != nil {
		late := ""
		if t.Late.MS > 0 {
			late = ", " + t.Late.Text + " late"
		}
		fmt.Fprintf(tw, "done\t%s by %s%s%s\n", short(*t.Done), t.DoneBy, late, seqNote(t.Done.Seq))
	}
	for _, r := range t.Rejections {
		fmt.Fprintf(tw, "refused\t%d × %s\n", r.Count, r.Rule)
	}
	tw.Flush()
	printDelays(w, "WAITED ON (longest first, working time)", t.Delays, false)
	title := "CAUSE CHAIN of its latest event"
	if t.Done != nil {
		title = "CAUSE CHAIN of its completion"
	}
	printChain(w, title, t.Chain)
	printTimeline(w, "TIMELINE", t.Timeline)
}

func orNone(s string) string {
	if s == "" {
		return "nobody"
	}
	return s
}

func printMemberTrace(w io.Writer, m *analyze.MemberTrace) {
	kind := ""
	if m.NPC {
		kind = ", simulated colleague"
	}
	fmt.Fprintf(w, "member %s (%s, team %s%s)\n", m.Member, m.Role, m.Team, kind)
	fmt.Fprintf(w, "held %d task(s); %d leave(s); others waited %s on its approvals; %d refused action(s); %d timeout(s)\n",
		len(m.Holds), len(m.Leaves), m.ApprovalWait.Text, countAll(m.Rejections), m.Timeouts)
	if len(m.Leaves) > 0 {
		fmt.Fprintln(w, "\nLEAVE")
		for _, l := range m.Leaves {
			d := "no delegate"
			if l.Delegate != "" {
				d = "delegate " + l.Delegate
			}
			fmt.Fprintf(w, "  %s → %s (member.left #%d), %s\n", short(l.From), shortPtr(l.Returned, "still away at the end, due "+shortWall(l.Until.Wall)), l.From.Seq, d)
		}
	}
	if len(m.Holds) > 0 {
		fmt.Fprintln(w, "\nHELD")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, h := range m.Holds {
			fmt.Fprintf(tw, "  %s\t%s → %s\t%s\t%s\n", h.Task, short(h.From), shortPtr(h.To, "the end"), h.Held.Text, h.End)
		}
		tw.Flush()
	}
	printApprovalHolds(w, fmt.Sprintf("APPROVING (others waited on %s)", m.Member), m.Approving, true)
	printApprovalHolds(w, "AWAITING its requests", m.Awaiting, false)
	printDelays(w, "BLOCKED BY (while it held the task)", m.Blocked, true)
	if len(m.Rejections) > 0 {
		fmt.Fprintln(w, "\nREFUSED")
		for _, r := range m.Rejections {
			fmt.Fprintf(w, "  %d × %s\n", r.Count, r.Rule)
		}
	}
	printTimeline(w, "TIMELINE", m.Timeline)
}

func countAll(rs []analyze.RuleCount) int {
	n := 0
	for _, r := range rs {
		n += r.Count
	}
	return n
}

func printApprovalHolds(w io.Writer, title string, hs []analyze.ApprovalHold, approving bool) {
	if len(hs) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%s\n", title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, h := range hs {
		who := "for " + h.Requester
		if !approving {
			who = "with " + h.Approver
		}
		leave := ""
		if h.OnLeave != nil {
			leave = fmt.Sprintf(", %s on leave for %s of it (#%d)", h.Approver, h.LeaveWait.Text, h.OnLeave.From.Seq)
		}
		fmt.Fprintf(tw, "  %s step %d (%s) of %s\t%s\t%s → %s\t%s\t%s, %s%s\n", h.Request, h.Step+1, h.Role, h.Task, who,
			short(h.From), shortPtr(h.To, "the end"), h.Waited.Text, h.Via, h.End, leave)
	}
	tw.Flush()
}

func printGoalTrace(w io.Writer, g *analyze.GoalTrace) {
	fmt.Fprintf(w, "project %s (team %s, queue %s): %d/%d done, %d on time, bonus %s\n", g.Project, g.Team, g.Queue, g.Done, len(g.Tasks), g.OnTime, yesNo(g.Bonus))
	fmt.Fprintf(w, "started %s%s, deadline %s\n\n", short(g.Started), seqNote(g.Started.Seq), shortPtr(g.Deadline, "none"))
	rows := func(title string, rs []analyze.TaskRow) {
		fmt.Fprintln(w, title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  TASK\tREADY\tCLAIMED\tDONE\tBY\tOUTCOME\tLONGEST WAIT")
		for _, r := range rs {
			outcome := r.Outcome
			if r.Late.MS > 0 {
				outcome += " " + r.Late.Text
			}
			longest := ""
			if r.Longest != nil {
				longest = r.Longest.Waited.Text + " " + r.Longest.Kind
				if r.Longest.Who != "" {
					longest += " (" + r.Longest.Who + ")"
				}
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Task, shortPtr(r.Ready, "-"), shortPtr(r.Claimed, "-"), shortPtr(r.Done, "-"),
				orDash(r.DoneBy), outcome, longest)
		}
		tw.Flush()
	}
	rows("TASKS", g.Tasks)
	fmt.Fprintln(w)
	rows("CRITICAL PATH (as it happened: each task made ready by the one above)", g.CriticalPath)
	fmt.Fprintf(w, "\nplanned critical path (most effort): %s\n", strings.Join(g.Planned, " → "))
	printDelays(w, "LONGEST WAITS ON THE CRITICAL PATH (besides the path itself)", g.Delays, true)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
