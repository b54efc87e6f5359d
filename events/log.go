package events

import (
	"context"
	"iter"
)

// TrustedAppender is implemented by logs that can append a batch whose
// payloads the caller encoded itself, skipping the JSON check of every
// payload (ValidateTrustedBatch); everything else Append checks is checked.
// The driver uses it for the events the engine made.
type TrustedAppender interface {
	AppendTrusted(ctx context.Context, id string, expectedLast uint64, batch []Event) error
}

// Pipeliner is implemented by logs that can take a session's next batch
// before the one before it is durable, so that a writer keeps two batches
// in flight and their syncs overlap with its work (the driver does, for
// the events the engine made).
type Pipeliner interface {
	// AppendPipelined is AppendTrusted in two steps. It returns once the
	// batch is ordered: its events are in the log, a Read may see them, and
	// the session's next append may follow them at once. durable then
	// blocks until the batch is durable and returns the rest of the
	// append's error; the caller must call it exactly once (the log cannot
	// close before it has), and must not treat the batch as acknowledged
	// before it returned nil. A batch that was ordered after one whose
	// durable failed is not durable either: durable reports the failure
	// for it too. On an error from AppendPipelined itself nothing was
	// appended and durable is nil. A write to the log that begins after
	// AppendPipelined returned (a checkpoint, say) is ordered after the
	// batch: once that write is durable, so is the batch.
	AppendPipelined(ctx context.Context, id string, expectedLast uint64, batch []Event) (durable func() error, err error)
}

// Founder is implemented by logs that can create a session and store its
// first batch in one durable write: one sync where CreateSession and then
// Append take two. A fork that goes on at once, and every new session the
// driver runs, is founded this way (see Found).
type Founder interface {
	// CreateSessionWith is CreateSession(m) followed by Append(m.ID,
	// m.ForkSeq, batch), done atomically: afterwards the session either
	// exists with every event of batch or does not exist at all. It returns
	// the errors of both: ErrSessionExists if m.ID is taken (the batch is
	// not compared: a founded session is not founded twice), ErrBadSession
	// for bad metadata or fork point, ErrNoSession for a missing parent,
	// and ErrBadBatch unless batch is a well-formed Append after m.ForkSeq
	// (see ValidateBatch). It returns only once the write is durable.
	CreateSessionWith(ctx context.Context, m SessionMeta, batch []Event) error
}

// Found creates session m with batch as its first events: in one durable
// write if log is a Founder, else with CreateSession and then Append (the
// batch checked first; a crash or a failed append between the two leaves
// the session without the batch).
func Found(ctx context.Context, log Log, m SessionMeta, batch []Event) error {
	if f, ok := log.(Founder); ok {
		return f.CreateSessionWith(ctx, m, batch)
	}
	if err := ValidateBatch(m.ID, m.ForkSeq, batch); err != nil {
		return err
	}
	if err := log.CreateSession(ctx, m); err != nil {
		return err
	}
	return log.Append(ctx, m.ID, m.ForkSeq, batch)
}

// Deleter is implemented by logs that can delete a session: what a
// trainer's thousands of finished rollouts would otherwise keep on disk.
type Deleter interface {
	// DeleteSession removes session id — its metadata, its own events and
	// its checkpoints — in one durable write, and returns how many of its
	// own events it held. It returns an error wrapping ErrNoSession if
	// there is no such session, and ErrBadSession if a fork of it exists
	// (the fork reads its prefix from it): delete the forks first. A
	// session being written must not be deleted: its writer's next append
	// or checkpoint fails with ErrNoSession, and one in flight may leave
	// keys of no session behind.
	DeleteSession(ctx context.Context, id string) (n int, err error)
}

