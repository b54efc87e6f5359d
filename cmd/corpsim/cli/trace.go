package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// traceCmd is being built (issue 7); it is replaced in the same change.
func (a *app) traceCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "trace",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("trace: not built yet") },
	}
}
