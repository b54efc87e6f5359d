// Package mcpseat serves a corpsim seat as a Model Context Protocol server,
// so that any MCP-capable agent harness can play a member of a running
// session. It is an adapter over the HTTP gateway's seat operations
// (package httpgw: SeatOf, Observe, Answer), built on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk): turns, isolation and rewards
// are the gateway's, the protocol is the SDK's.
//
//	srv := mcpseat.New(gw, mcpseat.Config{Logger: log, MaxRequestBytes: maxMessage})
//	mux.Handle(mcpseat.Path, srv.Handler())
//	defer srv.Close() // before the HTTP server shuts down
//
// # The seat
//
// Every request carries a seat's token (from the create reply) as
// Authorization: Bearer TOKEN; the token picks the seat. A missing, unknown
// or expired token is 401 (with WWW-Authenticate), the operator token 403:
// it is not a seat. Tools and the resource take no session or member: a
// token reaches only its own seat.
//
// Tools (tools/list, in name order):
//
//   - every action of the seat's world, as `corpsim tools --world` lists
//     them (agents.ToolDefsFor, from Ops.SeatTools: claim, work, complete,
//     handoff, request_approval, approve, reject, escalate, message, wait,
//     open_case, and the record, meeting and decision tools where the
//     world has them; every action, agents.ToolDefs, for a seat whose
//     world's tools the gateway does not know), with its JSON Schema as
//     inputSchema. A call answers
//     the seat's waiting turn with that one action (waiting up to
//     Config.ActWait for a turn when none waits yet) and returns the
//     answer as structuredContent (session, member, turn, forwarded,
//     action, warnings) and as JSON text. Arguments that do not parse
//     (agents.ActionFromToolCall, strict) are a tool error (isError) and
//     nothing is sent: the turn still waits. A refusal (no turn came, the
//     session has ended: "status": 409) is a tool error too. The engine's
//     verdict on the action — a rejection included — is in the seat's next
//     observation ("rejected") and in the log, as for every transport.
//     wait with no arguments passes the turn.
//   - observe: waits up to "wait" seconds (Config.ObserveWait by default,
//     at most Config.MaxWait) for the seat's turn and returns its
//     observation (org.Observation) with "done": false; {"done": false,
//     "turn": 0} when no turn came; {"done": true, "status": …} once the
//     session has ended. It does not use the turn up.
//
// The resource corpsim://seat/observation (resources/read) is the same
// observation without waiting.
//
// # Protocol revisions and sessions
//
// Both 2025-11-25 (and the earlier revisions the SDK speaks) and
// 2026-07-28 are served at one path. A request whose Mcp-Protocol-Version
// header names 2026-07-28 or later — a 2026-07-28 client sends it on every
// request, server/discover included — goes to a stateless handler, as
// that revision has no sessions. Any other request goes to a stateful one:
// initialize opens an MCP session (Mcp-Session-Id) bound to the token's
// seat, so that a request with another seat's token is refused on it
// (403); it is closed after Config.IdleTimeout without requests (its
// client then gets 404 and initializes again), when its client sends
// DELETE, or when its seat opens more than Config.MaxSessionsPerSeat (the
// oldest goes). At most Config.MaxSessions are open at once: one more is
// refused with 503 and Retry-After.
//
// # Limits and errors
//
// A request body over Config.MaxRequestBytes (corpsim serve: --max-message)
// is refused with 413; malformed JSON-RPC is refused by the SDK (400), and
// a request for an unknown method is answered with the JSON-RPC error
// -32601 (on an MCP session with HTTP 200: notfound.go), and the session,
// the seat and its turn are untouched. A client that disconnects in the middle of a call
// loses only that call's answer: observe uses nothing up, and an action
// that reached the engine shows in the next observation. Every refusal is
// counted by Config.Recorder.Failed, by kind. The SDK's DNS-rebinding
// protection is on: a request that arrives on a loopback address with a
// Host header naming another host is refused (403).
//
// # Stdio
//
// Proxy serves the same tools and resource over stdio for a local agent,
// forwarding each call to a server's /mcp (see Proxy); `corpsim mcp` runs it.
package mcpseat
