// Package wire is corpsim's whole wire protocol for agents and operators
// (version 1): the subjects on NATS, the messages that travel on them, and
// the protocol's hot codecs:
// an org.Observation's JSON (AppendObservation, DecodeObservation) and an
// org.Reply's (AppendReply, and ParseReply, the strict parser whose verdict
// the engine records). It is pure: no NATS import, so the driver, the agent
// hosts and remote clients share one definition.
//
// Subjects (version 1):
//
//	corpsim.v1.s.<session>.a.<member>.turn   request: org.Observation; reply: org.Reply
//	corpsim.v1.s.<session>.events            every durable event, as JSON, in sequence order
//	corpsim.v1.s.<session>.history           request: HistoryRequest; reply: HistoryResponse (stored events: a running session's from its driver, an ended one's from the server's log)
//	corpsim.v1.s.<session>.control           session control (reserved)
//	corpsim.v1.sessions.create               request: CreateRequest; reply: CreateReply (operator)
//	corpsim.v1.sessions.list                 request: {}; reply: []events.SessionMeta (operator)
//	corpsim.v1.sessions.delete               request: DeleteRequest; reply: DeleteReply (operator)
//
//	subj := wire.TurnSubject("01J…", "alice") // "corpsim.v1.s.01J….a.alice.turn"
package wire

import (
	"encoding/json"
	"strings"

	"github.com/corpsim/corpsim/events"
)

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

// SessionsPrefix starts the subjects that manage sessions on a server.
const SessionsPrefix = "corpsim." + Version + ".sessions."

// Session-management subjects (request/reply, operator only).
const (
	CreateSubject = SessionsPrefix + "create" // CreateRequest -> CreateReply
	ListSubject   = SessionsPrefix + "list"   // {} -> []events.SessionMeta
	DeleteSubject = SessionsPrefix + "delete" // DeleteRequest -> DeleteReply
)

// DamagedHeader is the header of a ListSubject reply that lists only some
// sessions because the store's metadata of the others cannot be read: it
// says what is damaged (which session, or after which the list stops).
const DamagedHeader = "Corpsim-Damaged"

// DeleteRequest asks a server to delete sessions that are not running
// from its log: their metadata, events and checkpoints. A session with
// forks is refused unless Forks, which deletes every fork under it first.
type DeleteRequest struct {
	Sessions []string `json:"sessions"`
	Forks    bool     `json:"forks,omitempty"`
}

// DeleteReply lists what a delete removed, in the order removed (forks
// before the session they read from), also when it stopped on an error
// partway.
type DeleteReply struct {
	Deleted []Deleted `json:"deleted"`
	Error   string    `json:"error,omitempty"`
	// Code says what kind of refusal Error is: DeleteNoSession,
	// DeleteRunning, DeleteRefused (a fork not named, a bad ID), or empty
	// for another failure.
	Code string `json:"code,omitempty"`
}

// DeleteReply's codes.
const (
	DeleteNoSession = "no_session" // a session named is not in the log
	DeleteRunning   = "running"    // a session to delete runs: stop it first
	DeleteRefused   = "refused"    // it has forks not named, or a bad ID
)

// Deleted is one session deleted, with how many events of its own it held
// (a fork's shared prefix is its parent's).
type Deleted struct {
	Session string `json:"session"`
	Events  int    `json:"events"`
}

// StatusPaused is the status a server's list (ListSubject) and a control
// reply give a running session an operator paused: the log knows no such
// status (it records the session running), only the server running it.
const StatusPaused = "paused"

// ControlOp names a session control operation.
type ControlOp string

// Control operations.
const (
	OpStart  ControlOp = "start"  // begin asking members (when created with wait)
	OpPause  ControlOp = "pause"  // stop after the current batch; resume with start
	OpStop   ControlOp = "stop"   // end the session now (status interrupted)
	OpStatus ControlOp = "status" // report where it stands
)

