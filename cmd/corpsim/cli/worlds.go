package cli

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/sim/app"
	"github.com/corpsim/corpsim/worlds"
)

func (a *cmdline) worldsCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "worlds",
		Short: "List the shipped worlds",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tMEMBERS\tTASKS\tARRIVALS\tDESCRIPTION")
			for _, n := range worlds.Names() {
				w, err := worlds.Shipped(n)
				if err != nil {
					return err
				}
				tasks := 0
				for _, p := range w.Projects {
					tasks += len(p.Tasks)
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", n, len(w.Members), tasks, len(w.Arrivals), w.Description)
			}
			return tw.Flush()
		},
	}
	var lim worlds.Limits
	var load float64
	validate := &cobra.Command{
		Use:   "validate FILE|NAME",
		Short: "Check a world file (or a shipped world) and report every mistake with file, line, column and field",
		Long: `Check a world file (or a shipped world, by name) and report every mistake with file, line, column and field, and
whether a session of it fits the limits at --load; print its warnings (mistakes that do
not stop a run) and exit 0 if it has no mistake.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := explicitLoad(cmd, load); err != nil {
				return err
			}
			if err := lim.Validate(); err != nil {
				return usage(err)
			}
			if err := worlds.CheckNewLoad(load, lim.WithDefaults().MaxLoad); err != nil {
				return usage(err)
			}
			w, _, err := app.LoadWorldLimited(args[0], lim) // a file, or a shipped world by name
			if isUsage(err) {
				return err
			}
			if err == nil {
				err = w.Admit(load, lim)
			}
			if err != nil {
				return withCode(ExitError, err)
			}
			for _, e := range w.Warnings {
				fmt.Fprintf(a.stdout, "warning: %s\n", e)
			}
			fmt.Fprintf(a.stdout, "%s: ok\n", args[0])
			return nil
		},
	}
	validate.Flags().Float64Var(&load, "load", 1, "check the arrivals at this load factor")
	worldLimitFlags(validate, &lim)
	c.AddCommand(validate)
	c.AddCommand(&cobra.Command{
		Use:   "show NAME",
		Short: "Print a shipped world's file",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			src, err := worlds.Source(args[0])
			if err != nil {
				return err
			}
			_, err = a.stdout.Write(src)
			return err
		},
	})
	var g worlds.GenOptions
	var out string
	gen := &cobra.Command{
		Use:   "gen",
		Short: "Generate a world file of a given size (deterministic in its flags)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Defaults that do not fit the sizes asked are raised as
			// Generate raises them; sizes asked that do not fit are refused.
			if !cmd.Flags().Changed("members") {
				g.Members = max(g.Members, 3*g.Teams)
			}
			if !cmd.Flags().Changed("chains") {
				g.Chains = min(g.Chains, g.Tasks)
			}
			if err := checkGen(g); err != nil {
				return err
			}
			src := worlds.Generate(g)
			if _, err := worlds.Load("generated", src); err != nil && strings.Contains(err.Error(), worlds.ErrLimit.Error()) {
				return usagef("the world asked for is over a world limit (ask for fewer teams, members or tasks): %v", err)
			} else if err != nil {
				return fmt.Errorf("generated world does not load (a bug): %w", err)
			}
			if out == "" || out == "-" {
				_, err := a.stdout.Write(src)
				return err
			}
			return os.WriteFile(out, src, 0o644)
		},
	}
	f := gen.Flags()
	f.StringVar(&g.Name, "name", "generated", "world name")
	f.Uint64Var(&g.Seed, "seed", 1, "generator seed")
	f.IntVar(&g.Teams, "teams", 1, "teams")
	f.IntVar(&g.Members, "members", 6, "agent seats in all")
	f.IntVar(&g.Projects, "projects", 1, "projects")
	f.IntVar(&g.Tasks, "tasks", 12, "tasks per project")
	f.IntVar(&g.Chains, "chains", 3, "parallel dependency chains per project")
	f.StringVar(&g.Horizon, "horizon", "", "horizon in working time (default: from the size)")
	f.IntVar(&g.Stagger, "stagger", 0, "start project i after i×N working days")
	f.IntVar(&g.Tickets, "tickets", 0, "add support tickets to every team's queue, one every N working hours")
	f.StringVar(&g.Dispatch, "dispatch", "", "who is asked when work becomes available: all idle seats that may take it (all, the default) or one at a time (one)")
	f.StringVarP(&out, "output", "o", "", "write to this file instead of stdout")
	c.AddCommand(gen, a.worldsSchemaCmd())
	return c
}

// checkGen refuses the sizes worlds gen cannot make as asked, which
// Generate would otherwise round up or replace by its defaults.
func checkGen(g worlds.GenOptions) error {
	for _, f := range []struct {
		flag string
		n    int
	}{{"teams", g.Teams}, {"members", g.Members}, {"projects", g.Projects}, {"tasks", g.Tasks}, {"chains", g.Chains}} {
		if f.n < 1 {
			return usagef("--%s %d: at least 1", f.flag, f.n)
		}
	}
	if !utf8.ValidString(g.Name) || strings.ContainsFunc(g.Name, unicode.IsControl) {
		return usagef("--name %q: a name has no control characters (a newline, a tab) and is UTF-8", g.Name)
	}
	// The world's limits, before a world of that size is built: a
	// billion teams grew to gigabytes before the load refused it.
	if g.Teams > worlds.DefaultMembers/3 {
		return usagef("--teams %d: each team has at least 3 members, over the world limit of %d members", g.Teams, worlds.DefaultMembers)
	}
	if g.Members > worlds.DefaultMembers {
		return usagef("--members %d: over the world limit of %d members", g.Members, worlds.DefaultMembers)
	}
	if g.Tasks > worlds.DefaultTasks/g.Projects {
		return usagef("--projects %d × --tasks %d: over the world limit of %d tasks", g.Projects, g.Tasks, worlds.DefaultTasks)
	}
	if g.Members < 3*g.Teams {
		return usagef("--members %d: each of the %d teams has a lead, a designer and an engineer, so at least %d", g.Members, g.Teams, 3*g.Teams)
	}
	if g.Chains > g.Tasks {
		return usagef("--chains %d: a project of %d tasks has at most %d chains", g.Chains, g.Tasks, g.Tasks)
	}
	if g.Stagger < 0 || g.Tickets < 0 {
		if g.Stagger < 0 {
			return usagef("--stagger %d: may not be negative", g.Stagger)
		}
		return usagef("--tickets %d: may not be negative", g.Tickets)
	}
	if g.Horizon != "" {
		d, err := clock.ParseDuration(g.Horizon, 8*clock.Hour)
		switch {
		case err != nil:
			return usagef("--horizon: %v", err)
		case d <= 0:
			return usagef("--horizon %s: must be positive", g.Horizon)
		case float64(g.Projects-1)*float64(g.Stagger)*float64(8*clock.Hour) >= float64(d):
			// Project i starts after i×stagger working days of 8h.
			return usagef("--stagger %d with --projects %d: the last project would start after %dd, at or after --horizon %s", g.Stagger, g.Projects, (g.Projects-1)*g.Stagger, g.Horizon)
		}
	}
	if g.Dispatch != "" && g.Dispatch != worlds.DispatchAll && g.Dispatch != worlds.DispatchOne {
		return usagef("--dispatch %q: expected %s or %s", g.Dispatch, worlds.DispatchAll, worlds.DispatchOne)
	}
	return nil
}
