package events

import (
	"errors"
	"fmt"
)

// ErrLost reports a session whose log ends before the last seq its
// metadata recorded when it ended: events that were stored, and
// acknowledged, are gone (a damaged or truncated store).
var ErrLost = errors.New("events: events lost")

// CheckEnd compares stored, the last seq a Log holds for session m (its
// LastSeq), with m.LastSeq, the last seq the writer recorded in the
// metadata when the session ended: the session's durable end marker. A
// session that is not running and whose log ends before its marker has
// lost events: CheckEnd returns an error wrapping ErrLost that says how
// many. A running session has no marker yet (its writer may have died at
// any point), and a log that goes beyond the marker lost nothing; both
// give nil.
//
// Logs keep the marker as safe as the events: pebblelog writes the
// metadata of a session that ends, and the events before it, to a table
// rather than leaving them in the WAL alone, so a damaged WAL cannot take
// the events without the marker.
func CheckEnd(m SessionMeta, stored uint64) error {
	if m.Status == StatusRunning || stored >= m.LastSeq {
		return nil
	}
	return fmt.Errorf("%w: session %s is %s with last seq %d, but its log ends at seq %d (%d events missing)",
		ErrLost, m.ID, m.Status, m.LastSeq, stored, m.LastSeq-stored)
}
