package cli

import (
	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/worlds"
)

// worldsSchemaCmd prints the JSON Schema of world files, for editors.
func (a *cmdline) worldsSchemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of world files, for editors to check and complete them",
		Long: `Print the JSON Schema (draft 2020-12) of world files on stdout.

Save it and point your editor at it, for example with the YAML language
server (VS Code's YAML extension) by a first line in the world file:

  corpsim worlds schema > corpsim-world.schema.json
  # yaml-language-server: $schema=./corpsim-world.schema.json

The schema checks fields, types, ids, durations and the choices each field
allows; references between parts of the world are checked by
"corpsim worlds validate".`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := a.stdout.Write(worlds.Schema())
			return err
		},
	}
}
