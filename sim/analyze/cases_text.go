package analyze

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/corpsim/corpsim/events/payload"
)

// attrsText writes attributes as "name=value" pairs in name order.
func attrsText(a payload.Attrs) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(a)) {
		parts = append(parts, fmt.Sprintf("%s=%v", k, a[k]))
	}
	return strings.Join(parts, ", ")
}

// WriteText writes the trace as corpsim trace --case prints it: a summary,
// the case's attributes (and, marked, its hidden facts), each step with
// who claimed, worked, asked, answered, approved and was refused, its
// waits, and its timeline.
func (c *CaseTrace) WriteText(w io.Writer) {
	fmt.Fprintf(w, "case %s (template %s, queue %s): %s\n", c.Case, c.Template, c.Queue, c.Outcome)
	fmt.Fprintf(w, "%s.\n\n", c.Summary)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "title\t%s\n", c.Title)
	by := "arrival " + c.Arrival
	if c.OpenedBy != "" {
		by = "member " + c.OpenedBy
	}
	fmt.Fprintf(tw, "opened\t%s by %s%s\n", short(c.Opened), by, seqNote(c.Opened.Seq))
	fmt.Fprintf(tw, "priority\t%d, value %g\n", c.Priority, c.Value)
	fmt.Fprintf(tw, "attributes\t%s\n", attrsText(c.Attributes))
	if len(c.HiddenFacts) > 0 {
		fmt.Fprintf(tw, "hidden facts\t%s  (ground truth drawn for the case; no member sees it)\n", attrsText(c.HiddenFacts))
	}
	if len(c.Skipped) > 0 {
		fmt.Fprintf(tw, "skipped\t%s (their condition did not hold)\n", strings.Join(c.Skipped, ", "))
	}
	if c.Due != nil {
		fmt.Fprintf(tw, "SLA\t%s\n", short(*c.Due))
	}
	if c.Deadline != nil {
		fmt.Fprintf(tw, "deadline\t%s\n", short(*c.Deadline))
	}
	if c.Breached != nil {
		fmt.Fprintf(tw, "SLA breached\t%s%s\n", short(*c.Breached), seqNote(c.Breached.Seq))
	}
	if c.Done != nil {
		fmt.Fprintf(tw, "done\t%s, lead time %s%s\n", short(*c.Done), c.LeadTime.Text, seqNote(c.Done.Seq))
	} else {
		fmt.Fprintf(tw, "open\tat the end, for %s\n", c.LeadTime.Text)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nSTEPS\n")
	for _, st := range c.Steps {
		who := "role " + st.Role
		if st.NPC != "" {
			who = "NPC " + st.NPC
		}
		fmt.Fprintf(w, "  %s (%s, %s): %s\n", st.Task, st.Title, who, st.Status)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintf(tw, "    ready\t%s\n", shortPtr(st.Ready, "never"))
		for _, a := range st.Asks {
			fmt.Fprintf(tw, "    asked\t%s by %s: %q%s\n", short(a.At), a.From, a.Text, seqNote(a.At.Seq))
		}
		for _, a := range st.Answers {
			fmt.Fprintf(tw, "    answered\t%s by %s to %s: %q%s\n", short(a.At), a.From, a.To, a.Text, seqNote(a.At.Seq))
		}
		for _, h := range st.Holds {
			fmt.Fprintf(tw, "    held by %s\t%s → %s (%s, %s)\n", h.Member, short(h.From), shortPtr(h.To, "the end"), h.End, h.Held.Text)
		}
		for _, a := range st.Approvals {
			fmt.Fprintf(tw, "    approval %s\tasked by %s at %s (amount %d): %s\n", a.Request, a.Requester, short(a.Requested), a.Amount, a.Status)
			for _, step := range a.Steps {
				for _, h := range step.Holds {
					fmt.Fprintf(tw, "      step %d (%s)\t%s, %s, %s → %s: %s\n", h.Step+1, h.Role, h.Approver, h.Via, short(h.From), shortPtr(h.To, "the end"), h.End)
				}
			}
		}
		for _, r := range st.Refusals {
			rule := r.Kind
			if r.Rule != "" {
				rule += " " + r.Rule
			}
			fmt.Fprintf(tw, "    refused\t%s %s's %s (%s): %s%s\n", short(r.At), r.Member, r.Action, rule, r.Reason, seqNote(r.At.Seq))
		}
		if st.Done != nil {
			fmt.Fprintf(tw, "    done\t%s by %s%s\n", short(*st.Done), st.DoneBy, seqNote(st.Done.Seq))
		}
		if st.Unverified != "" {
			fmt.Fprintf(tw, "    unverified\t%s\n", st.Unverified)
		}
		tw.Flush()
		st.Outcome.writeText(w)
	}
	if len(c.AtSLA) > 0 {
		fmt.Fprintf(w, "\nWHEN ITS SLA PASSED\n")
		for _, s := range c.AtSLA {
			fmt.Fprintf(w, "  %s  %s: %s\n", s.Task, s.Kind, s.Text)
		}
	}
	printDelays(w, "WAITED ON (longest first, working time)", c.Waits, true)
	printTimeline(w, "TIMELINE", c.Timeline)
}

// WriteText writes the summary as a few tables: per template, by priority,
// and the late or breached cases with where they waited.
func (c *CaseSummary) WriteText(w io.Writer) {
	fmt.Fprintf(w, "cases: %d opened, %d done, %d within their SLA, %d breached\n\n", c.Cases, c.Done, c.InSLA, c.Breached)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TEMPLATE\tCASES\tDONE\tIN SLA\tBREACHED\tOPEN\tLEAD TIME MEAN\tP90")
	for _, t := range c.Templates {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\n", t.Template, t.Cases, t.Done, t.InSLA, t.Breached, t.Open, t.Mean.Text, t.P90.Text)
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PRIORITY\tCASES\tDONE\tIN SLA\tBREACHED\tOPEN")
	for _, p := range c.ByPriority {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%d (%.0f%%)\t%d\t%d\n", p.Priority, p.Cases, p.Done, p.InSLA, 100*p.Share, p.Breached, p.Open)
	}
	tw.Flush()
	for _, l := range c.Late {
		fmt.Fprintf(w, "\ncase %s (%s, priority %d): %s, %s past its SLA\n", l.Case, l.Template, l.Priority, l.Outcome, l.Over.Text)
		for _, s := range l.AtSLA {
			fmt.Fprintf(w, "  when its SLA passed: %s %s: %s\n", s.Task, s.Kind, s.Text)
		}
		for _, d := range l.Waits {
			fmt.Fprintf(w, "  %s  %s %s: %s\n", d.Waited.Text, d.Task, d.Kind, d.Text)
		}
		if l.WaitsOmitted > 0 {
			fmt.Fprintf(w, "  and %s\n", Plural(l.WaitsOmitted, "shorter wait"))
		}
	}
	if c.LateOmitted > 0 {
		fmt.Fprintf(w, "\nand %s not shown\n", Plural(c.LateOmitted, "more late case"))
	}
}