// Log is an append-only store of sessions and their events. Implementations
// (events/memlog, events/pebblelog) are safe for concurrent use and pass the
// conformance suite in events/logtest.
//
// Every method returns an error wrapping ErrClosed after Close, and
// ctx.Err() if ctx is done when it starts. Session IDs that fail
// ValidSessionID give an error wrapping ErrBadSession.
//
// Interrupted sessions: the Log does not detect crashes and never changes a
// session's metadata by itself. A session whose writer died simply ends at
// its last durable event: every acknowledged Append and PutCheckpoint is
// there, an unacknowledged one may or may not be, and its Status still
// says whatever the writer last stored (usually StatusRunning). Deciding
// that a session is interrupted, and recording StatusInterrupted with
// UpdateSession, is the caller's job (the driver's); so is resuming it:
// restore the state from LatestCheckpoint(LastSeq) (or from the world if
// there is none, ErrNoCheckpoint) and Read the events after the
// checkpoint's Seq.
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
	// Sessions returns the metadata of every session, sorted by ID. When
	// the metadata of some sessions cannot be read, it returns every other
	// session's with a *DamagedError that names each of those.
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
	// Scan is Read without the copies, for a caller that looks at each
	// event once (replay, verification, a report): it calls fn with each
	// of the session's events with Seq >= from, in order, the events Read
	// would yield, and returns nil once the last one is done.
	//
	// The *Event is BORROWED: it and its Payload are valid only until fn
	// returns. The Payload aliases the Log's own buffer (a Pebble block,
	// memlog's stored bytes), so fn must not modify it and must not keep
	// the *Event, the Payload or any sub-slice of it; the next event may
	// overwrite them, and a modified Payload may corrupt the log. To keep
	// an event, keep ev.Clone(). Type, Actor and Session are ordinary
	// strings that may be kept. Decoding a payload (encoding/json, the org
	// decoders) copies what it keeps, so that is safe too.
	//
	// Every event's checksum and canonical encoding are verified before
	// fn sees it: corrupt stored data makes Scan return a *CorruptError
	// naming the session that stores it and the seq, and fn is never
	// called with a corrupt event. If fn returns an error, Scan stops and
	// returns that error unchanged. An unknown session is ErrNoSession;
	// errors of ctx and Close are reported as by Read. Events appended
	// while Scan runs may or may not be seen. fn may call the Log's other
	// methods (a nested Read or Scan, LatestCheckpoint).
	Scan(ctx context.Context, session string, from uint64, fn func(*Event) error) error

	// PutCheckpoint stores cp, a snapshot of the session's state after
	// event cp.Seq, atomically and durably (one synced write, like Append),
	// replacing any checkpoint the session already stores at cp.Seq. cp
	// must be valid (see Checkpoint.Validate) and cp.Seq at most the
	// session's last seq, or PutCheckpoint returns an error wrapping
	// ErrBadCheckpoint. A fork may store checkpoints at seqs of its parent's
	// prefix (<= ForkSeq): they are the fork's own, and its parent does not
	// see them. The Log keeps no reference to cp.Data.
	PutCheckpoint(ctx context.Context, session string, cp Checkpoint) error
	// LatestCheckpoint returns the checkpoint with the greatest Seq <=
	// atOrBefore in the session's history: the session's own checkpoints
	// and, for seqs <= ForkSeq, its parent's, recursively up the fork chain;
	// at equal Seq the session's own wins. It returns an error wrapping
	// ErrNoCheckpoint if there is none. Its cost does not depend on how
	// many events or checkpoints are stored: at most one lookup per level
	// of the fork chain. The returned Data is the caller's.
	//
	// A corrupt stored checkpoint is a *CorruptError of Kind
	// CorruptCheckpoint naming the session that stores it and its Seq.
	// LatestCheckpoint does not skip it; a caller that wants to fall back to
	// an older one asks again with atOrBefore = Seq-1.
	LatestCheckpoint(ctx context.Context, session string, atOrBefore uint64) (Checkpoint, error)
	// Checkpoints returns the Seq and StateHash of each of the session's own
	// checkpoints (not its parent's), by increasing Seq, with Data nil: what
	// replay verification compares. Every stored checksum is verified, so
	// it reads every checkpoint's data; a corrupt checkpoint is reported as
	// by LatestCheckpoint, inside a *DamagedError that comes with every
	// other checkpoint.
	Checkpoints(ctx context.Context, session string) ([]Checkpoint, error)

	// Close releases the Log's resources. Reads in progress stop with
	// ErrClosed.
	Close() error
}
