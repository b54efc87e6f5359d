// Package report turns a session's event log into one self-contained HTML
// page for analysts: a scorecard header (with a fork's parent, fork point
// and own seed), a "why" section — where the lost value went (corpsim
// diagnose's causes), and why each failed project and late task (from
// the session's analysis, package analyze, which it is given as an
// Explainer), SVG charts (a Gantt chart of each member's work, claims and
// leave; the task DAG with the critical path, done-late and
// open-past-deadline tasks; open items per queue, cumulative reward and
// approvals waiting by approver over time; outages and leaves marked on
// every time chart), tables of members, approvers and the SLA by priority,
// queue and arrival stream, and the refused actions grouped by rule with
// races for the same item apart from policy violations. It also holds the
// small SVG chart code that corpsim sweep draws its completion-against-load
// plot with. The
// page and the charts are written by html/template, which escapes every
// name and label by its context.
//
// The package is part of the pure core: it performs no I/O of its own
// beyond the io.Writer it is given, reads no clock and draws no random
// numbers, so the same events always give the same bytes. The caller reads
// the log and feeds the events in order (without Explain, straight from
// the log; the "why" section then says it has no analysis):
//
//	s, err := analyze.Load(log.Read(ctx, id, 1)) // the analysis trace uses
//	b := report.NewBuilder(s.World, report.Options{Session: id, Explain: s})
//	for _, ev := range s.Events {
//		if err := b.Add(ev); err != nil { return err }
//	}
//	r := b.Report()
//	err := r.WriteHTML(out)
//
// That applies the session twice: once for the analysis, once for the
// report's own state. corpsim report applies it once: the builder rides on
// the analysis's pass (NewBuilderOn and Observe, from analyze.LoadWith's
// Observe), reading the analysis's state as each event is applied, and
// makes the same page.
//
// The report stays bounded however long the session: time series are
// downsampled to a fixed number of buckets (Downsample), Gantt bars closer
// than a pixel are merged, the Gantt chart, the DAG, the why section and the
// tables keep only their most relevant rows, and the interruption bands the
// longest 200, each saying what it left out.
package report
