package cli

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/agents/mcpseat"
)

// SeatTokenEnv is the environment variable corpsim mcp reads the seat
// token from when --token is not given (so that it is not on the command
// line, where other users of the machine can read it).
const SeatTokenEnv = "CORPSIM_SEAT_TOKEN"

// mcpCmd serves one seat of a running server to a local agent over stdio.
func (a *cmdline) mcpCmd() *cobra.Command {
	var url, token string
	c := &cobra.Command{
		Use:   "mcp",
		Short: "Serve one seat of a running corpsim serve --http to a local agent as an MCP server over stdio",
		Long: `Serve one seat of a session on a running corpsim serve --http to a local agent
as a Model Context Protocol server over stdio (newline-delimited JSON-RPC on
stdin and stdout; logs go to stderr). An MCP client configured to run
"corpsim mcp --url http://127.0.0.1:8080" with ` + SeatTokenEnv + ` set to a seat's token
gets that seat's tools (its actions and observe) and its observation resource.

The token is the seat's, from the create reply (POST /v1/sessions with the
seat "remote", or corpsim.v1.sessions.create); it picks the seat, and
reaches only that seat. corpsim mcp connects to the server's /mcp with it
first and exits with an error if the server refuses it; then it forwards
every call to the server's /mcp and returns its result as it came, so the
tools, their schemas and their answers are the server's own.`,
		Example: `  ` + SeatTokenEnv + `=SEAT_TOKEN corpsim mcp --url http://127.0.0.1:8080
  corpsim mcp --url http://127.0.0.1:8080 --token SEAT_TOKEN`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if token == "" {
				token = os.Getenv(SeatTokenEnv)
			}
			if token == "" {
				return usagef("corpsim mcp needs a seat's token: --token TOKEN or %s (the token of a remote seat from the create reply)", SeatTokenEnv)
			}
			if _, err := mcpseat.Endpoint(url); err != nil {
				return usagef("--url: %v", err)
			}
			t := mcpseat.StdioTransport(cmd.InOrStdin(), a.stdout)
			return mcpseat.Proxy(cmd.Context(), t, mcpseat.ProxyConfig{URL: url, Token: token, Logger: a.logger.Named("mcp")})
		},
	}
	f := c.Flags()
	f.StringVar(&url, "url", "http://127.0.0.1:8080", "the corpsim server's --http address (or its /mcp endpoint)")
	f.StringVar(&token, "token", "", "the seat's token (default: $"+SeatTokenEnv+")")
	return c
}
