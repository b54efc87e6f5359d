package cli

import (
	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/agents"
)

// toolsCmd prints the actions as tool definitions for LLM agents.
func (a *cmdline) toolsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "tools",
		Short: "Print the actions as tool definitions (OpenAI function-calling JSON)",
		Long: `Print every action an agent can take as a tool definition in the OpenAI
function-calling format, with its arguments, costs and the rules that refuse
it. An LLM agent sends these as "tools"; agents.ActionFromToolCall turns its
tool calls back into actions.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := a.stdout.Write(append(agents.Tools(), '\n'))
			return err
		},
	}
}
