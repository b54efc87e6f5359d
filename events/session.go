package events

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"maps"
)

// Status is the lifecycle state of a session.
type Status string

// Session statuses.
const (
	StatusRunning     Status = "running"
	StatusFinished    Status = "finished"
	StatusInterrupted Status = "interrupted"
	StatusFailed      Status = "failed"
)

// Valid reports whether s is one of the defined statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusRunning, StatusFinished, StatusInterrupted, StatusFailed:
		return true
	}
	return false
}

// SessionMeta describes a session. It is a plain value; the Log stores a
// copy, and Session and Sessions return fresh copies (Agents included).
//
// A session with a Parent is a fork: it shares its parent's events 1 through
// ForkSeq instead of copying them. Its own events start at ForkSeq+1, and
// Read yields the parent's prefix (with the parent's Session) followed by the
// fork's own events. Parent and ForkSeq are fixed at creation.
type SessionMeta struct {
	ID        string            `json:"id"`
	World     string            `json:"world"`
	WorldHash string            `json:"world_hash"`       // hex SHA-256 of the world file
	Seed      uint64            `json:"seed"`             // the session's root seed
	Agents    map[string]string `json:"agents,omitempty"` // member ID -> agent kind
	Created   string            `json:"created"`          // RFC 3339 wall time, supplied by the caller (the edge)
	Parent    string            `json:"parent,omitempty"`
	ForkSeq   uint64            `json:"fork_seq,omitempty"`
	Status    Status            `json:"status"`
	LastSeq   uint64            `json:"last_seq,omitempty"`   // the last seq, recorded by the writer when the session ends: its end marker (see CheckEnd)
	StateHash string            `json:"state_hash,omitempty"` // final state hash recorded by the live run
	// Reason says why a session is failed or interrupted when its log
	// cannot (e.g. a server that refused to resume it); "" otherwise.
	Reason string `json:"reason,omitempty"`
	// MaxEvents is the budget of events the session was given when it is
	// not the default (run --max-events): a resume, a fork or a reset
	// keeps it unless told another; 0 for the default.
	MaxEvents int `json:"max_events,omitempty"`
}

// ValidSessionID reports whether id can name a session: non-empty, at most
// 64 bytes, only ASCII letters, digits, '_' and '-'. Errors wrap
// ErrBadSession.
func ValidSessionID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: empty session id", ErrBadSession)
	}
	if len(id) > 64 {
		return fmt.Errorf("%w: session id is %d bytes, max 64", ErrBadSession, len(id))
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("%w: session id %q: byte %d (%q) is not in [A-Za-z0-9_-]", ErrBadSession, id, i, c)
		}
	}
	return nil
}

// Validate reports whether m can be stored: a valid ID, a known Status, a
// valid Parent (if any) different from ID, and ForkSeq 0 unless Parent is
// set. Whether the parent exists is checked by the Log. Errors wrap
// ErrBadSession.
func (m *SessionMeta) Validate() error {
	if err := ValidSessionID(m.ID); err != nil {
		return err
	}
	if !m.Status.Valid() {
		return fmt.Errorf("%w: session %s: unknown status %q", ErrBadSession, m.ID, m.Status)
	}
	if m.Parent == "" {
		if m.ForkSeq != 0 {
			return fmt.Errorf("%w: session %s: fork_seq %d without a parent", ErrBadSession, m.ID, m.ForkSeq)
		}
		return nil
	}
	if err := ValidSessionID(m.Parent); err != nil {
		return fmt.Errorf("session %s: parent: %w", m.ID, err)
	}
	if m.Parent == m.ID {
		return fmt.Errorf("%w: session %s is its own parent", ErrBadSession, m.ID)
	}
	return nil
}

// Clone returns a deep copy of m.
func (m *SessionMeta) Clone() SessionMeta {
	c := *m
	if m.Agents != nil {
		c.Agents = maps.Clone(m.Agents)
	}
	return c
}

// EncodeMeta returns the stored form of m: its JSON (map keys sorted, so the
// encoding is deterministic) followed by the CRC-32C (Castagnoli) of the JSON,
// 4 bytes big endian.
func EncodeMeta(m *SessionMeta) ([]byte, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("events: encode session %s: %w", m.ID, err)
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

// MetaBody checks the length and checksum of the stored form written by
// EncodeMeta and returns its JSON, not decoded: what DecodeMeta decodes.
// Errors wrap ErrCorrupt.
func MetaBody(b []byte) ([]byte, error) {
	if len(b) < checksumLen+2 {
		return nil, corruptf("truncated metadata: %d bytes", len(b))
	}
	body := b[:len(b)-checksumLen]
	want := binary.BigEndian.Uint32(b[len(body):])
	if got := crc32.Checksum(body, castagnoli); got != want {
		return nil, corruptf("metadata checksum mismatch: stored %08x, computed %08x", want, got)
	}
	return body, nil
}

// DecodeMeta decodes the stored form written by EncodeMeta into *m,
// replacing all of its fields. It checks the length and checksum before
// parsing. Errors wrap ErrCorrupt; on error *m is unchanged. DecodeMeta never
// panics.
func DecodeMeta(b []byte, m *SessionMeta) error {
	body, err := MetaBody(b)
	if err != nil {
		return err
	}
	var out SessionMeta
	if err := json.Unmarshal(body, &out); err != nil {
		return corruptf("metadata: %v", err)
	}
	*m = out
	return nil
}
