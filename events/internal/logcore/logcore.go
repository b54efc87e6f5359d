// Package logcore holds the decisions every events.Log implementation makes
// the same way: whether an Append writes, is an idempotent no-op or
// conflicts, and which session stores which part of a fork's history. It is
// pure: callers pass in what they have read from storage.
package logcore

import (
	"bytes"
	"errors"
	"fmt"
	"iter"
	"math"

	"github.com/corpsim/corpsim/events"
)

// ErrMissing is the reason of a *events.CorruptError for an event missing
// from a session's history at or before its last seq.
var ErrMissing = errors.New("event missing")

// StoredFunc returns the encoded event stored at seq in the history of the
// session being appended to, and the session that stores it (a fork's
// prefix is stored by an ancestor). It returns a nil slice if nothing is
// stored at seq.
type StoredFunc func(seq uint64) (b []byte, owner string, err error)

// CheckAppend decides an Append to session whose last seq is last. batch
// must already have passed events.ValidateBatch. It returns write=true when
// the batch should be stored, write=false with a nil error when every event
// of the batch is already stored byte for byte (an idempotent retry), and
// otherwise an error wrapping events.ErrConflict or, if a stored event
// does not decode, a *events.CorruptError.
func CheckAppend(session string, last, expectedLast uint64, batch []events.Event, stored StoredFunc) (write bool, err error) {
	if last == expectedLast {
		return true, nil
	}
	batchLast := expectedLast + uint64(len(batch))
	if last < batchLast {
		return false, conflict(session, expectedLast, last)
	}
	var buf []byte
	for i := range batch {
		e := &batch[i]
		b, owner, err := stored(e.Seq)
		if err != nil {
			return false, err
		}
		if b == nil {
			return false, &events.CorruptError{Session: owner, Seq: e.Seq, Err: ErrMissing}
		}
		buf = events.AppendEncode(buf[:0], e)
		if bytes.Equal(b, buf) {
			continue
		}
		var got events.Event
		if err := events.Decode(b, &got); err != nil {
			return false, &events.CorruptError{Session: owner, Seq: e.Seq, Err: err}
		}
		if got.Seq != e.Seq {
			return false, &events.CorruptError{Session: owner, Seq: e.Seq, Err: fmt.Errorf("stored event has seq %d", got.Seq)}
		}
		what := "a different event"
		if got.ID == e.ID {
			what = "a different event with the same ID"
		}
		return false, fmt.Errorf("%w: session %s: expected last seq %d, actual %d; seq %d holds %s",
			events.ErrConflict, session, expectedLast, last, e.Seq, what)
	}
	return false, nil
}

func conflict(session string, expected, actual uint64) error {
	return fmt.Errorf("%w: session %s: expected last seq %d, actual %d", events.ErrConflict, session, expected, actual)
}

// Segment is a run of seqs [From, To] of a session's history stored by
// Session. To is math.MaxUint64 for the open-ended last segment.
type Segment struct {
	Session  string
	From, To uint64
}

// Plan returns, in seq order, where to read a session's history from seq
// from on. chain[0] is the session's metadata, chain[i+1] that of
// chain[i]'s parent, ending with a session that has no parent. Empty
// segments are left out.
func Plan(chain []events.SessionMeta, from uint64) []Segment {
	from = max(from, 1)
	var segs []Segment
	for i := len(chain) - 1; i >= 0; i-- {
		// chain[i] stores seqs up to the lowest fork point below it: a
		// fork of a fork may branch off inside its grandparent's prefix.
		to := uint64(math.MaxUint64)
		for j := range i {
			to = min(to, chain[j].ForkSeq)
		}
		if chain[i].ForkSeq == math.MaxUint64 {
			continue // nothing of its own can follow
		}
		lo := max(chain[i].ForkSeq+1, from)
		if lo > to {
			continue
		}
		segs = append(segs, Segment{Session: chain[i].ID, From: lo, To: to})
	}
	return segs
}

// CheckUpdate reports whether m may replace old: Parent and ForkSeq are
// immutable. Errors wrap events.ErrBadSession.
func CheckUpdate(old, m *events.SessionMeta) error {
	if old.Parent != m.Parent || old.ForkSeq != m.ForkSeq {
		return fmt.Errorf("%w: session %s: parent and fork_seq cannot change (have %q@%d, got %q@%d)",
			events.ErrBadSession, m.ID, old.Parent, old.ForkSeq, m.Parent, m.ForkSeq)
	}
	return nil
}

// CheckForkPoint reports whether a fork at forkSeq of a parent whose last
// seq is parentLast is valid. Errors wrap events.ErrBadSession.
func CheckForkPoint(m *events.SessionMeta, parentLast uint64) error {
	if m.ForkSeq > parentLast {
		return fmt.Errorf("%w: session %s: fork_seq %d is beyond parent %s's last seq %d",
			events.ErrBadSession, m.ID, m.ForkSeq, m.Parent, parentLast)
	}
	return nil
}

// ReadVia is Read's iterator over a scan: scan calls its fn with each
// event, which must be the caller's own (a copy, not borrowed), in order,
// and returns the scan's error. A consumer that stops early stops the
// scan; any other error is yielded once, after the events before it.
func ReadVia(scan func(fn func(*events.Event) error) error) iter.Seq2[events.Event, error] {
	return func(yield func(events.Event, error) bool) {
		stopped := false
		err := scan(func(e *events.Event) error {
			if !yield(*e, nil) {
				stopped = true
				return errStop
			}
			return nil
		})
		if err != nil && !stopped {
			yield(events.Event{}, err)
		}
	}
}

// errStop ends the scan under a Read whose consumer stopped.
var errStop = errors.New("logcore: stop")

// HasForks is the refusal of DeleteSession for session id, which forks
// read their first events from (forks, sorted).
func HasForks(id string, forks []string) error {
	return &events.ForksError{Session: id, Forks: forks}
}
