package events

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Checkpoint is a snapshot of a session's state after event Seq: the
// engine's state, serialized by the engine, and its state hash. Resume,
// reset and fork start from the nearest checkpoint instead of event 1, and
// replay verification compares the hash it computes at Seq with StateHash.
//
// A Checkpoint is a plain value: the Log copies Data on PutCheckpoint and
// hands out fresh copies, so callers own the Data they hold.
type Checkpoint struct {
	Seq       uint64 // the last event the snapshot includes; >= 1
	StateHash string // lowercase hex, e.g. the hex SHA-256 of the state
	Data      []byte // opaque to the log; may be empty
}

// MaxStateHashLen is the longest StateHash a Checkpoint may carry: 64
// bytes of hash, in hex.
const MaxStateHashLen = 128

// Validate reports whether cp can be stored: Seq >= 1 and a StateHash of
// 1 to MaxStateHashLen lowercase hex digits, of even length. It does not
// check Seq against the log. Errors wrap ErrBadCheckpoint.
func (cp *Checkpoint) Validate() error {
	if cp.Seq == 0 {
		return fmt.Errorf("%w: seq 0 (a checkpoint follows an event)", ErrBadCheckpoint)
	}
	h := cp.StateHash
	if h == "" || len(h) > MaxStateHashLen || len(h)%2 != 0 {
		return fmt.Errorf("%w: seq %d: state hash is %d characters, want an even number from 2 to %d",
			ErrBadCheckpoint, cp.Seq, len(h), MaxStateHashLen)
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return fmt.Errorf("%w: seq %d: state hash %q: byte %d (%q) is not a lowercase hex digit",
				ErrBadCheckpoint, cp.Seq, h, i, c)
		}
	}
	return nil
}

// CheckpointVersion is the codec version written as the first byte of every
// encoded checkpoint: 0xC1, checkpoint format 1. It differs from the event
// codec's Version, so a stored event never passes for a checkpoint or a
// checkpoint for an event, though both end in the same kind of checksum.
const CheckpointVersion = 0xC1

// minCheckpointLen is the length of the smallest possible encoding: version,
// two one-byte uvarints (seq, hash length) and the checksum.
const minCheckpointLen = 1 + 2 + checksumLen

// EncodedCheckpointLen returns len(EncodeCheckpoint(cp)).
func EncodedCheckpointLen(cp *Checkpoint) int {
	return 1 + uvarintLen(cp.Seq) + uvarintLen(uint64(len(cp.StateHash))) + len(cp.StateHash) +
		len(cp.Data) + checksumLen
}

// AppendEncodeCheckpoint appends the stored form of cp to dst and returns
// the extended slice. The layout is
//
//	[version byte 0xC1][uvarint seq][uvarint len][state hash][data]
//	[CRC-32C (Castagnoli) of all preceding bytes, 4 bytes big endian]
//
// The length of data is what remains before the checksum. The same
// Checkpoint always encodes to the same bytes.
func AppendEncodeCheckpoint(dst []byte, cp *Checkpoint) []byte {
	start := len(dst)
	dst = append(dst, CheckpointVersion)
	dst = binary.AppendUvarint(dst, cp.Seq)
	dst = binary.AppendUvarint(dst, uint64(len(cp.StateHash)))
	dst = append(dst, cp.StateHash...)
	dst = append(dst, cp.Data...)
	return binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
}

// EncodeCheckpoint returns the stored form of cp; see AppendEncodeCheckpoint.
func EncodeCheckpoint(cp *Checkpoint) []byte {
	return AppendEncodeCheckpoint(make([]byte, 0, EncodedCheckpointLen(cp)), cp)
}

// DecodeCheckpoint decodes b, one checkpoint in the form written by
// AppendEncodeCheckpoint, into *cp, replacing all of its fields. The
// decoded Data is a copy and does not alias b; empty data decodes as nil.
//
// It checks the length, the version and the checksum before anything else
// and accepts only canonical encodings. Errors wrap ErrCorrupt and name the
// reason, e.g. "checkpoint checksum mismatch"; Log implementations return
// them inside a *CorruptError of Kind CorruptCheckpoint. On error *cp is
// unchanged. DecodeCheckpoint never panics.
func DecodeCheckpoint(b []byte, cp *Checkpoint) error {
	return decodeCheckpoint(b, cp, true)
}

// DecodeCheckpointHeader is DecodeCheckpoint without the data: it verifies
// the checksum over all of b, but leaves cp.Data nil.
func DecodeCheckpointHeader(b []byte, cp *Checkpoint) error {
	return decodeCheckpoint(b, cp, false)
}

func decodeCheckpoint(b []byte, cp *Checkpoint, withData bool) error {
	if len(b) < minCheckpointLen {
		return corruptf("truncated checkpoint: %d bytes, need at least %d", len(b), minCheckpointLen)
	}
	if b[0] != CheckpointVersion {
		return corruptf("unknown checkpoint version %d", b[0])
	}
	body := b[:len(b)-checksumLen]
	want := binary.BigEndian.Uint32(b[len(body):])
	if got := crc32.Checksum(body, castagnoli); got != want {
		return corruptf("checkpoint checksum mismatch: stored %08x, computed %08x", want, got)
	}
	d := decoder{b: body[1:]}
	var out Checkpoint
	out.Seq = d.uvarint("checkpoint seq")
	out.StateHash = string(d.bytes("checkpoint state hash"))
	if d.err != nil {
		return d.err
	}
	if withData && len(d.b) > 0 {
		out.Data = append(make([]byte, 0, len(d.b)), d.b...)
	}
	*cp = out
	return nil
}
