package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// diffCmd is being built (issue 7); it is replaced in the same change.
func (a *app) diffCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "diff",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("diff: not built yet") },
	}
}
