package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// sweepCmd is being built (issue 7); it is replaced in the same change.
func (a *app) sweepCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "sweep",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("sweep: not built yet") },
	}
}
