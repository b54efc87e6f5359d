// Package proto names the subjects of corpsim's agent protocol on NATS and
// the messages that travel on them. It is pure: no NATS import, so the
// driver, the agent hosts and remote clients share one definition.
//
// Subjects (version 1):
//
//	corpsim.v1.s.<session>.a.<member>.turn   request: org.Observation; reply: org.Reply
//	corpsim.v1.s.<session>.events            every durable event, as JSON, in sequence order
//	corpsim.v1.s.<session>.control           session control (reserved)
//
//	subj := proto.TurnSubject("01J…", "alice") // "corpsim.v1.s.01J….a.alice.turn"
package proto

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
