package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"
	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim/driver"
	"github.com/corpsim/corpsim/sim/server"
)

// openExisting opens the log in data for a command that reads sessions:
// unlike OpenLog it does not create a missing folder.
func (a *app) openExisting(data string) (events.Log, error) {
	if _, err := os.Stat(data); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("no data folder %s", data)
	}
	return OpenLog(data, false, a.logger)
}

// openSession opens the log in data and reads session id's metadata.
func (a *app) openSession(ctx context.Context, data, id string) (events.Log, events.SessionMeta, error) {
	if _, err := os.Stat(data); errors.Is(err, fs.ErrNotExist) {
		return nil, events.SessionMeta{}, fmt.Errorf("no session %s in %s (no such folder)", id, data)
	}
	log, err := OpenLog(data, false, a.logger)
	if err != nil {
		return nil, events.SessionMeta{}, err
	}
	meta, err := log.Session(ctx, id)
	if err != nil {
		log.Close()
		if errors.Is(err, events.ErrNoSession) || errors.Is(err, events.ErrBadSession) {
			return nil, meta, fmt.Errorf("no session %s in %s", id, data)
		}
		return nil, meta, err
	}
	return log, meta, nil
}

func (a *app) sessionsCmd() *cobra.Command {
	var data, world, status, natsURL, token string
	var asJSON bool
	c := &cobra.Command{
		Use:   "sessions",
		Short: "List the sessions in the data folder (or, with --nats, of a cluster of serve --worker processes)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if status != "" && !events.Status(status).Valid() {
				return usagef("--status %q: want running, finished, interrupted or failed", status)
			}
			if natsURL != "" {
				return a.clusterSessions(cmd.Context(), natsURL, token, world, status, asJSON)
			}
			log, err := a.openExisting(data)
			if err != nil {
				return err
			}
			defer log.Close()
			metas, err := log.Sessions(cmd.Context())
			if err != nil {
				return err
			}
			out := metas[:0]
			for _, m := range metas {
				if (world == "" || m.World == world) && (status == "" || string(m.Status) == status) {
					out = append(out, m)
				}
			}
			sort.SliceStable(out, func(i, j int) bool { return out[i].Created < out[j].Created })
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				for _, m := range out {
					if err := enc.Encode(m); err != nil {
						return err
					}
				}
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "SESSION\tWORLD\tSEED\tSTATUS\tEVENTS\tCREATED\tPARENT")
			for _, m := range out {
				parent := ""
				if m.Parent != "" {
					parent = fmt.Sprintf("%s@%d", m.Parent, m.ForkSeq)
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\t%s\n", m.ID, m.World, m.Seed, m.Status, m.LastSeq, m.Created, parent)
			}
			return tw.Flush()
		},
	}
	f := c.Flags()
	f.StringVar(&data, "data", DefaultData, "data folder of the event log")
	f.StringVar(&world, "world", "", "only sessions of this world")
	f.StringVar(&status, "status", "", "only sessions with this status: running, finished, interrupted, failed")
	f.BoolVar(&asJSON, "json", false, "print JSON Lines")
	f.StringVar(&natsURL, "nats", "", "list the sessions of the cluster at this NATS URL (its JetStream metadata) instead of a data folder")
	f.StringVar(&token, "token", "", "token to present to the NATS server (with --nats)")
	return c
}

