package payload

import (
	"crypto/sha256"
	"encoding/binary"
)

// DrawKeyBytes is the length of a draw key (SessionStarted.DrawKey).
const DrawKeyBytes = sha256.Size

// NewDrawKey is the draw key of a session of seed started with an
// operator's secret: SHA-256 of a label, the secret and the seed. The same
// secret and seed make the same key, so a keyed session is as
// reproducible as an unkeyed one for whoever holds the secret; the key of
// one seed says nothing of another's. An empty secret makes no key (nil):
// the session draws from its seed alone.
func NewDrawKey(secret []byte, seed uint64) []byte {
	if len(secret) == 0 {
		return nil
	}
	h := sha256.New()
	h.Write([]byte("corpsim draw key\x00"))
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(secret)))
	h.Write(n[:])
	h.Write(secret)
	binary.BigEndian.PutUint64(n[:], seed)
	h.Write(n[:])
	return h.Sum(nil)
}
