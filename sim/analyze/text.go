package analyze

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/corpsim/corpsim/events"
)

// This file renders results as text for people (corpsim trace and diff);
// their JSON is the structs' own.

// short formats an RFC 3339 stamp for a timeline: "Mon 2026-01-05 09:00".
func short(st Stamp) string { return st.Human() }

func shortWall(wall string) string { return Stamp{Wall: wall}.Human() }

func shortPtr(st *Stamp, otherwise string) string {
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

func printTimeline(w io.Writer, title string, tl []Entry) {
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

func printChain(w io.Writer, title string, chain []Link) {
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
		} else {
			fmt.Fprintf(w, "%s#%d %s %s: %s\n", arrow, l.Seq, short(l.Stamp), l.Type, l.Text)
		}
		if l.Note != "" {
			fmt.Fprintf(w, "      (%s)\n", l.Note)
		}
	}
}

func printDelays(w io.Writer, title string, ds []Delay, withTask bool) {
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

// WriteText writes the trace as corpsim trace --task prints it: a summary,
// the task's dependencies, holds and effort, its waits, the Cause chain of
// its completion and its timeline.
func (t *TaskTrace) WriteText(w io.Writer) {
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
	fmt.Fprintf(tw, "effort\t%s spent of %s, in %s\n", t.Spent.Text, t.Effort.Text, Plural(t.Stints, "stint"))
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

// WriteText writes the trace as corpsim trace --member prints it.
func (m *MemberTrace) WriteText(w io.Writer) {
	kind := ""
	if m.NPC {
		kind = ", simulated colleague"
	}
	fmt.Fprintf(w, "member %s (%s, team %s%s)\n", m.Member, m.Role, m.Team, kind)
	fmt.Fprintf(w, "held %s; %s; others waited %s on its approvals; %s; %s; %s\n",
		Plural(len(m.Holds), "task"), Plural(len(m.Leaves), "leave"), m.ApprovalWait.Text,
		Plural(countAll(m.Rejections), "refused action"), Plural(m.Timeouts, "timeout"), Plural(m.TurnErrors, "failed turn"))
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

func countAll(rs []RuleCount) int {
	n := 0
	for _, r := range rs {
		n += r.Count
	}
	return n
}

func printApprovalHolds(w io.Writer, title string, hs []ApprovalHold, approving bool) {
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

// WriteText writes the trace as corpsim trace --goal prints it.
func (g *GoalTrace) WriteText(w io.Writer) {
	fmt.Fprintf(w, "project %s (team %s, queue %s): %d/%d done, %d on time, bonus %s\n", g.Project, g.Team, g.Queue, g.Done, len(g.Tasks), g.OnTime, yesNo(g.Bonus))
	fmt.Fprintf(w, "started %s%s, deadline %s\n\n", short(g.Started), seqNote(g.Started.Seq), shortPtr(g.Deadline, "none"))
	rows := func(title string, rs []TaskRow) {
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

// maxOutcomeRows bounds the tasks diff lists in its human output.
const maxOutcomeRows = 20

// WriteText writes the comparison as corpsim diff prints it: both
// sessions, the first divergence and each side's figures.
func (d *Difference) WriteText(w io.Writer) {
	A, B := d.Sides[0], d.Sides[1]
	for _, side := range []struct {
		name string
		s    Side
	}{{"A", A}, {"B", B}} {
		s := side.s
		fmt.Fprintf(w, "%s  %s  (%s, seed %d, %s", side.name, s.Session, s.World, s.Seed, Plural(s.Events, "event"))
		if len(s.Agents) > 0 {
			fmt.Fprintf(w, ", agents %s", AgentSummary(s.Agents))
		}
		if s.Parent != "" {
			fmt.Fprintf(w, ", a fork of %s at #%d", s.Parent, s.ForkSeq)
		}
		fmt.Fprintln(w, ")")
	}
	if A.World != B.World {
		fmt.Fprintf(w, "the sessions are of different worlds (%s and %s): they diverge from their first event, and only their figures compare\n", A.World, B.World)
	}
	if !d.Diverged {
		fmt.Fprintf(w, "no divergence: both logs hold the same %d events", A.Events)
		if d.IDsFrom != 0 {
			fmt.Fprintf(w, " (event IDs differ from seq %d: another seed)", d.IDsFrom)
		}
		fmt.Fprintln(w)
		return
	}
	verb := "differ"
	if len(d.Fields) == 1 {
		verb = "differs"
	}
	fmt.Fprintf(w, "first divergence at seq %d (%s %s; %s shared before it)\n", d.Seq, strings.Join(d.Fields, ", "), verb, Plural(int(d.Seq-1), "event"))
	eventLine(w, "A", d.A, d.AWall, d.AText)
	eventLine(w, "B", d.B, d.BWall, d.BText)
	if d.A != nil && d.B != nil && d.AText == d.BText {
		// The one-line summaries are alike: name what differs.
		if keys := payloadKeysApart(d.A.Payload, d.B.Payload); len(keys) > 0 {
			fmt.Fprintf(w, "  their payloads differ in %s\n", strings.Join(keys, ", "))
		}
	}
	if d.IDsFrom != 0 && d.IDsFrom < d.Seq {
		fmt.Fprintf(w, "event IDs differ from seq %d (another seed), while the events stay the same until seq %d\n", d.IDsFrom, d.Seq)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\tA\tB")
	row := func(name, f string, x, y any) { fmt.Fprintf(tw, "%s\t"+f+"\t"+f+"\n", name, x, y) }
	of := func(name string, a, an, b, bn int) {
		row(name, "%s", fmt.Sprintf("%d/%d", a, an), fmt.Sprintf("%d/%d", b, bn))
	}
	row("team score", "%.2f", A.TeamScore, B.TeamScore)
	row("delivered", "%.2f", A.Delivered, B.Delivered)
	row("penalties", "%.2f", A.Penalties, B.Penalties)
	if A.Tasks+B.Tasks > 0 {
		of("tasks done", A.TasksDone, A.Tasks, B.TasksDone, B.Tasks)
		row("on time", "%d", A.OnTime, B.OnTime)
	}
	row("late (tasks and tickets)", "%d", A.Late, B.Late)
	if A.Tickets+B.Tickets > 0 {
		of("tickets resolved", A.Resolved, A.Tickets, B.Resolved, B.Tickets)
		row("within SLA", "%d", A.InSLA, B.InSLA)
		row("SLA breaches", "%d", A.Breaches, B.Breaches)
	}
	if A.Cases+B.Cases > 0 {
		of("cases done", A.CasesDone, A.Cases, B.CasesDone, B.Cases)
		row("cases within SLA", "%d", A.CasesInSLA, B.CasesInSLA)
		row("case SLA breaches", "%d", A.CaseBreaches, B.CaseBreaches)
	}
	if A.OutcomeMax+B.OutcomeMax > 0 {
		row("outcome score", "%s", fmt.Sprintf("%.2f/%.0f", A.Outcome, A.OutcomeMax), fmt.Sprintf("%.2f/%.0f", B.Outcome, B.OutcomeMax))
		row("wrong outcomes", "%d", A.WrongOutcomes, B.WrongOutcomes)
		row("collateral writes", "%d", A.Collateral, B.Collateral)
	}
	row("violations", "%d", A.Violations, B.Violations)
	row("rejected actions", "%d", A.Rejections, B.Rejections)
	row("timeouts", "%d", A.Timeouts, B.Timeouts)
	row("failed turns", "%d", A.TurnErrors, B.TurnErrors)
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

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// Plural is "1 task", "2 tasks", "0 tasks": n with noun, in the plural
// unless n is 1 (the nouns corpsim prints take an s).
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// AgentSummary describes a session's agents (member -> kind) in a few
// words: "greedy×5, remote×1", kinds by name.
func AgentSummary(agents map[string]string) string {
	count := map[string]int{}
	for _, kind := range agents { // order: counted, then sorted below
		count[kind]++
	}
	parts := make([]string, 0, len(count))
	for _, kind := range slices.Sorted(maps.Keys(count)) {
		parts = append(parts, fmt.Sprintf("%s×%d", kind, count[kind]))
	}
	return strings.Join(parts, ", ")
}

// payloadKeysApart lists, sorted, the top-level keys of two JSON objects
// whose values differ (one missing counts), each with both values from a
// little before where they first differ; nil when either is no object.
func payloadKeysApart(a, b []byte) []string {
	var ma, mb map[string]json.RawMessage
	if json.Unmarshal(a, &ma) != nil || json.Unmarshal(b, &mb) != nil {
		return nil
	}
	var keys []string
	for k, va := range ma { // order: sorted below
		vb, ok := mb[k]
		switch {
		case !ok:
			keys = append(keys, fmt.Sprintf("%s (%s, absent)", k, around(va, 0)))
		case !bytes.Equal(va, vb):
			at := 0
			for at < len(va) && at < len(vb) && va[at] == vb[at] {
				at++
			}
			keys = append(keys, fmt.Sprintf("%s (%s, %s)", k, around(va, at), around(vb, at)))
		}
	}
	for k, vb := range mb { // order: sorted below
		if _, ok := ma[k]; !ok {
			keys = append(keys, fmt.Sprintf("%s (absent, %s)", k, around(vb, 0)))
		}
	}
	slices.Sort(keys)
	return keys
}

// around is v from a little before byte at to a little after, with "…"
// where it was cut, never inside a character.
func around(v json.RawMessage, at int) string {
	from, to := max(at-20, 0), min(at+40, len(v))
	for from > 0 && !utf8.RuneStart(v[from]) {
		from--
	}
	for to < len(v) && !utf8.RuneStart(v[to]) {
		to++
	}
	s := string(v[from:to])
	if from > 0 {
		s = "…" + s
	}
	if to < len(v) {
		s += "…"
	}
	return s
}
