package cli

import (
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/corpsim/corpsim/agents/httpgw"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/sim/server"
)

func (a *cmdline) serveCmd() *cobra.Command {
	o := server.ServeOptions{}
	var mcpOn bool // --mcp
	var lf llmFlags
	var sf secretFlag
	var nemo bool    // --nemo
	var openEnv bool // --openenv
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run an environment server: clients create sessions over NATS and remote agents play seats",
		Long: `Run an environment server on an embedded NATS server listening on --listen.
Operators (with the operator token, kept in DATA/operator.token) create and control
sessions on corpsim.v1.sessions.create and corpsim.v1.s.<session>.control; each
remote seat gets its own credentials, which may only answer that seat's turns.
With --http ADDR, an HTTP/JSON gateway serves the same protocol under /v1 (bearer
tokens: the operator token, or a seat's token), including a Gym-style step,
an MCP server at /mcp whose tools are a seat's actions (a seat's token picks the seat),
NeMo Gym's resources-server routes under /nemo (seed_session, one route per tool,
verify, and the Gymnasium-style reset/step; the session is named by a cookie), and
OpenEnv's protocol under /openenv (WebSocket /openenv/ws, one environment per
connection; the operator token as the bearer token or Basic password).
With --metrics ADDR (and on the --http listener), /metrics serves Prometheus metrics.
On the --http listener, /live/ serves a live page per session (queues, members and
what each holds, approvals waiting, score so far, latest events), updated as it runs;
open /live/?token=OPERATOR_TOKEN once in a browser.

On SIGTERM or SIGINT, serve stops taking sessions, lets each running session
finish the batch it is on (up to --shutdown-grace), records it interrupted and
exits 0. Started again on the same --data, it resumes those sessions (also after
a kill): built-in seats are re-created, remote seats keep their tokens (kept in
DATA/serve-state.json, mode 0600) and the session waits for them to reconnect.
A session that was being resumed when the process died is not resumed again: it
is recorded failed, with the reason (resume it by hand with corpsim resume).

Every create request's world and load are checked against the world budgets
(--max-world-bytes … --max-load) before anything is made.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cmd.Flags().Changed("llm-model") {
				var err error
				if o.LLM, err = lf.agent(cmd, "llm", a); err != nil {
					return err
				}
			}
			var err error
			if o.Secret, err = sf.read(); err != nil {
				return err
			}
			o.Logger, o.Stdout = a.logger, a.stdout
			o.NoMCP = !mcpOn
			o.NoNemo = !nemo
			o.NoOpenEnv = !openEnv
			return server.Serve(cmd.Context(), o)
		},
	}
	f := c.Flags()
	f.StringVar(&o.Listen, "listen", "127.0.0.1:4222", "address of the embedded NATS server (port 0 takes a free one, printed and written to DATA/bus.url)")
	f.StringVar(&o.NATS, "nats", "", "use this external NATS server or cluster instead of an embedded one (its configuration enforces who may do what)")
	f.StringVar(&o.NATSToken, "nats-token", "", "token corpsim presents to the external NATS server")
	f.StringVar(&o.HTTP, "http", "", "also serve the HTTP/JSON gateway on this address, e.g. 127.0.0.1:8080")
	f.StringVar(&o.Data, "data", DefaultData, "data folder of the event log")
	f.BoolVar(&o.Ephemeral, "ephemeral", false, "keep the log in memory only")
	f.StringVar(&o.OperatorToken, "operator-token", "", "operator token (default: read or create DATA/operator.token)")
	f.DurationVar(&o.TurnTimeout, "turn-timeout", 30*time.Second, "default wall-clock budget of one agent turn")
	f.DurationVar(&o.JoinTimeout, "join-timeout", 60*time.Second, "how long a new session waits for its remote seats")
	f.IntVar(&o.MaxSessions, "max-sessions", server.DefaultMaxSessions, "sessions running at once; a create beyond it is refused")
	f.IntVar(&o.MaxSeats, "max-seats", server.DefaultMaxSeats, "seats (members played) of one session; a create beyond it is refused")
	f.IntVar(&o.KeepEnded, "keep-ended", server.DefaultKeepEnded, "ended sessions whose status and score the server keeps in memory, the latest to end; earlier ones are answered from the log, as after a restart")
	f.Int64Var(&o.MaxWorldMemory, "max-world-memory", server.DefaultMaxWorldMemory, "bytes of memory the worlds of the running sessions may take, as estimated from their members, tasks and calendars (a world several sessions play counts once); a create beyond it is refused")
	f.Int64Var(&o.MaxMessage, "max-message", server.DefaultMaxMessage, "largest message in bytes (at least 1 MiB): the embedded NATS server's max_payload and the HTTP gateway's request bodies (create, fork, reset)")
	f.StringVar(&o.Metrics, "metrics", "", "serve Prometheus metrics at http://ADDR/metrics, e.g. 127.0.0.1:9090 (also on the --http listener)")
	f.DurationVar(&o.ShutdownGrace, "shutdown-grace", 10*time.Second, "on SIGTERM/SIGINT, how long running sessions may take to finish their batch before their turns are cancelled")
	f.IntVar(&o.HTTPMaxConns, "http-max-conns", httpgw.DefaultMaxConns, "connections open at once on the --http and --metrics listeners; one more is answered 503 and closed")
	f.DurationVar(&o.HTTPIdleTimeout, "http-idle-timeout", time.Minute, "how long an idle keep-alive HTTP connection is kept")
	f.DurationVar(&o.HTTPReadTimeout, "http-read-timeout", time.Minute, "how long an HTTP client may take to send a whole request, body included")
	f.BoolFunc("live", "serve the live view of the sessions (/live/) on the --http listener (default true; --live=false turns it off)", func(v string) error {
		on, err := strconv.ParseBool(v)
		o.NoLive = !on
		return err
	})
	f.BoolVar(&mcpOn, "mcp", true, "serve a Model Context Protocol server per seat at /mcp on the --http listener (a seat token as the bearer token picks the seat); --mcp=false turns it off")
	f.StringVar(&o.NemoListen, "nemo-listen", "", "also serve the NeMo Gym routes at the root of this address (NeMo Gym's clients add no path prefix), e.g. 127.0.0.1:8090")
	f.IntVar(&o.NemoMaxSessions, "nemo-max-sessions", 0, "NeMo Gym sessions held at once (0: half of --max-sessions); its routes take no token, so below --max-sessions it keeps the rest for the authenticated seats")
	f.BoolVar(&o.NemoDiscard, "nemo-discard", false, "delete a NeMo Gym session's log once it is closed, replaced or idle (and stopped), so that a trainer's rollouts take no disk once verified; by default they are kept for replay and analysis")
	f.BoolVar(&nemo, "nemo", true, "serve NeMo Gym's resources-server routes under /nemo on the --http listener (--nemo=false turns them off)")
	f.BoolVar(&openEnv, "openenv", true, "serve the OpenEnv protocol under /openenv on the --http listener (WebSocket /openenv/ws; --openenv=false turns it off)")
	f.DurationVar(&o.OpenEnvIdleTimeout, "openenv-idle-timeout", 10*time.Minute, "close an OpenEnv WebSocket connection that sends nothing for this long, pings aside (its session is stopped)")
	f.StringVar(&o.OpenEnvWorld, "openenv-world", "", "the shipped world an OpenEnv reset plays when it names none (OpenEnv's generic clients call reset() with no arguments); by default such a reset is refused")
	worldLimitFlags(c, &o.WorldLimits)
	f.IntVar(&o.CheckpointEvery, "checkpoint-every", 0, "take a checkpoint every N events (0: adaptive, at least 1000 events apart, further as the state grows, nearer while agents that remember take turns; negative: never)")
	f.IntVar(&o.MaxEvents, "max-events", sim.DefaultMaxEvents, "events one session may append; once they are spent it ends with reason event_limit")
	f.StringVar(&o.Worker, "worker", "", "run as the worker NAME of a cluster (needs --nats): take sessions through the queue group "+server.WorkerQueue+", replicate their logs to JetStream, adopt the sessions of dead workers")
	f.IntVar(&o.Replicas, "replicas", 0, "worker mode: replicas of the log stream and buckets (0: 3 if the cluster has them, else 1)")
	f.DurationVar(&o.LeaseTTL, "lease-ttl", server.DefaultLeaseTTL, "worker mode: a session's lease; a dead worker's sessions are adopted after it expires")
	sf.add(c)
	lf.add(c)
	return c
}
