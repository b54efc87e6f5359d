package cli

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

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
	c.AddCommand(&cobra.Command{
		Use:   "validate FILE",
		Short: "Check a world file and report every mistake with file, line, column and field",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			src, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			if _, err := worlds.Load(args[0], src); err != nil {
				return withCode(ExitError, err)
			}
			fmt.Fprintf(a.stdout, "%s: ok\n", args[0])
			return nil
		},
	})
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
		RunE: func(*cobra.Command, []string) error {
			if g.Dispatch != "" && g.Dispatch != worlds.DispatchAll && g.Dispatch != worlds.DispatchOne {
				return usagef("--dispatch %q: expected %s or %s", g.Dispatch, worlds.DispatchAll, worlds.DispatchOne)
			}
			src := worlds.Generate(g)
			if _, err := worlds.Load("generated", src); err != nil {
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
