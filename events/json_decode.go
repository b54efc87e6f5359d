package events

import (
	"sync"

	"github.com/corpsim/corpsim/events/payload/fastjson"
	"github.com/oklog/ulid/v2"
)

// decoders keeps fastjson Decoders (and their interned strings: a feed's
// session, types and actors recur) between events.
var decoders = sync.Pool{New: func() any { return new(fastjson.Decoder) }}

// Event keys' bits for fastjson.Decoder.Object.
const (
	keyID uint32 = 1 << iota
	keySession
	keySeq
	keyTime
	keyType
	keyActor
	keyCause
	keyPayload
)

// unmarshalFast decodes the JSON form of an event as MarshalJSON and
// AppendJSON write it, without reflection: every key spelled as written,
// given once, and strings without escapes. It reports false on anything
// else, leaving e as it was, for UnmarshalJSON to read with encoding/json
// (so that both read the same input the same way, or refuse it alike).
func (e *Event) unmarshalFast(b []byte) bool {
	d := decoders.Get().(*fastjson.Decoder)
	defer decoders.Put(d)
	if !openObject(b) {
		return false // null, or not an object: encoding/json says what
	}
	d.Reset(b)
	var (
		ev    Event
		hasID bool
	)
	ok := d.Object(func(key []byte) (uint32, bool) {
		switch string(key) {
		case "id":
			raw, ok := d.Plain()
			if !ok || len(raw) != ulid.EncodedSize {
				return keyID, false
			}
			id, err := ulid.ParseStrict(string(raw))
			ev.ID, hasID = id, err == nil
			return keyID, hasID
		case "session":
			return keySession, d.Str(&ev.Session)
		case "seq":
			return keySeq, d.Uint64(&ev.Seq)
		case "time":
			return keyTime, d.Int64(&ev.Time)
		case "type":
			return keyType, d.Str(&ev.Type)
		case "actor":
			return keyActor, d.Str(&ev.Actor)
		case "cause":
			return keyCause, d.Uint64(&ev.Cause)
		case "payload":
			var p []byte
			if !d.Raw(&p, 1) { // inside the event's object
				return keyPayload, false
			}
			if string(p) != "null" {
				ev.Payload = p
			}
			return keyPayload, true
		}
		return 0, false
	})
	if !d.End() || !ok || !hasID {
		return false
	}
	*e = ev
	return true
}

// openObject reports whether b's first byte after whitespace opens an object.
func openObject(b []byte) bool {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c == '{'
	}
	return false
}
