// Package report turns a session's event log into one self-contained HTML
// page for analysts: a scorecard header, SVG charts (a Gantt chart of each
// member's work, claims and leave; the task DAG with the critical path and
// late tasks; open items per queue, cumulative reward and approvals waiting
// over time) and a table of violations. It also holds the small SVG chart
// code that corpsim sweep draws its completion-against-load plot with. The
// page and the charts are written by html/template, which escapes every
// name and label by its context.
//
// The package is part of the pure core: it performs no I/O of its own
// beyond the io.Writer it is given, reads no clock and draws no random
// numbers, so the same events always give the same bytes. The caller reads
// the log and feeds the events in order:
//
//	b := report.NewBuilder(world, report.Options{Session: id})
//	for ev, err := range log.Read(ctx, id, 1) {
//		if err != nil { return err }
//		if err := b.Add(ev); err != nil { return err }
//	}
//	r := b.Report()
//	err := r.WriteHTML(out)
//
// The report stays bounded however long the session: time series are
// downsampled to a fixed number of buckets (Downsample), Gantt bars closer
// than a pixel are merged, and the Gantt chart, the DAG and the violations
// table keep only their most relevant rows, saying what they left out.
package report
