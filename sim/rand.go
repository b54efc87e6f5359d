package sim

// draw returns a pseudo-random 64-bit value for (seed, key). Every random
// choice the engine makes is a draw keyed by what it is for, so streams are
// independent, need no state, and survive replay, resume and fork unchanged.
// The key may be a string or the bytes of one: the same text draws the
// same value (the engine builds hot keys in a reused buffer).
func draw[K ~string | ~[]byte](seed uint64, key K) uint64 {
	h := uint64(14695981039346656037) // FNV-1a over the key
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= 1099511628211
	}
	return splitmix(seed ^ splitmix(h))
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// uniform returns a value in [lo, hi] drawn for (seed, key).
func uniform[K ~string | ~[]byte](seed uint64, key K, lo, hi int64) int64 {
	if hi <= lo {
		return lo
	}
	return lo + int64(draw(seed, key)%uint64(hi-lo+1))
}
