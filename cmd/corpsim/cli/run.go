package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/analyze"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/worlds"
)

func (a *cmdline) runCmd() *cobra.Command {
	o := app.RunOptions{}
	var asJSON bool
	var lf llmFlags
	var sf secretFlag
	c := &cobra.Command{
		Use:   "run",
		Short: "Run a world to its horizon and print the scorecard",
		Long: `Run a world to its horizon with built-in agents (in process, or over the embedded
NATS bus with --seats-over-bus), recording every event in the Pebble log under --data,
and print the scorecard.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := explicitLoad(cmd, o.Load); err != nil {
				return err
			}
			a.prepare(&o, asJSON)
			var err error
			if o.Secret, err = sf.read(); err != nil {
				return err
			}
			if o.LLM, err = lf.agent(cmd, o.Agents, a); err != nil {
				return err
			}
			res, err := app.Run(cmd.Context(), o)
			if err != nil {
				return err
			}
			return a.played(res, asJSON)
		},
	}
	f := c.Flags()
	f.StringVar(&o.World, "world", "startup", "shipped world name or world file path")
	f.Uint64Var(&o.Seed, "seed", 1, "root seed of the session")
	f.Float64Var(&o.Load, "load", 1, "scale the world's arrival rates and counts (0.25, 0.5, 1, 2, …; at least 0.001)")
	f.StringVar(&o.Agents, "agents", "greedy", "agents for the seats: one name for all, or e.g. greedy,alice=idle (built in: "+strings.Join(agents.Names(), ", ")+"; llm: a model behind an OpenAI-compatible endpoint, see --llm-model)")
	f.StringVar(&o.Data, "data", DefaultData, "data folder of the event log")
	f.BoolVar(&o.Ephemeral, "ephemeral", false, "keep the log in memory only")
	f.IntVar(&o.KeepEvents, "keep-events", DefaultKeepEvents, "with --ephemeral: the latest events the in-memory log keeps, for the history agents ask for (older ones are dropped, and asking for them is refused by name); 0 keeps every event")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	limitFlags(c, &o.Limits)
	worldLimitFlags(c, &o.WorldLimits)
	playFlags(c, &o)
	sf.add(c)
	lf.add(c)
	return c
}

// limitFlags are the per-session limits of a new session (recorded in its
// session.started, so forks and resumes keep them).
func limitFlags(c *cobra.Command, l *org.Limits) {
	f := c.Flags()
	f.IntVar(&l.Listed, "max-listed", org.DefaultListed, "tasks per list (assigned, available, upcoming) in an observation; the rest are counted")
	f.IntVar(&l.Inbox, "max-inbox", org.DefaultInbox, "messages one observation delivers; the rest wait for the next turns (paged, never dropped)")
	f.IntVar(&l.MessageBytes, "max-message-bytes", org.DefaultMessageBytes, "longest message text an agent may send; longer ones are refused")
}

// worldLimitFlags are the budgets of a world and of what a session of it
// may ask (worlds.Limits), checked before any work; 0 means the default.
func worldLimitFlags(c *cobra.Command, l *worlds.Limits) {
	f := c.Flags()
	name := func(flag string) string { return strings.TrimPrefix(flag, "--") }
	f.IntVar(&l.FileBytes, name(worlds.FlagFileBytes), worlds.DefaultFileBytes, "largest world file in bytes; a larger one is refused before it is read")
	f.IntVar(&l.Depth, name(worlds.FlagDepth), worlds.DefaultDepth, "deepest nesting of a world file (brackets, or indentation / 2), checked before it is parsed")
	f.IntVar(&l.Members, name(worlds.FlagMembers), worlds.DefaultMembers, "most members (seats and NPCs) of a world")
	f.IntVar(&l.Tasks, name(worlds.FlagTasks), worlds.DefaultTasks, "most project tasks of a world")
	f.IntVar(&l.Arrivals, name(worlds.FlagArrivals), worlds.DefaultArrivals, "most tickets a session's arrivals may be expected to bring, at its load")
	f.IntVar(&l.Burst, name(worlds.FlagBurst), worlds.DefaultBurst, "most tickets one arrival process may bring at one simulated instant, at the session's load")
	f.Float64Var(&l.MaxLoad, name(worlds.FlagMaxLoad), worlds.DefaultMaxLoad, "largest load factor a session may run at")
	f.IntVar(&l.Nodes, name(worlds.FlagNodes), worlds.DefaultNodes, "most YAML nodes of a world file read at once (about 1 KB of memory each), checked before it is parsed; a larger file is read a block-style list at a time")
}

// explicitLoad refuses a --load of 0 given on the command line (the
// flag's default is 1; to the use cases a load of 0 means the default).
func explicitLoad(cmd *cobra.Command, load float64) error {
	if cmd.Flags().Changed("load") && load == 0 {
		return usage(worlds.CheckLoad(0, 0))
	}
	return nil
}

// playFlags are the flags of every command that plays a session.
func playFlags(c *cobra.Command, o *app.RunOptions) {
	f := c.Flags()
	f.DurationVar(&o.TurnTimeout, "turn-timeout", 30*time.Second, "wall-clock budget of one agent turn, 0 meaning 30s (the llm agent's and a remote seat's; the other built-in agents decide at once and are not timed)")
	f.StringVar(&o.Listen, "listen", "", "let network clients reach the embedded NATS server at this address (e.g. 127.0.0.1:4222; port 0 takes a free one); written to DATA/bus.url")
	f.IntVar(&o.CheckpointEvery, "checkpoint-every", 0, "take a checkpoint every N events (0: adaptive, at least 1000 events apart, further as the state grows, nearer while agents that remember take turns; none with --ephemeral; negative: never)")
	f.IntVar(&o.MaxEvents, "max-events", sim.DefaultMaxEvents, "events a session may append; once they are spent it ends with reason event_limit (resume, fork and reset keep the session's, recorded in its metadata, unless given)")
	seatsFlag(c, o)
}

// seatsFlag is --seats-over-bus, of every command that plays sessions.
func seatsFlag(c *cobra.Command, o *app.RunOptions) {
	c.Flags().BoolVar(&o.SeatsOverBus, "seats-over-bus", false, "send every turn of the built-in agents over the embedded NATS bus, as JSON (default: in process; the log is the same)")
}

// report prints a run's result.
func (a *cmdline) report(res *app.RunResult, asJSON bool) error {
	if isTerminal(a.stderr) && !asJSON {
		fmt.Fprint(a.stderr, "\r\033[K") // clear the progress line
	}
	if asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	printScorecard(a.stdout, res)
	return nil
}

// played prints the result of a session this command played, and fails
// (exit 1) when the session failed: its agents failed every turn, so its
// score is no result.
func (a *cmdline) played(res *app.RunResult, asJSON bool) error {
	if err := a.report(res, asJSON); err != nil {
		return err
	}
	if err := res.Err(); err != nil {
		return withCode(ExitError, err)
	}
	return nil
}

// prepare sets the logger and, on a terminal, progress output.
func (a *cmdline) prepare(o *app.RunOptions, asJSON bool) {
	o.Logger = a.logger
	if isTerminal(a.stderr) && !asJSON {
		o.Progress = progressPrinter(a.stderr)
	}
}

func progressPrinter(w io.Writer) func(uint64, int64) {
	var last time.Time
	return func(seq uint64, simTime int64) {
		if now := time.Now(); now.Sub(last) > 100*time.Millisecond {
			last = now
			fmt.Fprintf(w, "\r\033[K%s, simulated %s ", analyze.Plural(int(seq), "event"), clock.Duration(simTime).Human())
		}
	}
}

func printScorecard(w io.Writer, r *app.RunResult) {
	s := r.Score
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "session\t%s\n", r.Session)
	fmt.Fprintf(tw, "world\t%s (seed %d%s)\n", r.World, r.Seed, keyedNote(r.Keyed))
	names := map[string]int{}
	for _, n := range r.Agents {
		names[n]++
	}
	var parts []string
	for n, c := range names {
		parts = append(parts, fmt.Sprintf("%s×%d", n, c))
	}
	sort.Strings(parts)
	fmt.Fprintf(tw, "agents\t%s\n", strings.Join(parts, ", "))
	fmt.Fprintf(tw, "ended\t%s at %s\n", r.Ended, r.SimTime)
	if why := sim.ExplainEnd(r.Ended); why != "" && r.Ended != sim.EndComplete {
		fmt.Fprintf(tw, "\t(%s)\n", why)
	}
	fmt.Fprintf(tw, "team score\t%.2f  (delivered %.2f, penalties %.2f, %s)\n", s.TeamScore, s.Delivered, s.Penalties, s.Rubric)
	if s.Tasks > 0 {
		fmt.Fprintf(tw, "tasks done\t%d / %d\n", s.TasksDone, s.Tasks)
		// On time counts project tasks done by their deadline; a world of
		// tickets alone has none (its timeliness is the SLA line below).
		fmt.Fprintf(tw, "on time\t%d of the %s done by their project's deadline\n", s.OnTime, analyze.Plural(s.TasksDone, "task"))
	}
	if s.Tickets > 0 {
		fmt.Fprintf(tw, "tickets\t%d resolved of %d arrived, %d within SLA, %d SLA breaches\n", s.TicketsResolved, s.Tickets, s.TicketsInSLA, s.SLABreaches)
	}
	if s.Cases > 0 {
		fmt.Fprintf(tw, "cases\t%d done of %d opened, %d within SLA\n", s.CasesDone, s.Cases, s.CasesInSLA)
	}
	if len(s.SLAByPriority) > 0 {
		// Breaches of the tickets and cases of each priority; with cases,
		// how many of them were done within their SLA.
		parts := make([]string, len(s.SLAByPriority))
		for i, p := range s.SLAByPriority {
			parts[i] = fmt.Sprintf("priority %d: %d of %d", p.Priority, p.SLABreaches, p.Tickets+p.Cases)
			if p.Cases > 0 {
				parts[i] += fmt.Sprintf(" (%d of %d cases within SLA)", p.CasesInSLA, p.Cases)
			}
		}
		fmt.Fprintf(tw, "SLA breaches\t%s\n", strings.Join(parts, ", "))
	}
	fmt.Fprintf(tw, "completion\t%.1f%%\n", 100*s.Completion)
	if s.OutcomeMax > 0 {
		fmt.Fprintf(tw, "outcome\t%.2f of %.0f  (wrong outcomes %d, collateral writes %d)\n", s.Outcome, s.OutcomeMax, s.WrongOutcomes, s.Collateral)
	}
	fmt.Fprintf(tw, "violations\t%d  (rejected actions: %d, timeouts: %d)\n", s.Violations, s.Rejections, s.Timeouts)
	if s.TurnErrors > 0 {
		fmt.Fprintf(tw, "turn errors\t%d  (the agents could not decide; the last: %s)\n", s.TurnErrors, r.Failure)
	}
	fmt.Fprintf(tw, "turns\t%d\n", s.Turns)
	if rc := r.Recalled; rc != nil {
		// Before a resume or a fork went on, its agents that remember were shown their past.
		// From a checkpoint that kept what they remembered, only the turns since.
		since := "before the cut"
		if rc.FromCheckpoint > 0 {
			since = fmt.Sprintf("since the checkpoint at seq %d, which kept what they remembered,", rc.FromCheckpoint)
		}
		fmt.Fprintf(tw, "recalled\t%s %s shown again to the agents that remember, %d decided otherwise than recorded\n",
			analyze.Plural(rc.Turns, "past turn"), since, rc.Differed)
	}
	fmt.Fprintf(tw, "events\t%d\n", r.Events)
	fmt.Fprintf(tw, "state hash\t%s\n", r.StateHash)
	if r.WallSeconds > 0 {
		fmt.Fprintf(tw, "wall\t%.2fs  (%.0f events/s, %.0f tickets/s, peak RSS %d MiB)\n",
			r.WallSeconds, r.EventsPerSecond, r.TicketsPerSecond, r.PeakRSSBytes>>20)
	}
	tw.Flush()
	if len(s.Projects) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "PROJECT\tDONE\tON TIME\tVALUE\tBONUS")
		for _, p := range s.Projects {
			bonus := "no"
			if p.Completed {
				bonus = "yes"
			}
			fmt.Fprintf(tw, "%s\t%d/%d\t%d\t%.2f\t%s\n", p.ID, p.Done, p.Tasks, p.OnTime, p.Value, bonus)
		}
		tw.Flush()
	}
	if len(s.Templates) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "CASE TEMPLATE\tCASES\tDONE\tIN SLA\tBREACHED\tLEAD TIME\tVALUE")
		for _, t := range s.Templates {
			// Lead time: the mean working time from opening to done, in hours.
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%s\t%.2f\n", t.Template, t.Cases, t.Done, t.InSLA, t.Breached, analyze.FormatWork(t.LeadTime, 0), t.Value)
		}
		tw.Flush()
	}
	for _, u := range s.Unverified {
		fmt.Fprintf(w, "unverified: %s\n", u)
	}
}
