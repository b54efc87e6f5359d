package cli

import (
	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/sim/app"
)

// toolsCmd prints the actions as tool definitions for LLM agents.
func (a *cmdline) toolsCmd() *cobra.Command {
	var world string
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "Print the actions as tool definitions (OpenAI function-calling JSON)",
		Long: `Print every action an agent can take as a tool definition in the OpenAI
function-calling format, with its arguments, costs and the rules that refuse
it. An LLM agent sends these as "tools"; agents.ActionFromToolCall turns its
tool calls back into actions. With --world, the tools of that world: the
record tools only when it has systems, naming its record types, their
fields and enum values.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			out := agents.Tools()
			if world != "" {
				w, _, err := app.LoadWorld(world)
				if err != nil {
					return err
				}
				out = agents.ToolsFor(w)
			}
			_, err := a.stdout.Write(append(out, '\n'))
			return err
		},
	}
	cmd.Flags().StringVar(&world, "world", "", "shipped world name or world file path: print that world's tools")
	return cmd
}
