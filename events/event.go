package events

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"
)

// Event is one entry of a session's log. An Event is a plain value: the Log
// copies it on Append and hands out fresh copies from Read, so callers own
// the Events (and Payload bytes) they hold.
type Event struct {
	ID      ulid.ULID       // deterministic, see NewID
	Session string          // not encoded: filled in by the Log from where the event is stored
	Seq     uint64          // gapless per session, starting at 1
	Time    int64           // simulated milliseconds since the world's start
	Type    string          // e.g. "task.claimed"
	Actor   string          // member ID, or "" for the engine
	Cause   uint64          // Seq of the event that led to this one, 0 if none
	Payload json.RawMessage // a JSON object, or empty
}

// Clone returns a copy of e that owns its Payload: what a Log.Scan
// callback keeps of the borrowed event it is given.
func (e *Event) Clone() Event {
	c := *e
	if len(e.Payload) > 0 {
		c.Payload = bytes.Clone(e.Payload)
	} else {
		c.Payload = nil
	}
	return c
}

// NewID makes an event ID deterministically, without reading the wall clock
// or any random source. The ULID timestamp is startUnixMs+simTime, clamped
// to [0, ulid.MaxTime()]; the entropy is IDEntropy(idKey, seq). idKey is a
// per-session key the engine derives from the world hash and seed.
//
// Within one session the ID is a function of (simTime, seq) only, so the
// same seed produces the same IDs run after run.
func NewID(idKey [32]byte, startUnixMs int64, simTime int64, seq uint64) ulid.ULID {
	var ms uint64
	switch sum := startUnixMs + simTime; {
	case simTime > 0 && startUnixMs > math.MaxInt64-simTime: // overflow
		ms = ulid.MaxTime()
	case simTime < 0 && startUnixMs < math.MinInt64-simTime: // underflow
		ms = 0
	case sum < 0:
		ms = 0
	default:
		ms = min(uint64(sum), ulid.MaxTime())
	}
	e := IDEntropy(idKey, seq)
	var id ulid.ULID
	// Neither call can fail: ms is clamped and the entropy is 10 bytes.
	_ = id.SetTime(ms)
	_ = id.SetEntropy(e[:])
	return id
}

// IDEntropy is the 10 random-looking bytes of an event ID: the first 8 are
// mix64(k0 ^ seq), a bijection of seq for a given key, so two events of
// one session never share them; the last 2 mix in the rest of the key.
// mix64 is SplitMix64's finalizer: a few multiplications where a
// cryptographic hash cost a tenth of the engine's time per event. The IDs
// only need to be unique and well spread, not unpredictable.
func IDEntropy(idKey [32]byte, seq uint64) [10]byte {
	k0 := binary.BigEndian.Uint64(idKey[0:])
	k1 := binary.BigEndian.Uint64(idKey[8:])
	k2 := binary.BigEndian.Uint64(idKey[16:])
	k3 := binary.BigEndian.Uint64(idKey[24:])
	hi := mix64(k0 ^ seq)
	lo := mix64(k1 ^ mix64(k2^seq) ^ k3)
	var e [10]byte
	binary.BigEndian.PutUint64(e[:8], hi)
	binary.BigEndian.PutUint16(e[8:], uint16(lo))
	return e
}

func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// Validate reports whether e can be stored: a non-zero ID, a non-empty
// type, valid UTF-8 in Type and Actor, Cause < Seq, and a Payload that is
// empty or a JSON object. It does not check Seq against the log; see
// ValidateBatch. Errors wrap ErrBadBatch.
func (e *Event) Validate() error { return e.validate(true) }

