package org

import "github.com/corpsim/corpsim/events/payload"

// Limits bound what one member sees and sends, per session. They are
// recorded in session.started (package events/payload defines them), so
// replay, forks and resumes use the session's own limits. Zero fields take
// the defaults.
type Limits = payload.Limits

// Default limits.
const (
	DefaultListed       = payload.DefaultListed
	DefaultInbox        = payload.DefaultInbox
	DefaultMessageBytes = payload.DefaultMessageBytes
)
