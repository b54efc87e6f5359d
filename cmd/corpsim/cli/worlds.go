package cli

import (
	"fmt"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/worlds"
)

func (a *app) worldsCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "worlds",
		Short: "List the shipped worlds",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tMEMBERS\tTASKS\tDESCRIPTION")
			for _, n := range worlds.Names() {
				w, err := worlds.Shipped(n)
				if err != nil {
					return err
				}
				tasks := 0
				for _, p := range w.Projects {
					tasks += len(p.Tasks)
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", n, len(w.Members), tasks, w.Description)
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
	return c
}