// validate is Validate; with payloads false it leaves the payload unchecked.
func (e *Event) validate(payloads bool) error {
	switch {
	case e.ID.IsZero():
		return fmt.Errorf("%w: seq %d: zero ID", ErrBadBatch, e.Seq)
	case e.Type == "":
		return fmt.Errorf("%w: seq %d: empty type", ErrBadBatch, e.Seq)
	case !utf8.ValidString(e.Type):
		return fmt.Errorf("%w: seq %d: type is not valid UTF-8", ErrBadBatch, e.Seq)
	case !utf8.ValidString(e.Actor):
		return fmt.Errorf("%w: seq %d: actor is not valid UTF-8", ErrBadBatch, e.Seq)
	case e.Cause >= e.Seq && e.Cause != 0:
		return fmt.Errorf("%w: seq %d: cause %d is not an earlier event", ErrBadBatch, e.Seq, e.Cause)
	case payloads && len(e.Payload) > 0 && !isJSONObject(e.Payload):
		return fmt.Errorf("%w: seq %d: payload is not a JSON object", ErrBadBatch, e.Seq)
	}
	return nil
}

func isJSONObject(b []byte) bool {
	t := bytes.TrimLeft(b, " \t\r\n")
	return len(t) > 0 && t[0] == '{' && json.Valid(b)
}

// ValidateBatch reports whether batch is a well-formed Append to session
// after expectedLast: non-empty, Seqs expectedLast+1, expectedLast+2, ...
// without gaps, every event valid (see Event.Validate), and each Session
// either empty or equal to session. Errors wrap ErrBadBatch.
func ValidateBatch(session string, expectedLast uint64, batch []Event) error {
	return validateBatch(session, expectedLast, batch, true)
}

// ValidateTrustedBatch is ValidateBatch without the check that each
// payload is a JSON object: for a writer that made the payloads with a JSON
// encoder itself (the engine), where scanning every payload again cost a
// tenth of a run. Seqs, IDs, types and causes are still checked.
func ValidateTrustedBatch(session string, expectedLast uint64, batch []Event) error {
	return validateBatch(session, expectedLast, batch, false)
}

func validateBatch(session string, expectedLast uint64, batch []Event, payloads bool) error {
	if len(batch) == 0 {
		return fmt.Errorf("%w: empty batch", ErrBadBatch)
	}
	if uint64(len(batch)) > math.MaxUint64-expectedLast {
		return fmt.Errorf("%w: sequence numbers overflow", ErrBadBatch)
	}
	for i := range batch {
		e := &batch[i]
		if want := expectedLast + 1 + uint64(i); e.Seq != want {
			return fmt.Errorf("%w: event %d has seq %d, want %d", ErrBadBatch, i, e.Seq, want)
		}
		if e.Session != "" && e.Session != session {
			return fmt.Errorf("%w: seq %d: event names session %q, appending to %q", ErrBadBatch, e.Seq, e.Session, session)
		}
		if err := e.validate(payloads); err != nil {
			return err
		}
	}
	return nil
}

// eventJSON is the JSON form of Event; it has no methods, so encoding/json
// does not recurse into Event's.
type eventJSON struct {
	ID      ulid.ULID       `json:"id"`
	Session string          `json:"session"`
	Seq     uint64          `json:"seq"`
	Time    int64           `json:"time"`
	Type    string          `json:"type"`
	Actor   string          `json:"actor,omitempty"`
	Cause   uint64          `json:"cause,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// MarshalJSON encodes e as
// {"id":"01H…","session":"…","seq":1,"time":0,"type":"…","actor":"…","cause":0,"payload":{…}},
// omitting actor when empty, cause when 0 and payload when empty.
func (e Event) MarshalJSON() ([]byte, error) {
	return json.Marshal(eventJSON(e))
}

// UnmarshalJSON decodes the form written by MarshalJSON. The ID must be a
// valid 26-character ULID; a null payload decodes as an empty one.
func (e *Event) UnmarshalJSON(b []byte) error {
	if e.unmarshalFast(b) {
		return nil
	}
	return e.unmarshalJSON(b)
}

// unmarshalJSON is UnmarshalJSON with encoding/json, for what
// unmarshalFast does not read.
func (e *Event) unmarshalJSON(b []byte) error {
	var j struct {
		eventJSON
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	id, err := ulid.ParseStrict(j.ID)
	if err != nil {
		return fmt.Errorf("events: event id %q: %w", j.ID, err)
	}
	j.eventJSON.ID = id
	if bytes.Equal(j.Payload, []byte("null")) {
		j.Payload = nil
	}
	*e = Event(j.eventJSON)
	return nil
}