// clusterSessions lists the sessions the cluster's metadata bucket and log
// stream know, with the worker holding each running session's lease.
func (a *app) clusterSessions(ctx context.Context, url, token, world, status string, asJSON bool) error {
	opts := []nats.Option{nats.Name("corpsim sessions")}
	if token != "" {
		opts = append(opts, nats.Token(token))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	all, err := server.ClusterSessions(ctx, js)
	if err != nil {
		return err
	}
	out := all[:0]
	for _, s := range all {
		if (world == "" || s.World == world) && (status == "" || string(s.Status) == status) {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created < out[j].Created })
	if asJSON {
		enc := json.NewEncoder(a.stdout)
		for _, s := range out {
			if err := enc.Encode(s); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tWORLD\tSEED\tSTATUS\tEVENTS\tWORKER\tCREATED")
	for _, s := range out {
		st, worker := string(s.Status), s.Worker
		if st == "" {
			st = "?"
		}
		if s.Status == events.StatusRunning && s.Leased == "" {
			worker = "(none: awaiting adoption)"
		} else if s.Leased != "" {
			worker = s.Leased
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\t%s\n", s.ID, s.World, s.Seed, st, s.Events, worker, s.Created)
	}
	return tw.Flush()
}

func (a *app) resumeCmd() *cobra.Command {
	o := RunOptions{}
	var asJSON bool
	c := &cobra.Command{
		Use:   "resume SESSION",
		Short: "Continue an interrupted session from its last durable event",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.prepare(&o, asJSON)
			ctx := cmd.Context()
			log, meta, err := a.openSession(ctx, o.Data, args[0])
			if err != nil {
				return err
			}
			defer log.Close()
			if meta.Status == events.StatusFinished {
				return fmt.Errorf("session %s already finished (%d events)", meta.ID, meta.LastSeq)
			}
			e, n, err := driver.Load(ctx, log, meta.ID, 0, meta.Seed)
			if err != nil {
				return err
			}
			a.logger.Info("resuming", "session", meta.ID, "at_seq", e.State().LastSeq, "replayed", n)
			if o.Agents != "" {
				if meta.Agents, err = ParseAgents(o.Agents, e.State().World); err != nil {
					return err
				}
			}
			res, err := play(ctx, o, log, meta, e, false)
			if err != nil {
				return err
			}
			return a.report(res, asJSON)
		},
	}
	c.Flags().StringVar(&o.Data, "data", DefaultData, "data folder of the event log")
	c.Flags().StringVar(&o.Agents, "agents", "", "agents for the seats from here on (default: the session's)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	playFlags(c, &o)
	return c
}

func (a *app) forkCmd(reset bool) *cobra.Command {
	o := RunOptions{}
	var at uint64
	var asJSON, createOnly bool
	use, short := "fork SESSION --at SEQ", "Make a new session sharing SESSION's events up to SEQ (no copy), and continue it"
	if reset {
		use, short = "reset SESSION", "Start a fresh episode of SESSION's world and seed in a new session"
	}
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.prepare(&o, asJSON)
			ctx := cmd.Context()
			log, parent, err := a.openSession(ctx, o.Data, args[0])
			if err != nil {
				return err
			}
			defer log.Close()
			if reset {
				at = 1
			}
			// The metadata's LastSeq is only updated when a run stops; the log knows.
			last, err := log.LastSeq(ctx, parent.ID)
			if err != nil {
				return err
			}
			if at == 0 || at > last {
				if at > last {
					return usagef("--at %d is beyond the end of session %s, which has %d events", at, parent.ID, last)
				}
				return usagef("fork needs --at SEQ (1 to %d)", last)
			}
			seed := parent.Seed
			if cmd.Flags().Changed("seed") {
				seed = o.Seed
			}
			origin, err := driver.ReadOrigin(ctx, log, parent.ID)
			if err != nil {
				return err
			}
			agents := parent.Agents
			if o.Agents != "" {
				if agents, err = ParseAgents(o.Agents, origin.World); err != nil {
					return err
				}
			}
			meta := events.SessionMeta{ID: ulid.Make().String(), World: parent.World, WorldHash: parent.WorldHash, Seed: seed,
				Agents: agents, Created: time.Now().UTC().Format(time.RFC3339), Parent: parent.ID, ForkSeq: at,
				Status: events.StatusInterrupted, LastSeq: at}
			start := time.Now()
			if err := log.CreateSession(ctx, meta); err != nil {
				return err
			}
			a.logger.Info("forked", "session", meta.ID, "parent", parent.ID, "at", at, "took", time.Since(start))
			if createOnly {
				if asJSON {
					return json.NewEncoder(a.stdout).Encode(meta)
				}
				fmt.Fprintf(a.stdout, "session %s: %s of %s at seq %d (seed %d)\n", meta.ID, map[bool]string{true: "reset", false: "fork"}[reset], parent.ID, at, seed)
				return nil
			}
			e, _, err := driver.Load(ctx, log, meta.ID, 0, seed)
			if err != nil {
				return err
			}
			res, err := play(ctx, o, log, meta, e, false)
			if err != nil {
				return err
			}
			return a.report(res, asJSON)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Data, "data", DefaultData, "data folder of the event log")
	if !reset {
		f.Uint64Var(&at, "at", 0, "the last event of the parent the fork shares")
	}
	f.Uint64Var(&o.Seed, "seed", 0, "seed for what follows (default: the parent's)")
	f.StringVar(&o.Agents, "agents", "", "agents for the seats (default: the parent's)")
	f.BoolVar(&createOnly, "create-only", false, "create the session without running it (resume runs it later)")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	playFlags(c, &o)
	return c
}

func (a *app) verifyCmd() *cobra.Command {
	var data string
	var asJSON bool
	c := &cobra.Command{
		Use:   "verify SESSION",
		Short: "Check every stored event's checksum and replay the session against its checkpoints and final hash",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			log, meta, err := a.openSession(ctx, data, args[0])
			if err != nil {
				return err
			}
			defer log.Close()
			res := driver.Verify(ctx, log, meta)
			if asJSON {
				if err := json.NewEncoder(a.stdout).Encode(res); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(a.stdout, "session %s: %d events, %d checkpoints", meta.ID, res.Events, res.Checkpoints)
				if res.OK {
					fmt.Fprintf(a.stdout, ": ok (state hash %s)\n", res.StateHash)
				} else {
					fmt.Fprintf(a.stdout, ": %d problem(s)\n  %s\n", len(res.Problems), strings.Join(res.Problems, "\n  "))
				}
			}
			if !res.OK {
				return withCode(ExitMismatch, fmt.Errorf("session %s does not verify", meta.ID))
			}
			return nil
		},
	}
	c.Flags().StringVar(&data, "data", DefaultData, "data folder of the event log")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return c
}
