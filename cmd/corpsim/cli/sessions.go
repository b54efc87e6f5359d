package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/agents/wire"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/analyze"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/sim/server"
	"github.com/corpsim/corpsim/worlds"
)

func (a *cmdline) sessionsCmd() *cobra.Command {
	var data, world, status, natsURL, token string
	var asJSON bool
	c := &cobra.Command{
		Use:   "sessions",
		Short: "List the sessions in the data folder (or, with --nats, of the corpsim serving there: a cluster of serve --worker processes, a serve, a run --listen)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case status == wire.StatusPaused && natsURL == "":
				return usagef("sessions --status paused: only the server running a session knows it paused (the log records it running); add --nats URL")
			case status != "" && status != wire.StatusPaused && !events.Status(status).Valid():
				return usagef("sessions --status %q: want running, paused (with --nats), finished, interrupted or failed", status)
			}
			if natsURL != "" {
				if token == "" {
					token = app.ReadOperatorToken(data) // a serve or run --listen on this data folder
				}
				return a.clusterSessions(cmd, natsURL, token, world, status, asJSON)
			}
			log, err := app.OpenExisting(cmd.Context(), data, a.logger)
			if err != nil {
				return err
			}
			defer log.Close()
			metas, damaged := log.Sessions(cmd.Context())
			if damaged != nil && !errors.As(damaged, new(*events.DamagedError)) {
				return damaged
			}
			// The sessions whose metadata reads are listed; the damaged
			// ones are named after them, and the command fails (exit 3).
			ofWorld, err := worldFilter(world)
			if err != nil {
				return err
			}
			out := metas[:0]
			for _, m := range metas {
				if ofWorld(m.World, m.WorldHash) && (status == "" || string(m.Status) == status) {
					out = append(out, m)
				}
			}
			sort.SliceStable(out, func(i, j int) bool { return out[i].Created < out[j].Created })
			if asJSON {
				if err := jsonLines(a, out); err != nil {
					return err
				}
				return damaged
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "SESSION\tWORLD\tSEED\tAGENTS\tSTATUS\tEVENTS\tCREATED\tPARENT")
			for _, m := range out {
				parent := ""
				if m.Parent != "" {
					parent = fmt.Sprintf("%s@%d", m.Parent, m.ForkSeq)
				}
				agents := strings.ReplaceAll(analyze.AgentSummary(m.Agents), ", ", ",") // one field per column
				if agents == "" {
					agents = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%d\t%s\t%s\n", m.ID, m.World, m.Seed, agents, m.Status, m.LastSeq, m.Created, parent)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			return damaged
		},
	}
	f := c.Flags()
	f.StringVar(&data, "data", DefaultData, "data folder of the event log")
	f.StringVar(&world, "world", "", "only sessions of this world: a shipped world's name, a world's name, or a world file (matched by its name and its content)")
	f.StringVar(&status, "status", "", "only sessions with this status: running, paused (with --nats: an operator paused it), finished, interrupted, failed")
	f.BoolVar(&asJSON, "json", false, "print JSON Lines")
	f.StringVar(&natsURL, "nats", "", "list the sessions of the corpsim at this NATS URL instead of a data folder: a cluster's JetStream metadata, or a serve's (or run --listen's) own list")
	f.StringVar(&token, "token", "", "token to present to the NATS server (with --nats; default: the --data folder's operator.token, if any)")
	return c
}

