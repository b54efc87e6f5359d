// Package httpgw is corpsim's HTTP/JSON gateway: it lets programs in any
// language (Python training loops, shell scripts) use a corpsim server
// through plain HTTP, bridging every call to the server's NATS protocol v1
// (package proto).
//
// The gateway holds one NATS connection with the operator token, and, for
// every session it creates, one NATS connection per remote seat made with
// that seat's own credentials, subscribed to the seat's turn subject. When
// the engine asks a seat to decide, the gateway holds the request until an
// HTTP client answers it (or the turn's budget passes and the engine records
// a timeout). It also follows each of its sessions' event feed, so it can
// report dense rewards and, after the session has ended (when the server no
// longer answers control and history requests for it), its events and score.
//
//	gw, err := httpgw.New(httpgw.Config{NATSURL: bus.ClientURL(), OperatorToken: tok})
//	defer gw.Close()
//	srv := &http.Server{Addr: "127.0.0.1:8080", Handler: gw.Handler()}
//
// # Endpoints
//
// Every endpoint speaks JSON and is authorised by a bearer token
// (Authorization: Bearer TOKEN): the server's operator token, or a seat's
// token from the create reply (the same token the seat would use on NATS).
// A missing or unknown token is 401; a token used outside its reach is 403
// (a seat token only reaches its own seat; the operator token reaches no
// seat's observe/act, only the operator endpoints).
//
//	POST /v1/sessions                                   operator  wire.CreateRequest -> wire.CreateReply (201)
//	POST /v1/sessions/{id}/fork                         operator  {"at":N,"seed":S,"agents":"…"} -> CreateReply (201)
//	POST /v1/sessions/{id}/reset                        operator  {"seed":S,"agents":"…"} (optional) -> CreateReply: a fork at event 1
//	POST /v1/sessions/{id}/control                      operator  {"op":"start|pause|stop|status"} -> wire.ControlReply
//	POST /v1/sessions/{id}/step                         operator  {"actions":{member:[action…]}} -> StepReply
//	GET  /v1/sessions/{id}/events?from=N&limit=M        operator  stored events -> EventsReply
//	GET  /v1/sessions/{id}/score                        operator  -> ScoreReply
//	DELETE /v1/sessions/{id}[?forks=true]               operator  -> wire.DeleteReply: the session (with its forks, deepest first), not running, deleted from the server's log; 404 unknown, 409 running or with forks
//	GET  /v1/sessions/{id}/seats/{member}/observation?wait=30s   seat   long-poll -> org.Observation | {"done":true} | 204
//	POST /v1/sessions/{id}/seats/{member}/act           seat      org.Reply -> ActReply
//	GET  /v1/health                                     none      {"ok":true}
//
// An operator request's body (create, fork, reset) over
// Config.MaxRequestBytes (default 8 MiB) is refused with 413 and a message
// naming the limit; nothing reaches the server.
//
// Sessions created through the gateway start as soon as the gateway has
// joined their remote seats (unless the request says "wait": true; then a
// start control starts them). A fork or reset without "agents" reuses the
// parent's agents when the gateway created the parent.
//
// # Answering turns
//
// act forwards its body, unchanged, as the NATS reply to the held turn, so
// the engine's own parser (wire.ParseReply) decides what is recorded:
//
//   - no turn waiting, or the session has ended: 409, nothing is forwarded;
//   - a body over org.MaxReplyBytes: 413; if a turn is waiting, the first
//     MaxReplyBytes+1 bytes are forwarded and the engine records the turn's
//     rejection (kind malformed, "reply is … bytes");
//   - a body wire.ParseReply refuses (bad JSON, unknown fields, trailing
//     data, more than org.MaxActions actions): 400 with the parser's
//     sentence, and the body is forwarded, so the turn is used up and its
//     rejection recorded in the log — the session goes on, exactly as if the
//     seat had sent that reply over NATS; unless the body names another
//     turn than the waiting one (a "turn" key and a number found in it: a
//     retry of a reply a cut connection lost), which is 409, as below;
//   - a well-formed reply whose "turn" is not the waiting turn (a stale or
//     replayed reply; 0 counts as not echoing it): 409, nothing forwarded,
//     the turn stays waiting;
//   - otherwise 200; actions of unknown types are listed under "warnings"
//     and forwarded too, and the engine rejects each of them.
//
// The refusals of a seat's actions appear in its next observation's
// "rejected" and, as action.rejected events, in the log.
//
// # Step
//
// step is a Gym-style single controller for all the remote seats of a
// session. It answers every turn it returned in its previous reply with the
// actions given for that member ([] — a wait — for members without an
// entry); then it waits until turns are waiting for every remote seat, or no
// further turn has arrived for Config.Gather (10ms), or the session has
// ended, or ?wait= (default 60s) passes; and it returns those turns'
// observations with the reward events recorded since the previous step.
// A turn is never answered by step before step has returned it, so a first
// call with an empty body returns the initial observations, and a turn that
// arrives after that window is returned by the next step instead.
// Over a session the "rewards" of all steps add up to the final team score
// (for a fork at event N: the final score minus the score at event N).
//
// # Ended sessions
//
// The server stops answering a session's control subject when the session
// ends, so the gateway answers for the sessions it created from its record
// of their feed: events, score (the sum of the reward events, which the
// engine keeps equal to the rubric's team score) and status —
// "finished" once session.ended arrived, the server's status for a stop
// sent through the gateway ("interrupted"), or "stopped" when the session
// went away otherwise (stopped by another operator, or failed), which a
// waiting long poll or step notices within a few seconds of its feed
// falling quiet: a session that ended while the gateway was still
// recording its feed (a session of NPCs publishes faster than one handler
// decodes) is answered once what the feed brought is recorded.
//
// The record holds a session's latest Config.RecordEvents events (20,000
// by default; a session of NPCs makes hundreds of thousands, and the
// gateway held every one, 580 MB for two support-desk-bench sessions),
// with the running sum of its rewards at each reward event, so the score
// and a fork's score at any point still count every reward. Older events
// are read from the server's log: the server answers the history subject
// of an ended session (a worker of a cluster does not; then 410 Gone names
// corpsim log). A step lists at most that many reward events since the
// previous step, sums all of them, and warns of those it did not list.
//
// # Restarts
//
// The gateway marks the sessions it creates (wire.CreateRequest.Via =
// wire.ViaHTTP). When corpsim serve --http restarts on the same data, the
// server resumes them waiting for their remote seats, and serve hands them
// to Adopt before the gateway listens: it joins their seats again with the
// server's credentials, so an HTTP client carries on with the token it had,
// and the session goes on once its seats are back. The gateway's record of
// an adopted session starts at adoption: its earlier events and rewards are
// learnt as a fork's prefix is (at most 20,000 events over NATS). A fork
// or reset of an adopted session must name its "agents" (the gateway no
// longer knows the ones it was created with); without them it is refused
// with 400. Seats whose HTTP tokens were the gateway's own
// (an external NATS server without per-seat credentials) cannot be taken
// back: their turns time out.
//
// # Operations
//
// Every endpoint is a thin wrapper over one of the gateway's Go operations
// (ops.go): Create, Fork, Control, Step, Score and Events for the
// operator; Observe, Act and Answer for a seat, authorised by the seat's
// token alone; SeatOf and IsOperator to tell tokens apart. Refusals are
// *Error values whose Status is the HTTP status naming their kind (StatusOf).
// The other protocols corpsim serve speaks (OpenEnv, MCP, NeMo Gym) are
// adapters over these same operations, so turns, rewards and seat
// isolation have one implementation.
//
// # Concurrency and lifetime
//
// A Gateway is safe for concurrent use by many HTTP clients on many sessions.
// All its state is behind mutexes; it starts no goroutines of its own
// beyond those of its NATS connections and, for a session it adopts, one
// that learns the session's past. A session's record (seat tokens,
// events, rewards) is kept for Config.Retain after the session ends; then
// its seat tokens are unknown (401). Close ends every long poll, closes
// every connection and waits for in-flight requests.
package httpgw
