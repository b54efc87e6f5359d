// Package nemogym serves corpsim sessions as a NeMo Gym resources server:
// the routes NeMo Gym's agents (simple_agent, gymnasium_agent) call on a
// resources server, under /nemo on corpsim serve's --http listener. It is
// an adapter over the HTTP gateway's session and seat operations (package
// httpgw): turns, rewards and seat isolation are the gateway's.
//
// A NeMo Gym session is one corpsim session in which the model plays one
// member (a remote seat) and built-in agents play the others. The session
// is named by a cookie (corpsim_nemo), set by seed_session or reset and
// sent again on every answer, as NeMo Gym's session middleware does: its
// value is a random secret, so a cookie reaches its own session only.
//
//	POST /nemo/seed_session  the task row {"world","seed","load","agents","member","turn_timeout"} -> {"session","member","tools"}
//	POST /nemo/{tool}        a tool's JSON arguments -> {"output": {...}}
//	POST /nemo/verify        any JSON object -> the same object with "reward" and "reward_components"
//	POST /nemo/reset         the task row -> {"observation": text|null, "info": {...}}  (Gymnasium style)
//	POST /nemo/step          {"response": {"output": [function_call items]}, …} -> {"observation","reward","terminated","truncated","info"}
//	POST /nemo/close         ends the session (stops it if it still runs)
//	GET  /nemo/tools         the tools, as Responses API function tools
//	                         (?world=W: those of shipped world W's sessions)
//	POST /nemo/aggregate_metrics  {"verify_responses": [...]} -> {"group_level_metrics","agent_metrics","key_metrics"}
//	                         (no session: what NeMo Gym's rollout collection asks at its end)
//	GET  /nemo/reverify_mode "unsupported": verify reads the session's state, not the stored rollout
//	*    /nemo/mcp           streamable HTTP MCP with seed_session's X-NeMo-Gym-Session-Token
//	                         (Config.MCP: the seat's MCP server; seed_session's reply's "mcp" names it)
//
// The row's other fields (responses_create_params, …) are ignored. agents
// is as for corpsim run (default greedy) and may not mark seats remote:
// member, which the row must name, is the one remote seat.
//
// # Tools
//
// The tools are the actions of agents.Tools (claim, work, …, wait) and
// observe; with ?world=W, W's actions as agents.ToolDefsFor lists them
// (the record tools only in a world with systems, naming its record types
// and fields) and observe, for a row's responses_create_params.tools.
// seed_session's reply carries the tools of the session made (its world's,
// a row's source world too), and reset's info its actions' (a step returns
// the next observation: observe is not one of its tools). A call of an
// action answers the member's waiting turn with that one action, then
// waits for the next turn and returns what came of it:
//
//	{"output": {"result": "accepted" | "refused (kind, rule R): reason" | …,
//	            "turn": 8, "observation": {…}, "done": false}}
//
// observe waits for the member's turn and returns {"turn", "observation",
// "done"} (with "status" and "score" once the session has ended). Tool
// errors are outputs, not HTTP errors: a call of an unknown tool (one the
// session's world does not offer, too: get in a world without systems), or with
// arguments that do not parse (or are over org.MaxReplyBytes), answers the
// turn with an action of type "invalid" carrying the reason, which the
// engine refuses as malformed and records, exactly as for the LLM agent;
// the output says so. When no turn comes within Config.TurnWait, or the
// session has ended, the output says that instead ("error").
//
// # Rewards
//
// verify ends the episode: a session still running is played to its end
// with the model's member idle (each of its turns answered with no action),
// then "reward" is the team score — the sum of the session's reward
// events, which is what corpsim score reports for a finished session — and
// "reward_components" is {"team": team score, "member": the member's
// delivered value}. A play-out that takes longer than
// Config.PlayOutTimeout stops the session and reports the score so far.
//
// step is one turn in the Gymnasium style: the function_call items of the
// model's response are that turn's actions (in order; more than
// org.MaxActions are refused together, as a malformed reply the log
// records, and every call's output says so); it returns the next observation as text (the
// observation's JSON), the team reward since the previous step or reset,
// terminated once the session finished, truncated once it ended otherwise,
// and info.tool_outputs, one {"call_id","output"} per call. The step
// rewards of an episode add up to its team score.
//
// # Limits
//
// The server holds at most Config.MaxSessions sessions; a seed_session or
// reset beyond that (or beyond the corpsim server's --max-sessions) is
// answered 503 with {"detail": …}. Bodies are bounded (Config.MaxBodyBytes;
// verify's, which carry the whole conversation, by MaxVerifyBytes): over
// it, 413. A session unused for Config.IdleTimeout is dropped and its
// corpsim session stopped. HTTP errors are {"detail": "…"}, as FastAPI
// answers them.
//
//	srv := nemogym.New(gw, nemogym.Config{Logger: log, MaxSessions: 64})
//	defer srv.Close()
//	mux.Handle("/nemo/", srv.Handler())
//
// It is an edge package: it does I/O and reads the wall clock (idle
// timeouts); what the model did is recorded in the session's log.
package nemogym
