// Package proto names the subjects of corpsim's agent protocol on NATS and
// the messages that travel on them. It is pure: no NATS import, so the
// driver, the agent hosts and remote clients share one definition.
//
// Subjects (version 1):
//
//	corpsim.v1.s.<session>.a.<member>.turn   request: org.Observation; reply: org.Reply
//	corpsim.v1.s.<session>.events            every durable event, as JSON, in sequence order
//	corpsim.v1.s.<session>.history           request: HistoryRequest; reply: HistoryResponse (stored events of a running session)
//	corpsim.v1.s.<session>.control           session control (reserved)
//
//	subj := proto.TurnSubject("01J…", "alice") // "corpsim.v1.s.01J….a.alice.turn"
package proto

import "github.com/corpsim/corpsim/events"

// Version is the protocol version in every subject.
const Version = "v1"

const prefix = "corpsim." + Version + ".s."

// TurnSubject is where the engine asks member to decide in session.
func TurnSubject(session, member string) string {
	return prefix + session + ".a." + member + ".turn"
}

// EventsSubject carries a session's durable event feed.
func EventsSubject(session string) string { return prefix + session + ".events" }

// ControlSubject carries a session's control messages.
func ControlSubject(session string) string { return prefix + session + ".control" }

// HistorySubject answers requests for a running session's stored events.
func HistorySubject(session string) string { return prefix + session + ".history" }

// MaxHistoryPage bounds the events in one history response.
const MaxHistoryPage = 1000

// HistoryRequest asks for stored events with Seq >= From, at most Limit.
type HistoryRequest struct {
	From  uint64 `json:"from"`
	Limit int    `json:"limit,omitempty"`
}

// HistoryResponse carries a page of events and the session's last seq.
type HistoryResponse struct {
	Events []events.Event `json:"events"`
	Last   uint64         `json:"last"`
	Error  string         `json:"error,omitempty"`
}