// worldFilter matches sessions to --world as the other commands take it:
// "" matches all; a world's name matches sessions of that name; a world
// file matches sessions of the world its name declares and sessions run
// from exactly that file (by its hash), whatever name they recorded.
func worldFilter(world string) (func(name, hash string) bool, error) {
	if world == "" {
		return func(string, string) bool { return true }, nil
	}
	names := map[string]bool{world: true}
	hash := ""
	if src, err := os.ReadFile(world); err == nil {
		sum := sha256.Sum256(src)
		hash = hex.EncodeToString(sum[:])
		if w, err := worlds.Load(world, src); err == nil {
			names[w.Name] = true
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("--world %s: %w", world, err)
	}
	return func(name, h string) bool { return names[name] || (hash != "" && h == hash) }, nil
}

// jsonLines prints one JSON document per line.
func jsonLines[T any](a *cmdline, vs []T) error {
	enc := json.NewEncoder(a.stdout)
	for _, v := range vs {
		if err := enc.Encode(v); err != nil {
			return err
		}
	}
	return nil
}

// clusterSessions lists the sessions the cluster's metadata bucket and log
// stream know, with the worker holding each running session's lease.
func (a *cmdline) clusterSessions(cmd *cobra.Command, url, token, world, status string, asJSON bool) error {
	all, damaged := server.ListCluster(cmd.Context(), url, token)
	if damaged != nil && all == nil {
		return damaged
	}
	// A server whose store could not read some sessions' metadata lists
	// the others: they are printed, then the damage (exit 3).
	if status == wire.StatusPaused && len(all) > 0 && !all[0].Alone {
		return usagef("sessions --status paused: a cluster of workers lists its paused sessions running (each worker knows only its own); ask a session's status with its control subject")
	}
	out := all[:0]
	for _, s := range all {
		if (world == "" || s.World == world) && (status == "" || string(s.Status) == status) {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Created < out[j].Created })
	if asJSON {
		if err := jsonLines(a, out); err != nil {
			return err
		}
		return damaged
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tWORLD\tSEED\tSTATUS\tEVENTS\tCHECKPOINT\tWORKER\tCREATED")
	for _, s := range out {
		st, worker := string(s.Status), s.Worker
		if st == "" {
			st = "?"
		}
		switch {
		case s.Alone:
			worker = "-" // no cluster
		case s.Status == events.StatusRunning && s.Leased == "":
			worker = "(none: awaiting adoption)"
		case s.Leased != "":
			worker = s.Leased
		}
		cp := "-"
		if s.Checkpoint > 0 {
			cp = strconv.FormatUint(s.Checkpoint, 10)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\t%s\t%s\n", s.ID, s.World, s.Seed, st, s.Events, cp, worker, s.Created)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return damaged
}

func (a *cmdline) resumeCmd() *cobra.Command {
	o := app.RunOptions{}
	var asJSON bool
	var lf llmFlags
	c := &cobra.Command{
		Use:   "resume SESSION",
		Short: "Continue an interrupted session from its last durable event",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.prepare(&o, asJSON)
			sessionsBudget(cmd, &o)
			var err error
			if o.LLM, err = lf.agent(cmd, o.Agents, a); err != nil {
				return err
			}
			res, err := app.Resume(cmd.Context(), o, args[0])
			if err != nil {
				return err
			}
			return a.played(res, asJSON)
		},
	}
	c.Flags().StringVar(&o.Data, "data", DefaultData, "data folder of the event log")
	c.Flags().StringVar(&o.Agents, "agents", "", "agents for the seats from here on (default: the session's)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	worldLimitFlags(c, &o.WorldLimits)
	playFlags(c, &o)
	lf.add(c)
	return c
}

// sessionsBudget leaves a resume's or fork's budget of events to the
// session's recorded one (its parent's), unless --max-events is given.
func sessionsBudget(cmd *cobra.Command, o *app.RunOptions) {
	switch {
	case !cmd.Flags().Changed("max-events"):
		o.MaxEvents = 0
	case o.MaxEvents == 0:
		o.MaxEvents = sim.DefaultMaxEvents // given as 0: the default, as run takes it
	}
}

func (a *cmdline) forkCmd(reset bool) *cobra.Command {
	o := app.RunOptions{}
	fo := app.ForkOptions{Reset: reset}
	var asJSON bool
	var lf llmFlags
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
			fo.Parent, fo.Seed, fo.SeedSet = args[0], o.Seed, cmd.Flags().Changed("seed")
			sessionsBudget(cmd, &o)
			var err error
			if o.LLM, err = lf.agent(cmd, o.Agents, a); err != nil {
				return err
			}
			meta, res, err := app.Fork(cmd.Context(), o, fo)
			if err != nil {
				return err
			}
			if res != nil {
				return a.played(res, asJSON)
			}
			if asJSON {
				// The stored metadata, named by "session" as a played
				// fork's result is (and by its "id" as sessions --json).
				return json.NewEncoder(a.stdout).Encode(struct {
					Session string `json:"session"`
					events.SessionMeta
				}{meta.ID, meta})
			}
			fmt.Fprintf(a.stdout, "session %s: %s of %s at seq %d (seed %d)\n", meta.ID, map[bool]string{true: "reset", false: "fork"}[reset], meta.Parent, meta.ForkSeq, meta.Seed)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&o.Data, "data", DefaultData, "data folder of the event log")
	if !reset {
		f.Uint64Var(&fo.At, "at", 0, "the last event of the parent the fork shares")
	}
	f.Uint64Var(&o.Seed, "seed", 0, "seed for what follows (default: the parent's)")
	f.StringVar(&o.Agents, "agents", "", "agents for the seats (default: the parent's)")
	f.BoolVar(&fo.CreateOnly, "create-only", false, "create the session without running it (resume runs it later)")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	worldLimitFlags(c, &o.WorldLimits)
	playFlags(c, &o)
	lf.add(c)
	return c
}

func (a *cmdline) verifyCmd() *cobra.Command {
	var data string
	var asJSON bool
	c := &cobra.Command{
		Use:   "verify SESSION",
		Short: "Check every stored event's checksum and replay the session against its checkpoints and final hash",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, meta, err := app.Verify(cmd.Context(), data, args[0], a.logger)
			if err != nil {
				return err
			}
			if asJSON {
				if err := json.NewEncoder(a.stdout).Encode(res); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(a.stdout, "session %s: %d events, %d checkpoints", meta.ID, res.Events, res.Checkpoints)
				if res.OK {
					fmt.Fprintf(a.stdout, ": ok (state hash %s)\n", res.StateHash)
				} else {
					fmt.Fprintf(a.stdout, ": %s\n  %s\n", analyze.Plural(len(res.Problems), "problem"), strings.Join(res.Problems, "\n  "))
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

func (a *cmdline) deleteCmd() *cobra.Command {
	var data string
	var asJSON, forks bool
	c := &cobra.Command{
		Use:   "delete SESSION...",
		Short: "Delete sessions from the data folder: their events, checkpoints and metadata, giving the space back",
		Long: `Delete sessions from the data folder: their events, checkpoints and metadata, in one
durable write each, then compact their keys so that the space returns at once. Forks
(they read their first events from their session) go before their session; a session with
a fork not named beside it is refused unless --forks, which deletes every fork under it
too. The data folder must not be in use (a serve, a run); a
serve's record of the sessions it was running (serve-state.json) forgets those deleted.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			done, err := app.Delete(cmd.Context(), data, args, forks, a.logger)
			gone := make([]string, len(done))
			for i, d := range done {
				gone[i] = d.Session
			}
			if ferr := server.ForgetSessions(data, gone); ferr != nil && err == nil {
				// A serve started here later would try to continue them.
				err = fmt.Errorf("deleted, but not taken out of %s: %w", server.StateFileName, ferr)
			}
			if asJSON {
				if done == nil {
					done = []app.Deleted{}
				}
				if jerr := json.NewEncoder(a.stdout).Encode(map[string]any{"deleted": done}); jerr != nil {
					return jerr
				}
			} else {
				for _, d := range done {
					fmt.Fprintf(a.stdout, "deleted %s (%s)\n", d.Session, analyze.Plural(d.Events, "event"))
				}
			}
			return err
		},
	}
	c.Flags().StringVar(&data, "data", DefaultData, "data folder of the event log")
	c.Flags().BoolVar(&forks, "forks", false, "delete the sessions' forks too (and theirs)")
	c.Flags().BoolVar(&asJSON, "json", false, `print {"deleted": [{"session", "events"}]} as JSON`)
	return c
}
