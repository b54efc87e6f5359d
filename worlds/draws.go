package worlds

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
)

// Draws makes the random draws of a session: every random choice is a
// draw labelled by what it is for (a member's hidden rule, a record's
// field, a ticket's arrival), so draws need no state and a label draws the
// same value in a replay, a resume and a fork.
//
// An unkeyed session's draws are splitmix64 of its seed and the label's
// FNV-1a hash: anyone who knows the seed knows every draw. A session keyed
// with an operator's secret (its draw key, payload.NewDrawKey) draws with
// AES-256 under that key, over the seed and the label's hash: seeing
// draws (calendars, arrival times) tells nothing of the others without
// breaking AES. (A keyed generator of 64 bits over splitmix64 was worked
// back from arrival times in minutes: splitmix64 can be inverted.)
type Draws struct {
	seed  uint64
	block cipher.Block // nil: unkeyed
}

// NewDraws returns the draws of a session going on with seed, keyed with
// key (a draw key of 32 bytes; nil or empty: unkeyed). It panics on a key
// of another length: callers check keys where they read them.
func NewDraws(seed uint64, key []byte) Draws {
	if len(key) == 0 {
		return Draws{seed: seed}
	}
	b, err := aes.NewCipher(key)
	if err != nil || len(key) != 32 {
		panic("worlds: a draw key must be 32 bytes")
	}
	return Draws{seed: seed, block: b}
}

// Seed is the seed the draws go on with.
func (d Draws) Seed() uint64 { return d.seed }

// Keyed reports whether the draws are keyed.
func (d Draws) Keyed() bool { return d.block != nil }

// Draw returns the 64-bit draw labelled label. The label may be a string
// or the bytes of one: the same text draws the same value.
func Draw[L ~string | ~[]byte](d Draws, label L) uint64 {
	h := uint64(14695981039346656037) // FNV-1a over the label
	for i := 0; i < len(label); i++ {
		h ^= uint64(label[i])
		h *= 1099511628211
	}
	if d.block != nil {
		return d.keyed(h)
	}
	return splitmix64(d.seed ^ splitmix64(h))
}

// keyed is a keyed draw of the label hashed h: the first 8 bytes of the
// AES block of the seed and h.
func (d Draws) keyed(h uint64) uint64 {
	var b [aes.BlockSize]byte
	binary.LittleEndian.PutUint64(b[:8], d.seed)
	binary.LittleEndian.PutUint64(b[8:], h)
	d.block.Encrypt(b[:], b[:])
	return binary.LittleEndian.Uint64(b[:8])
}

// Unit returns the draw labelled label as a number in [0, 1).
func (d Draws) Unit(label string) float64 {
	return float64(Draw(d, label)>>11) / (1 << 53)
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
