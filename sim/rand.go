package sim

import "github.com/corpsim/corpsim/worlds"

// draw returns the pseudo-random 64-bit value labelled key of a session's
// draws (worlds.Draws: its seed, and its draw key if keyed). Every random
// choice the engine makes is a draw labelled by what it is for, so streams
// are independent, need no state, and survive replay, resume and fork
// unchanged. The key may be a string or the bytes of one: the same text
// draws the same value (the engine builds hot keys in a reused buffer).
func draw[K ~string | ~[]byte](d worlds.Draws, key K) uint64 {
	return worlds.Draw(d, key)
}

// uniform returns a value in [lo, hi] drawn for key.
func uniform[K ~string | ~[]byte](d worlds.Draws, key K, lo, hi int64) int64 {
	if hi <= lo {
		return lo
	}
	return lo + int64(draw(d, key)%uint64(hi-lo+1))
}
