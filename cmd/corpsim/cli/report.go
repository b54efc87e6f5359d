package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// reportCmd is being built (issue 7); it is replaced in the same change.
func (a *app) reportCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "report",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("report: not built yet") },
	}
}
