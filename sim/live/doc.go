// Package live is corpsim serve's live view: a page per session, served on
// the --http listener behind the operator token, that shows the session as
// it runs — its queues, its members and what each holds, the approvals
// waiting on each desk, the score so far and the latest events — updated
// from the server's own event feed through Server-Sent Events.
//
// A View rebuilds a session's state from its events (the engine's own
// org.State, applied event by event) and describes it as a Snapshot; it is
// pure. The Hub is a driver.Observer that passes each durable batch to the
// pages following its session; a page that falls behind catches up from
// the log. The Server reads the log for what happened before a page
// opened, so a reload shows the same session at once, and for sessions
// that have ended.
//
//	GET /live/                 the sessions (running and paused first)
//	GET /live/{id}             a session's page
//	GET /live/{id}/stream      text/event-stream: "snapshot" events (JSON Snapshot), then "end"
//
// The operator token is accepted as Authorization: Bearer, or once as
// ?token= (which sets an HttpOnly cookie and redirects without it).
package live
