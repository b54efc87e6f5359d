// Package openenv serves corpsim sessions over the OpenEnv protocol
// (meta-pytorch/OpenEnv, v0.3), so that an OpenEnv client — OpenEnv's own
// EnvClient/GenericEnvClient, verifiers' OpenEnv taskset, a TRL
// environment_factory class, or any WebSocket client — plays corpsim
// without glue code. It is an adapter over the HTTP gateway's operations
// (package httpgw: Create, Step, Control): turns, rewards and seat
// isolation are the gateway's, not implemented twice.
//
//	oe := openenv.New(gw, openenv.Config{MaxMessageBytes: 8 << 20})
//	mux.Handle("/openenv/", oe.Handler())
//	defer oe.Close() // before the HTTP server shuts down
//
// # Routes
//
// Everything is under /openenv on the --http listener, so that a client's
// base URL is http://HOST:PORT/openenv (OpenEnv clients append /ws):
//
//	GET  /openenv/ws        operator  the stateful WebSocket: one environment per connection
//	POST /openenv/reset     operator  stateless: create a session, return its first observation
//	POST /openenv/step      operator  stateless: step the session named by "episode_id"
//	GET  /openenv/health    none      {"status":"healthy"}
//	GET  /openenv/schema    none      JSON Schemas of the action, the observation and the state
//	GET  /openenv/metadata  none      the environment's name, description, version
//	GET  /openenv/openapi.json none   the routes as OpenAPI 3.1 (info.version: OpenEnv's HTTP standard, 1.x)
//	GET  /openenv/state     none/operator  a fresh environment's state; ?episode_id=S that session's
//	POST /openenv/mcp       none      JSON-RPC: tools/list (calls are answered on /ws and at /mcp)
//
// These are what `openenv validate http://HOST:PORT/openenv` checks of a
// running server.
//
// The operator token authorises /ws, /reset and /step, sent as
// "Authorization: Bearer TOKEN" (OpenEnv's newer EnvClient takes headers)
// — or, for clients that cannot set headers, as HTTP Basic credentials whose
// password is the token: a base URL http://corpsim:TOKEN@HOST:PORT/openenv
// makes Python's websockets, httpx and requests, and Node's ws, send them.
// No token, or an unknown one, is refused with 401 before the upgrade; a
// seat's token with 403 (a seat's token reaches only its own seat's
// observe/act, never a session's controller).
//
// # The WebSocket protocol
//
// Frames are JSON text messages, answered in order, one reply each
// (close has none):
//
//	{"type":"reset","data":{"world":"startup","seed":7,"agents":"greedy,bob=remote"}}
//	{"type":"step","data":{"actions":{"bob":[{"type":"claim","task":"api"}]}}}
//	{"type":"state"}
//	{"type":"close"}
//
//	{"type":"observation","data":{"observation":{"seats":{…},"episode_id":"…"},"reward":0,"done":false}}
//	{"type":"state","data":{"episode_id":"…","step_count":3,…}}
//	{"type":"error","data":{"message":"…","code":"VALIDATION_ERROR"}}
//
// reset's data is a create request (world or source, seed, load, agents,
// turn_timeout, join_timeout; decoded as POST /v1/sessions decodes one),
// plus OpenEnv's episode_id, which is accepted and ignored: the episode's
// ID is the corpsim session's. Without "agents" every agent seat is
// remote; the connection controls the remote seats. A reset without a
// world replays the connection's previous reset request (with the seed,
// load or agents it gives). A reset while an episode runs stops that
// session first (recorded in its log as stopped), then creates the new one.
//
// An observation's "observation" is {"seats": {member: observation}} for
// the seats asked to decide now (each an org.Observation, exactly as a
// seat sees it over NATS), with "episode_id" and, once "done", the
// session's "status" and final "score", and any "warnings" of the
// gateway (actions of unknown types, answers that came too late); reset's
// also has "tools", the world's actions as tool definitions in the OpenAI
// function-calling format (`corpsim tools --world`). A
// step's data is {"actions": {member: [action…]}}: it answers every turn
// the previous observation showed (a member without an entry waits) and
// returns the next turns. "reward" is the team reward recorded since the
// previous observation, so a connection's rewards over an episode add up
// to the session's final team score, the score `corpsim score` recomputes
// from the log. The reward of reset is 0: rewards recorded before the
// first observation (rare: before the remote seats are first asked) are
// reported with the first step, so that clients that sum only their
// steps' rewards (verifiers does) get the score too. "done" is true once
// the session has ended; stepping it again is a SESSION_ERROR.
//
// # Tool calling
//
// OpenEnv's MCPToolClient plays by tools, one call a step, and corpsim
// answers it on the same connection. A step whose data has a "type" is one
// of OpenEnv's MCP actions:
//
//	{"type":"step","data":{"type":"list_tools"}}
//	{"type":"step","data":{"type":"call_tool","tool_name":"claim","arguments":{"task":"api"}}}
//
//	{"type":"observation","data":{"observation":{"tools":[{"name","description","input_schema"}…],"episode_id":…},"reward":0,"done":false}}
//	{"type":"observation","data":{"observation":{"tool_name":"claim","result":{"seats":{…},"episode_id":…},"error":null},"reward":1,"done":false}}
//
// list_tools lists the episode's world's actions (before any reset,
// Config.DefaultWorld's, or without it every action's) and observe; it
// needs no reset, is not a step and reports no reward. observe shows the
// turns waiting now without answering them, or waits for the next when
// none waits, and after the end shows the end: MCPToolClient reads
// reset's observation as a tool list ("tools"), so a tool-calling client
// sees its first turn by observe. call_tool answers one asked seat's turn
// with the one action its tool makes, as agents.ActionFromToolCall reads
// it: the seat "member" names, or the first one whose turn has no call
// yet (MCPToolClient's CallToolAction has no member). A step answers
// every turn shown, so while other asked seats wait the call is kept and
// answers their observation ("result" shows only them), with no reward and
// no step; the call of the last sends them all and its "result" is the
// observation that followed, its reward and done the step's (a plain
// step sends the calls kept for the turns it does not answer). A call
// that cannot be that action sends nothing and answers "error" (OpenEnv's
// ToolError): tool_not_found, invalid_args (bad arguments, a seat not
// asked or answered already), or execution_error when no turn waits —
// then wait or observe waits for the next turn. The engine's verdict on
// an action that was sent, a rejection included, is in the next
// observation, as for every transport.
//
// An "mcp" frame carries MCP's JSON-RPC 2.0 (tools/list with inputSchema,
// tools/call with the same "member"), answered {"type":"mcp","data":
// {jsonrpc response}}: a call's result is MCP's CallToolResult, the
// observation that followed as structuredContent and as JSON text,
// isError for a call that cannot be an action. Its reward is reported
// with the connection's next step or call (observe's, after the end too),
// so that the rewards still add up to the score; a reset before that
// leaves them with the episode it ends. Other methods are
// -32601; a malformed request -32600.
//
// state's data has "episode_id" (the session ID, null before the first
// reset) and "step_count" (the episode's steps), and "done", "status",
// "world", "seed" and "seats" (the remote members).
//
// close, and a connection that ends without it (abrupt disconnect, idle
// timeout, shutdown), stop the connection's running session: the stop is
// recorded in its log, whatever was recorded stays.
//
// # Errors
//
// An error reply never closes the connection, and the episode goes on:
//
//	INVALID_JSON      the frame is not JSON
//	UNKNOWN_TYPE      "type" is missing or not reset, step, state, mcp or close
//	VALIDATION_ERROR  bad fields: unknown keys, a bad create request or action,
//	                  a member that is not a remote seat, a frame over the limit
//	EXECUTION_ERROR   the server failed or did not answer in time
//	CAPACITY_REACHED  the server already runs --max-sessions sessions (reset),
//	                  or the connections hold Config.FrameBudget of frames (any
//	                  frame: it was dropped)
//	SESSION_ERROR     no episode (step before reset), the episode has ended,
//	                  or the session is gone
//
// A frame over Config.MaxMessageBytes is read to its end and dropped,
// and answered VALIDATION_ERROR; one over four times that closes the
// connection (status 1009), as does a connection idle (no frame) for
// Config.IdleTimeout. The frames held at once by all connections, from
// their first byte until they are answered, are bounded by
// Config.FrameBudget.
//
// # Stateless routes
//
// POST /openenv/reset takes reset's data as its body and answers
// {"observation","reward","done"}, the observation naming the session in
// "episode_id". POST /openenv/step takes {"action": <step data>,
// "episode_id": "…", "timeout_s": S} and answers the same shape. They
// keep nothing per client: the session runs until it ends or is stopped
// (its unanswered turns time out meanwhile, as on /v1); tool actions are
// refused there (a connection knows the turns it was asked). Errors are HTTP
// statuses with {"detail": message, "code": one of the codes above}: 401,
// 403, 404 (unknown episode), 409 (the episode has ended), 413, 422
// (validation), 502/504 (execution) and 503 (capacity).
//
// # Concurrency and limits
//
// A connection costs one goroutine (the HTTP server's, which reads,
// handles and writes in turn) and its buffers; no other goroutine or
// timer is kept per connection while it waits. Thousands of connections
// fit one process: the bounds are the server's --max-sessions (a reset
// beyond it is answered CAPACITY_REACHED and the connection stays) and
// --http-max-conns (the listener's). A Server is safe for concurrent use.
// Close sends every connection a going-away close frame, stops their
// sessions and waits for their handlers, boundedly.
package openenv
