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
type Decoder struct {
	strs  map[string]string
	arena []byte
}

// decoderBlock is the size of the blocks a Decoder carves payloads from.
const decoderBlock = 64 << 10

func (dd *Decoder) str(b []byte) string {
	if dd == nil {
		return string(b)
	}
	if s, ok := dd.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	if dd.strs == nil {
		dd.strs = map[string]string{}
	}
	if len(dd.strs) < 4096 && len(b) <= 64 {
		dd.strs[s] = s
	}
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
func (dd *Decoder) Decode(b []byte, e *Event) error {
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

	d := decoder{b: body[1:]}
	var out Event
	copy(out.ID[:], d.b[:idLen]) // len(body) >= 1+idLen, checked above
	d.b = d.b[idLen:]
	out.Seq = d.uvarint("seq")
	out.Time = unzigzag(d.uvarint("time"))
	out.Cause = d.uvarint("cause")
	out.Type = dd.str(d.bytes("type"))
	out.Actor = dd.str(d.bytes("actor"))
	if p := d.bytes("payload"); len(p) > 0 && d.err == nil {
		out.Payload = dd.payload(p)
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = corruptf("%d trailing bytes", len(d.b))
	}
	if d.err != nil {
		return d.err
	}
	*e = out
	return nil
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
