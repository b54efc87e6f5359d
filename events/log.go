package events

import (
	"context"
	"iter"
)

// Log is an append-only store of sessions and their events. Implementations
// (events/memlog, events/pebblelog) are safe for concurrent use and pass the
// conformance suite in events/logtest.
//
// Every method returns an error wrapping ErrClosed after Close, and
// ctx.Err() if ctx is done when it starts. Session IDs that fail
// ValidSessionID give an error wrapping ErrBadSession.
type Log interface {
	// CreateSession stores a new session. It returns an error wrapping
	// ErrSessionExists if m.ID is taken and ErrBadSession if m is invalid
	// (see SessionMeta.Validate). For a fork, the parent must exist
	// (ErrNoSession) and have at least ForkSeq events (ErrBadSession).
	CreateSession(ctx context.Context, m SessionMeta) error
	// UpdateSession replaces the metadata of an existing session (ErrNoSession
	// if absent). Parent and ForkSeq cannot change (ErrBadSession).
	UpdateSession(ctx context.Context, m SessionMeta) error
	// Session returns the metadata of session id, or ErrNoSession.
	Session(ctx context.Context, id string) (SessionMeta, error)
	// Sessions returns the metadata of every session, sorted by ID.
	Sessions(ctx context.Context) ([]SessionMeta, error)
	// Append stores batch atomically and durably (one synced write) if the
	// session's last seq equals expectedLast, and returns only once the batch
	// is durable. The batch must be well formed (see ValidateBatch) or Append
	// returns an error wrapping ErrBadBatch.
	//
	// If the session already holds every event of the batch, byte for byte
	// (same seq, ID, time, type, actor, cause and payload), Append is an
	// idempotent no-op returning nil: a retry after a lost acknowledgement is
	// safe. Otherwise a stale expectedLast returns an error wrapping
	// ErrConflict that gives the expected and actual last seq.
	Append(ctx context.Context, session string, expectedLast uint64, batch []Event) error
	// LastSeq returns the seq of the session's last event: 0 for a new
	// session, ForkSeq for a fork with no events of its own.
	LastSeq(ctx context.Context, session string) (uint64, error)
	// Read yields the session's events with Seq >= from, in order, each with
	// Session set to the session that stored it (a fork's prefix comes from
	// its parent). An unknown session yields one ErrNoSession error. Corrupt
	// stored data yields a *CorruptError naming session and seq, and stops
	// the sequence: Read never yields a corrupt event. Events appended while
	// Read runs may or may not be yielded.
	Read(ctx context.Context, session string, from uint64) iter.Seq2[Event, error]
	// Close releases the Log's resources. Reads in progress stop with
	// ErrClosed.
	Close() error
}
