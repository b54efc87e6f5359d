package logcore

import (
	"fmt"

	"github.com/corpsim/corpsim/events"
)

// CheckCheckpoint reports whether cp may be stored for session, whose last
// seq is last: cp must be valid and cp.Seq <= last. Errors wrap
// events.ErrBadCheckpoint.
func CheckCheckpoint(session string, cp *events.Checkpoint, last uint64) error {
	if err := cp.Validate(); err != nil {
		return fmt.Errorf("session %s: %w", session, err)
	}
	if cp.Seq > last {
		return fmt.Errorf("%w: session %s: seq %d is beyond the session's last seq %d",
			events.ErrBadCheckpoint, session, cp.Seq, last)
	}
	return nil
}

// SeekFunc returns the stored checkpoint of session with the greatest seq
// <= atOrBefore (atOrBefore >= 1), as seq and encoded bytes the caller may
// keep, or ok=false if there is none. It must cost the same however many
// checkpoints the session stores: one reverse seek.
type SeekFunc func(session string, atOrBefore uint64) (seq uint64, b []byte, ok bool, err error)

// Found is a stored checkpoint found by FindCheckpoint, not yet decoded.
type Found struct {
	Session string // the session that stores it
	Seq     uint64 // the seq it is stored under
	Stored  []byte // its encoded form, see events.AppendEncodeCheckpoint
}

// FindCheckpoint finds the checkpoint LatestCheckpoint returns: the one
// with the greatest seq <= atOrBefore in the history of chain[0] (see Plan
// for chain), preferring a descendant's checkpoint over an ancestor's at
// the same seq. It calls seek at most once per link of the chain, and not
// at all for links that cannot beat what it has found. ok is false if
// there is no such checkpoint.
func FindCheckpoint(chain []events.SessionMeta, atOrBefore uint64, seek SeekFunc) (f Found, ok bool, err error) {
	bound := atOrBefore
	for _, m := range chain {
		if bound == 0 || ok && f.Seq >= bound {
			break // nothing stored further up can be newer
		}
		seq, b, found, err := seek(m.ID, bound)
		if err != nil {
			return Found{}, false, err
		}
		if found && seq > bound {
			panic(fmt.Sprintf("logcore: seek(%s, %d) returned seq %d", m.ID, bound, seq))
		}
		if found && (!ok || seq > f.Seq) {
			f, ok = Found{Session: m.ID, Seq: seq, Stored: b}, true
		}
		if m.Parent == "" {
			break
		}
		bound = min(bound, m.ForkSeq)
	}
	return f, ok, nil
}

// DecodeCheckpoint decodes the checkpoint stored by session under seq.
// Without data, Data is left nil (see events.DecodeCheckpointHeader).
// Failures, including a stored seq that is not the one it is stored under,
// are a *events.CorruptError of Kind events.CorruptCheckpoint; key is the
// storage key to report, if any.
func DecodeCheckpoint(session string, seq uint64, key string, b []byte, data bool) (events.Checkpoint, error) {
	var cp events.Checkpoint
	decode := events.DecodeCheckpointHeader
	if data {
		decode = events.DecodeCheckpoint
	}
	if err := decode(b, &cp); err != nil {
		return events.Checkpoint{}, CorruptCheckpoint(session, seq, key, err)
	}
	if cp.Seq != seq {
		return events.Checkpoint{}, CorruptCheckpoint(session, seq, key, fmt.Errorf("stored checkpoint has seq %d", cp.Seq))
	}
	return cp, nil
}

// CorruptCheckpoint returns the *events.CorruptError for the checkpoint
// session stores under seq (0 if unknown).
func CorruptCheckpoint(session string, seq uint64, key string, err error) error {
	return &events.CorruptError{Session: session, Seq: seq, Kind: events.CorruptCheckpoint, Key: key, Err: err}
}

// NoCheckpoint returns the error for a session with no checkpoint at or
// before atOrBefore; it wraps events.ErrNoCheckpoint.
func NoCheckpoint(session string, atOrBefore uint64) error {
	return fmt.Errorf("%w: session %s at or before seq %d", events.ErrNoCheckpoint, session, atOrBefore)
}
