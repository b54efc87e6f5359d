package natsserver

import (
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/corpsim/corpsim/agents/wire"
)

// Auth decides who may connect to the embedded server and what each may do.
// corpsim's own connections use the internal token and may do anything; an
// operator token may use the session-control subjects and read every feed;
// each remote seat has its own token whose user may only subscribe to its
// seat's turn subject and publish nothing but replies to the turns it gets —
// it cannot read another seat's observations, the event feed or control
// subjects, nor answer for another seat. Safe for concurrent use.
type Auth struct {
	mu       sync.RWMutex
	internal string
	operator string
	seats    map[string]Seat // token -> seat
}

// Seat is a remote seat's credentials.
type Seat = wire.Seat

// NewAuth makes an Auth with a fresh internal token; operator may be "" (no operator access).
func NewAuth(operator string) *Auth {
	return &Auth{internal: NewToken(), operator: operator, seats: map[string]Seat{}}
}

// NewToken returns 32 random bytes, hex encoded.
func NewToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("natsserver: no randomness: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// Internal is the token of corpsim's own connections.
func (a *Auth) Internal() string { return a.internal }

// AddSeat makes credentials for a remote seat.
func (a *Auth) AddSeat(session, member string) Seat {
	s := Seat{Session: session, Member: member, Token: NewToken(), Subject: wire.TurnSubject(session, member)}
	a.mu.Lock()
	a.seats[s.Token] = s
	a.mu.Unlock()
	return s
}

// RestoreSeat admits a seat's existing credentials again: a restarted
// server resuming a session gives its remote seats the tokens they had,
// so their agents reconnect as they were. It reports false (and admits
// nothing) when the token is empty or does not match the seat's subject.
func (a *Auth) RestoreSeat(s Seat) bool {
	if s.Token == "" || s.Session == "" || s.Member == "" || s.Subject != wire.TurnSubject(s.Session, s.Member) {
		return false
	}
	a.mu.Lock()
	a.seats[s.Token] = s
	a.mu.Unlock()
	return true
}

// RemoveSession revokes every seat of a session (existing connections keep
// their permissions until they reconnect).
func (a *Auth) RemoveSession(session string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for tok, s := range a.seats {
		if s.Session == session {
			delete(a.seats, tok)
		}
	}
}

// Check implements server.Authentication.
func (a *Auth) Check(c server.ClientAuthentication) bool {
	opts := c.GetOpts()
	if opts == nil {
		return false
	}
	tok := opts.Token
	if tok == "" {
		tok = opts.Password
	}
	switch {
	case tok == "":
		return false
	case tok == a.internal:
		c.RegisterUser(&server.User{Username: "corpsim"})
		return true
	case a.operator != "" && tok == a.operator:
		c.RegisterUser(&server.User{Username: "operator", Permissions: &server.Permissions{
			Publish:   &server.SubjectPermission{Allow: []string{wire.SessionsPrefix + ">", "corpsim.v1.s.*.control", "corpsim.v1.s.*.history", "_INBOX.>"}},
			Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>", "corpsim.v1.s.*.events", "corpsim.v1.s.*.control"}},
		}})
		return true
	}
	a.mu.RLock()
	s, ok := a.seats[tok]
	a.mu.RUnlock()
	if !ok {
		return false
	}
	c.RegisterUser(&server.User{Username: "seat:" + s.Session + ":" + s.Member, Permissions: &server.Permissions{
		Publish:   &server.SubjectPermission{Deny: []string{">"}},
		Subscribe: &server.SubjectPermission{Allow: []string{s.Subject}},
		Response:  &server.ResponsePermission{MaxMsgs: 1, Expires: 10 * time.Minute},
	}})
	return true
}

var _ server.Authentication = (*Auth)(nil)
