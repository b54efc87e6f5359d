package cli

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/sim/analyze"
	"github.com/corpsim/corpsim/sim/app"
)

// traceCmd explains a task's, a member's or a project's outcome from a
// session's log (package sim/analyze does the work).
func (a *cmdline) traceCmd() *cobra.Command {
	var data, task, member, goal, caseID string
	var asJSON bool
	c := &cobra.Command{
		Use:   "trace SESSION (--task T | --member M | --goal G | --case C)",
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
--case C    a case's story: how it was opened (by an arrival or a member) with which attributes
            (and, marked as such, the hidden facts drawn for it), each step claimed, worked
            and completed by whom and when, the NPC asks and answers, approvals (delegated or
            escalated), refusals on its steps (separation rules), its SLA breach, what its
            open steps waited for when its SLA passed, and its waits longest first. A step with an
            outcome (format 2 systems) shows it: the values wanted and those at completion, the
            fields right and whether it is a wrong outcome, what the completing member read of
            the record, its copies and the records it references (system, values seen), the
            records as they stood at completion (the authoritative system marked), the writes,
            and a line saying it, e.g. "read crm account account-2 plan monthly (a copy of
            invoice inv-1); billing invoice inv-1 (authoritative) had plan annual; ana wrote
            refunded 194, status refunded; wanted refunded 389".

Times are the world's wall clock (its start and calendar); durations are working time.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			n := 0
			for _, f := range []string{task, member, goal, caseID} {
				if f != "" {
					n++
				}
			}
			if n != 1 {
				return usagef("trace needs exactly one of --task, --member, --goal or --case")
			}
			s, err := app.LoadAnalysis(cmd.Context(), data, args[0], a.logger)
			if err != nil {
				return err
			}
			var res any
			switch {
			case task != "":
				res, err = s.Task(task)
			case member != "":
				res, err = s.Member(member)
			case caseID != "":
				res, err = s.Case(caseID)
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
				r.WriteText(a.stdout)
			case *analyze.MemberTrace:
				r.WriteText(a.stdout)
			case *analyze.GoalTrace:
				r.WriteText(a.stdout)
			case *analyze.CaseTrace:
				r.WriteText(a.stdout)
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&data, "data", DefaultData, "data folder of the event log")
	f.StringVar(&task, "task", "", "trace this task or ticket")
	f.StringVar(&member, "member", "", "trace this member")
	f.StringVar(&goal, "goal", "", "trace this project (goal)")
	f.StringVar(&caseID, "case", "", "trace this case (format 2)")
	f.BoolVar(&asJSON, "json", false, "print the trace as JSON")
	return c
}
