package events

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Errors returned by this package and by every Log
// implementation wrap one of these, so callers test them with errors.Is.
var (
	// ErrCorrupt reports stored bytes that fail the checksum or do not decode
	// to an event, session or checkpoint. It is never returned for a
	// caller's mistake.
	ErrCorrupt = errors.New("events: corrupt event")
	// ErrConflict reports an Append whose expected last sequence number did
	// not match the session's, or that overlaps stored events with different
	// ones.
	ErrConflict = errors.New("events: sequence conflict")
	// ErrNoSession reports a session that does not exist.
	ErrNoSession = errors.New("events: no such session")
	// ErrSessionExists reports a CreateSession for an ID already taken.
	ErrSessionExists = errors.New("events: session exists")
	// ErrBadBatch reports a malformed Append batch: empty, sequence numbers
	// not following expectedLast without gaps, or an invalid event. A bad
	// batch is the caller's bug; retrying it cannot succeed.
	ErrBadBatch = errors.New("events: malformed batch")
	// ErrBadSession reports invalid session metadata: a bad session ID, an
	// unknown status, a fork point beyond its parent's last event, or an
	// UpdateSession that changes an immutable field.
	ErrBadSession = errors.New("events: invalid session")
	// ErrClosed reports use of a Log after Close.
	ErrClosed = errors.New("events: log closed")
	// ErrNoCheckpoint reports that a session's history holds no checkpoint
	// at or before the requested seq.
	ErrNoCheckpoint = errors.New("events: no checkpoint")
	// ErrBadCheckpoint reports a malformed PutCheckpoint: seq 0, a seq
	// beyond the session's last event, or an invalid state hash (see
	// Checkpoint.Validate). Like a bad batch, it is the caller's bug.
	ErrBadCheckpoint = errors.New("events: malformed checkpoint")
	// ErrTrimmed reports a read of events that an in-memory log keeping
	// only its latest events (memlog.NewWindow) no longer holds.
	ErrTrimmed = errors.New("events: events no longer kept")
)

// ForksError refuses deleting a session that forks read their first
// events from. It unwraps to ErrBadSession.
type ForksError struct {
	Session string
	Forks   []string
}

func (e *ForksError) Error() string {
	return fmt.Sprintf("%v: session %s has forks that read their first events from it (%s): delete them first",
		ErrBadSession, e.Session, strings.Join(e.Forks, ", "))
}

func (e *ForksError) Unwrap() error { return ErrBadSession }

// reasonError is a decoding failure: it prints as ErrCorrupt followed by a
// precise reason and unwraps to ErrCorrupt.
type reasonError struct{ reason string }

func (e *reasonError) Error() string { return ErrCorrupt.Error() + ": " + e.reason }
func (e *reasonError) Unwrap() error { return ErrCorrupt }

func corruptf(format string, args ...any) error {
	return &reasonError{reason: fmt.Sprintf(format, args...)}
}

// CorruptError names where a Log found corrupt stored data. It is returned by
// Log implementations, never by Decode itself. errors.Is(err, ErrCorrupt) is
// true for every CorruptError.
//
// Kind says what is corrupt. For the zero Kind, CorruptEvent, Seq is the
// sequence number of the corrupt event, and Seq 0 means the session's
// metadata is corrupt (no event has sequence number 0). For
// CorruptCheckpoint, Seq is the seq of the corrupt checkpoint, or 0 if its
// key is too damaged to tell.
type CorruptError struct {
	Session string      // session whose data is corrupt
	Seq     uint64      // sequence number of the corrupt event or checkpoint; see Kind
	Kind    CorruptKind // what is corrupt: an event (or metadata) or a checkpoint
	Key     string      // raw storage key, if the implementation has one (may hold binary bytes)
	Err     error       // the underlying failure, usually from a Decode function
}

// CorruptKind says which kind of stored data a CorruptError is about.
type CorruptKind string

const (
	// CorruptEvent, the zero value, is an event, or the session's metadata
	// when CorruptError.Seq is 0.
	CorruptEvent CorruptKind = ""
	// CorruptCheckpoint is a checkpoint (see Checkpoint).
	CorruptCheckpoint CorruptKind = "checkpoint"
)

// Error returns "events: corrupt event in session S at seq N: reason",
// "events: corrupt metadata of session S: reason" when Seq is 0, or, for a
// checkpoint, "events: corrupt checkpoint of session S at seq N: reason".
func (e *CorruptError) Error() string {
	reason := "unknown reason"
	var re *reasonError
	switch {
	case errors.As(e.Err, &re):
		reason = re.reason
	case e.Err != nil:
		reason = e.Err.Error()
	}
	if e.Kind == CorruptCheckpoint {
		if e.Seq == 0 {
			return fmt.Sprintf("events: corrupt checkpoint of session %s: %s", e.Session, reason)
		}
		return fmt.Sprintf("events: corrupt checkpoint of session %s at seq %d: %s", e.Session, e.Seq, reason)
	}
	if e.Seq == 0 {
		return fmt.Sprintf("events: corrupt metadata of session %s: %s", e.Session, reason)
	}
	return fmt.Sprintf("events: corrupt event in session %s at seq %d: %s", e.Session, e.Seq, reason)
}

// Unwrap returns the underlying failure.
func (e *CorruptError) Unwrap() error { return e.Err }

// Is reports whether target is ErrCorrupt, so errors.Is(err, ErrCorrupt)
// holds even when Err does not wrap ErrCorrupt itself.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

// DamagedError is what Sessions returns, beside every other session, when
// the metadata of some sessions cannot be read: one error each (a
// *CorruptError that names its session), by session ID; and what
// Checkpoints returns beside every other checkpoint when some do not read.
// One damaged block does not hide the ones around it.
type DamagedError struct {
	Errs []error
}

// Error returns the one error, or "events: N damaged: …" with each one's.
func (e *DamagedError) Error() string {
	msgs := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		msgs[i] = err.Error()
	}
	if len(e.Errs) == 1 {
		return e.Errs[0].Error()
	}
	return fmt.Sprintf("events: %d damaged: %s", len(e.Errs), strings.Join(msgs, "; "))
}

// Damaged is the error a listing returns beside what it listed: nil when
// errs is empty, else a *DamagedError of errs.
func Damaged(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return &DamagedError{Errs: errs}
}

// Unwrap returns each session's error, so that errors.As finds a
// *CorruptError in it.
func (e *DamagedError) Unwrap() []error { return e.Errs }