// CreateRequest asks a server for a session.
type CreateRequest struct {
	World  string  `json:"world"`            // a shipped world's name
	Source string  `json:"source,omitempty"` // or a world file's text (YAML or JSON)
	Seed   uint64  `json:"seed"`
	Load   float64 `json:"load,omitempty"`
	// Agents assigns seats as for corpsim run, with "remote" for seats that
	// remote agents play, e.g. "greedy,bob=remote" or "remote".
	Agents string `json:"agents"`
	// Wait, when true, holds the session until a start control message;
	// otherwise it starts once every remote seat is subscribed (or JoinTimeout passes).
	Wait        bool   `json:"wait,omitempty"`
	JoinTimeout string `json:"join_timeout,omitempty"` // e.g. "30s"
	TurnTimeout string `json:"turn_timeout,omitempty"` // per turn, e.g. "10s"
	Parent      string `json:"parent,omitempty"`       // fork this session…
	ForkSeq     uint64 `json:"fork_seq,omitempty"`     // …at this event (1: a reset)
	// Via names the client that plays the remote seats for their owners,
	// e.g. ViaHTTP: the HTTP gateway. A server that resumes the session
	// after a restart tells that client again (server.SavedSeats), so that
	// the seats' owners come back with the tokens they had.
	Via string `json:"via,omitempty"`
	// DrawDomain, on a server with a secret, keys the session's draws
	// apart from the sessions of another domain: the same seed draws
	// another hidden truth in each. The NeMo Gym adapter sets
	// DrawDomainOpen for the rows anyone who reaches its routes may send,
	// so that a side session there tells nothing of the operator's
	// sessions of that seed. Empty: the operator's domain.
	DrawDomain string `json:"draw_domain,omitempty"`
}

// DrawDomainOpen is CreateRequest.DrawDomain of sessions started without
// the operator token (NeMo Gym's rows).
const DrawDomainOpen = "open"

// ViaHTTP is CreateRequest.Via for sessions created through the HTTP gateway.
const ViaHTTP = "http"

// CreateReply tells a client its session and the credentials of its seats.
type CreateReply struct {
	Session string          `json:"session"`
	Seats   map[string]Seat `json:"seats,omitempty"` // member -> credentials, for remote seats
	// Tools are the session's world's actions as tool definitions in the
	// OpenAI function-calling format (`corpsim tools --world`), when it
	// has remote seats: what a model playing one of them can call.
	Tools json.RawMessage `json:"tools,omitempty"`
	Error string          `json:"error,omitempty"`
}

// Seat is a remote seat's credentials: connect with Token, answer turns on Subject.
type Seat struct {
	Session string `json:"session"`
	Member  string `json:"member"`
	Token   string `json:"token"`
	Subject string `json:"subject"`
}

// ControlRequest is sent to a session's control subject.
type ControlRequest struct {
	Op ControlOp `json:"op"`
}

// ControlReply reports a session's state after a control operation.
type ControlReply struct {
	Session string  `json:"session"`
	Status  string  `json:"status"`
	Events  uint64  `json:"events"`
	Time    int64   `json:"time"`
	Score   float64 `json:"score"`
	Error   string  `json:"error,omitempty"`
}

// HistorySubject answers requests for a session's stored events: a
// running session's driver answers them, up to what has landed, and a
// server answers for the sessions of its log that it does not run (a
// cluster's workers do not).
func HistorySubject(session string) string { return prefix + session + ".history" }

// HistorySession returns the session of a HistorySubject.
func HistorySession(subject string) (string, bool) {
	rest, ok := strings.CutPrefix(subject, prefix)
	if !ok {
		return "", false
	}
	id, ok := strings.CutSuffix(rest, ".history")
	return id, ok && id != "" && !strings.ContainsAny(id, ".*>")
}

// MaxHistoryPage bounds the events in one history response.
const MaxHistoryPage = 1000

// HistoryRequest asks for stored events with Seq >= From, at most Limit.
type HistoryRequest struct {
	From  uint64 `json:"from"`
	Limit int    `json:"limit,omitempty"`
}

// HistoryResponse carries a page of events and the session's last seq.
// NoSession says the log holds no such session (Error says so too).
type HistoryResponse struct {
	Events    []events.Event `json:"events"`
	Last      uint64         `json:"last"`
	Error     string         `json:"error,omitempty"`
	NoSession bool           `json:"no_session,omitempty"`
}
