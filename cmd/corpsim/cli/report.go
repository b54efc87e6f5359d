package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/sim/report"
)

// reportCmd writes a session's HTML report.
func (a *app) reportCmd() *cobra.Command {
	var data, out string
	o := report.Options{}
	c := &cobra.Command{
		Use:   "report SESSION",
		Short: "Write a session's report: one self-contained HTML page with charts",
		Long: `Replay a session's log and write one self-contained HTML page (inline CSS and SVG,
no script, nothing fetched from the network): the scorecard; a Gantt chart of each member's
work, claims and leave; the task DAG with the critical path and late tasks; open items per
queue, cumulative reward and approvals waiting over time; and a table of violations.
Long sessions stay small: time series are downsampled, and the Gantt chart, the DAG and the
table keep their most relevant rows and say what they left out.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return usagef("-o FILE is required (- for stdout)")
			}
			start := time.Now()
			r, err := a.buildReport(cmd.Context(), data, args[0], o)
			if err != nil {
				return err
			}
			if out == "-" {
				w := bufio.NewWriter(a.stdout)
				if err := r.WriteHTML(w); err != nil {
					return err
				}
				return w.Flush()
			}
			n, err := writeFileAtomic(out, r.WriteHTML)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stderr, "wrote %s (%d bytes, %d events) in %s\n", out, n, r.Events, time.Since(start).Round(time.Millisecond))
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&data, "data", DefaultData, "data folder of the event log")
	f.StringVarP(&out, "output", "o", "", "HTML file to write (- for stdout)")
	f.IntVar(&o.MaxGanttRows, "gantt-rows", 30, "members shown in the Gantt chart at most")
	f.IntVar(&o.MaxDAGNodes, "dag-nodes", 60, "tasks shown in the DAG at most")
	f.IntVar(&o.Buckets, "points", 300, "time buckets per series (each keeps its low and high point)")
	return c
}

// buildReport replays a stored session into a report.
func (a *app) buildReport(ctx context.Context, data, session string, o report.Options) (*report.Report, error) {
	log, meta, err := a.openSession(ctx, data, session)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	origin, err := driver.ReadOrigin(ctx, log, session)
	if err != nil {
		return nil, err
	}
	o.Session, o.Agents = meta.ID, meta.Agents
	b := report.NewBuilder(origin.World, o)
	// Borrowed events (Scan): the builder keeps nothing of an event's payload.
	err = log.Scan(ctx, session, 1, func(ev *events.Event) error {
		if err := b.Add(*ev); err != nil {
			return fmt.Errorf("session %s: %w", session, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return b.Report(), nil
}

// writeFileAtomic writes a file through a temporary one in the same folder,
// so a failed write leaves no half file; it returns the bytes written.
func writeFileAtomic(path string, write func(io.Writer) error) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".corpsim-*.tmp")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name())
	cw := &countWriter{w: bufio.NewWriter(tmp)}
	if err := write(cw); err != nil {
		tmp.Close()
		return 0, err
	}
	if err := cw.w.(*bufio.Writer).Flush(); err != nil {
		tmp.Close()
		return 0, err
	}
	if err := tmp.Close(); err != nil {
		return 0, err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return 0, err
	}
	return cw.n, os.Rename(tmp.Name(), path)
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
