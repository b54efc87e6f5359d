package cli

import (
	"errors"

	"github.com/spf13/cobra"
)

// exportCmd is being built (issue 7); it is replaced in the same change.
func (a *app) exportCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "export",
		Hidden: true,
		RunE:   func(*cobra.Command, []string) error { return errors.New("export: not built yet") },
	}
}
