package server

import (
	"sort"

	"github.com/corpsim/corpsim/agents/wire"
)

// SavedSeatsOf is a session the state file keeps, with the remote seats a
// client (Via) plays for their owners.
type SavedSeatsOf struct {
	Session     string
	Seats       map[string]wire.Seat // member -> credentials, as in the create reply
	TurnTimeout string               // the session's turn budget ("" for the service's default)
}

// SeatsVia returns the sessions the state file keeps (those ResumeSaved
// resumes) whose remote seats the client via played, in session order. An
// HTTP gateway restarted with the service takes them over again
// (httpgw.Gateway.Adopt): its clients come back with the tokens they had,
// and each session, resumed waiting for its seats, goes on once they are
// subscribed. Via is the creating client's word (wire.CreateRequest.Via):
// a NATS client that claims "http" gets the gateway playing its seats too.
func (s *Service) SeatsVia(via string) []SavedSeatsOf {
	var out []SavedSeatsOf
	for id, ss := range s.state.saved() {
		if ss.Via != via || len(ss.Seats) == 0 {
			continue
		}
		seats := make(map[string]wire.Seat, len(ss.Seats))
		for m, cred := range ss.Seats {
			seats[m] = cred
		}
		out = append(out, SavedSeatsOf{Session: id, Seats: seats, TurnTimeout: ss.TurnTimeout})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Session < out[j].Session })
	return out
}
