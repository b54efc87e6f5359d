package events

import (
	"encoding/binary"
	"hash/crc32"
)

// Version is the codec version written as the first byte of every encoded
// event.
const Version = 1

const (
	idLen       = 16
	checksumLen = 4
	// minEncodedLen is the length of the smallest possible encoding: version,
	// ID, six one-byte varints (seq, time, cause and three zero lengths) and
	// the checksum.
	minEncodedLen = 1 + idLen + 6 + checksumLen
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EncodedLen returns len(Encode(e)).
func EncodedLen(e *Event) int {
	return 1 + idLen +
		uvarintLen(e.Seq) + uvarintLen(zigzag(e.Time)) + uvarintLen(e.Cause) +
		uvarintLen(uint64(len(e.Type))) + len(e.Type) +
		uvarintLen(uint64(len(e.Actor))) + len(e.Actor) +
		uvarintLen(uint64(len(e.Payload))) + len(e.Payload) +
		checksumLen
}

// AppendEncode appends the canonical binary encoding of e to dst and returns
// the extended slice. It does not allocate when dst has EncodedLen(e) bytes
// of spare capacity. e.Session is not encoded.
//
// The layout is
//
//	[version byte 1][16-byte ULID][uvarint seq][varint time][uvarint cause]
//	[uvarint len][type][uvarint len][actor][uvarint len][payload]
//	[CRC-32C (Castagnoli) of all preceding bytes, 4 bytes big endian]
//
// The same Event always encodes to the same bytes.
func AppendEncode(dst []byte, e *Event) []byte {
	start := len(dst)
	dst = append(dst, Version)
	dst = append(dst, e.ID[:]...)
	dst = binary.AppendUvarint(dst, e.Seq)
	dst = binary.AppendVarint(dst, e.Time)
	dst = binary.AppendUvarint(dst, e.Cause)
	dst = binary.AppendUvarint(dst, uint64(len(e.Type)))
	dst = append(dst, e.Type...)
	dst = binary.AppendUvarint(dst, uint64(len(e.Actor)))
	dst = append(dst, e.Actor...)
	dst = binary.AppendUvarint(dst, uint64(len(e.Payload)))
	dst = append(dst, e.Payload...)
	return binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// Encode returns the canonical binary encoding of e; see AppendEncode.
func Encode(e *Event) []byte {
	return AppendEncode(make([]byte, 0, EncodedLen(e)), e)
}

// Decode decodes b, which must be exactly one encoded event, into *e,
// replacing all of its fields; e.Session is set to "" (the Log fills it in).
// The decoded Payload is a copy and does not alias b; an empty payload
// decodes as nil.
//
// Decode checks the length, the version and the checksum before anything
// else, and accepts only canonical encodings: every b it accepts satisfies
// bytes.Equal(Encode(e), b). Errors wrap ErrCorrupt and name the reason, e.g.
// "events: corrupt event: checksum mismatch". On error *e is unchanged.
// Decode never panics.
func Decode(b []byte, e *Event) error { return (*Decoder)(nil).Decode(b, e) }

// Decoder decodes events as Decode does, for a long read: it reuses the
// type and actor strings it has seen (a session has a handful of each) and
// carves payloads out of shared blocks, so a read allocates a few large
// blocks instead of three small objects per event. A nil *Decoder is
// Decode. Not safe for concurrent use.
//
// DecodeBorrowed goes further for a scan that looks at each event once: it
// copies no payload at all.
type Decoder struct {
	strs  map[string]string
	arena []byte
	// recent caches interned strings by a cheap hash of their bytes, so
	// that most types and actors are found without hashing them for the
	// map: a session has a few dozen of each.
	recent [64]string
}

// decoderBlock is the size of the blocks a Decoder carves payloads from.
const decoderBlock = 64 << 10

// str returns b as a string, interned.
func (dd *Decoder) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	slot := &dd.recent[(len(b)*7+int(b[0])+int(b[len(b)-1])*31)&(len(dd.recent)-1)]
	if *slot == string(b) { // does not allocate
		return *slot
	}
	s, ok := dd.strs[string(b)]
	if !ok {
		s = string(b)
		if dd.strs == nil {
			dd.strs = map[string]string{}
		}
		if len(dd.strs) < 4096 && len(b) <= 64 {
			dd.strs[s] = s
		}
	}
	*slot = s
	return s
}

func (dd *Decoder) payload(p []byte) []byte {
	if dd == nil || len(p) > decoderBlock/8 {
		return append(make([]byte, 0, len(p)), p...)
	}
	if cap(dd.arena)-len(dd.arena) < len(p) {
		dd.arena = make([]byte, 0, decoderBlock)
	}
	start := len(dd.arena)
	dd.arena = append(dd.arena, p...)
	return dd.arena[start:len(dd.arena):len(dd.arena)]
}

// Decode decodes one event like the package's Decode.
func (dd *Decoder) Decode(b []byte, e *Event) error { return dd.decode(b, e, false) }

// DecodeBorrowed decodes one event like Decode, with the same checks
// (length, version, checksum, canonical fields), except that e.Payload
// aliases b instead of being a copy: it is valid only as long as b is
// and must not be modified. Type and Actor are ordinary strings (interned
// by dd, or fresh when dd is nil) that the caller may keep. It does not
// allocate once dd has seen the event's type and actor.
func (dd *Decoder) DecodeBorrowed(b []byte, e *Event) error { return dd.decode(b, e, true) }

func (dd *Decoder) decode(b []byte, e *Event, borrow bool) error {
	if len(b) < minEncodedLen {
		return corruptf("truncated: %d bytes, need at least %d", len(b), minEncodedLen)
	}
	if b[0] != Version {
		return corruptf("unknown version %d", b[0])
	}
	body := b[:len(b)-checksumLen]
	want := binary.BigEndian.Uint32(b[len(body):])
	if got := crc32.Checksum(body, castagnoli); got != want {
		return corruptf("checksum mismatch: stored %08x, computed %08x", want, got)
	}
	var out Event
	typ, actor, p, ok := parseBody(body[1:], &out)
	if !ok {
		// parseBody does not say why; decodeBody does. It accepts
		// exactly what parseBody accepts (FuzzParseBody).
		var err error
		if typ, actor, p, err = decodeBody(body[1:], &out); err != nil {
			return err
		}
	}
	// Field by field rather than *e = out: this is the hot path of a scan.
	e.ID, e.Session, e.Seq, e.Time, e.Cause = out.ID, "", out.Seq, out.Time, out.Cause
	if dd == nil {
		e.Type, e.Actor = string(typ), string(actor)
	} else {
		e.Type = dd.str(typ)
		e.Actor = dd.str(actor)
	}
	switch {
	case len(p) == 0:
		e.Payload = nil
	case borrow:
		e.Payload = p[:len(p):len(p)]
	default:
		e.Payload = dd.payload(p)
	}
	return nil
}

// parseBody reads the fields after the version byte of a checksummed
// event into out (ID, Seq, Time, Cause) and returns the type, actor and
// payload bytes, which alias b. It is decodeBody's fast path: ok is false
// for anything decodeBody rejects, with no reason given.
func parseBody(b []byte, out *Event) (typ, actor, payload []byte, ok bool) {
	if len(b) < idLen {
		return nil, nil, nil, false
	}
	// Three varints, then three length-prefixed fields; a one-byte varint
	// (most of them) is read inline.
	var v [6]uint64
	i := idLen
	for k := range v {
		if i < len(b) && b[i] < 0x80 {
			v[k] = uint64(b[i])
			i++
		} else {
			x, n := uvarintLong(b[i:])
			if n == 0 {
				return nil, nil, nil, false
			}
			v[k] = x
			i += n
		}
		if k < 3 {
			continue
		}
		if v[k] > uint64(len(b)-i) {
			return nil, nil, nil, false
		}
		end := i + int(v[k])
		switch k {
		case 3:
			typ = b[i:end:end]
		case 4:
			actor = b[i:end:end]
		default:
			payload = b[i:end:end]
		}
		i = end
	}
	if i != len(b) {
		return nil, nil, nil, false
	}
	copy(out.ID[:], b[:idLen])
	out.Seq, out.Time, out.Cause = v[0], unzigzag(v[1]), v[2]
	return typ, actor, payload, true
}

// uvarintLong reads the canonical (minimal) uvarint at the start of b, of
// 2 bytes or more, and returns it and its length, or n == 0 if there is
// none. parseBody reads one-byte varints itself.
func uvarintLong(b []byte) (uint64, int) {
	if len(b) >= 2 && b[0] >= 0x80 && b[1] < 0x80 {
		if b[1] == 0 {
			return 0, 0 // non-minimal
		}
		return uint64(b[0]&0x7f) | uint64(b[1])<<7, 2
	}
	var x uint64
	var s uint
	for i := 0; i < binary.MaxVarintLen64 && i < len(b); i++ {
		c := b[i]
		if c < 0x80 {
			if i == 0 || (i == binary.MaxVarintLen64-1 && c > 1) || c == 0 { // empty; overflow; non-minimal
				return 0, 0
			}
			return x | uint64(c)<<s, i + 1
		}
		x |= uint64(c&0x7f) << s
		s += 7
	}
	return 0, 0
}

// decodeBody is parseBody with the reason for a failure.
func decodeBody(b []byte, out *Event) (typ, actor, payload []byte, err error) {
	d := decoder{b: b}
	copy(out.ID[:], d.b[:idLen]) // len(b) >= idLen: the caller checked minEncodedLen
	d.b = d.b[idLen:]
	out.Seq = d.uvarint("seq")
	out.Time = unzigzag(d.uvarint("time"))
	out.Cause = d.uvarint("cause")
	typ = d.bytes("type")
	actor = d.bytes("actor")
	payload = d.bytes("payload")
	if d.err == nil && len(d.b) != 0 {
		d.err = corruptf("%d trailing bytes", len(d.b))
	}
	return typ, actor, payload, d.err
}

// decoder reads fields from a checksummed body, remembering the first error;
// after an error every read returns the zero value.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint(field string) uint64 { return d.uvarintOf(field, "") }

// uvarintOf reads a varint; field and suffix name it in an error (kept
// apart so that the common, error-free path builds no string).
func (d *decoder) uvarintOf(field, suffix string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	switch {
	case n == 0:
		d.err = corruptf("truncated in %s%s", field, suffix)
		return 0
	case n < 0:
		d.err = corruptf("%s%s overflows 64 bits", field, suffix)
		return 0
	case n > 1 && d.b[n-1] == 0:
		// A multi-byte varint ending in a zero byte has a shorter encoding.
		d.err = corruptf("non-minimal varint in %s%s", field, suffix)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes(field string) []byte {
	l := d.uvarintOf(field, " length")
	if d.err != nil {
		return nil
	}
	if l > uint64(len(d.b)) {
		d.err = corruptf("truncated in %s: length %d, %d bytes left", field, l, len(d.b))
		return nil
	}
	p := d.b[:l]
	d.b = d.b[l:]
	return p
}

func zigzag(v int64) uint64   { return uint64(v<<1) ^ uint64(v>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}
