// Package clean is a fixture of the purity check (tests/purity_test.go):
// code that looks like what the check reports but is deterministic. The
// check must find nothing here. It is never built into anything.
package clean

import (
	"maps"
	"math/rand"
	randv2 "math/rand/v2"
	"slices"
	"time"

	"github.com/oklog/ulid/v2"
)

// Clock has a Now of its own.
type Clock struct{ now time.Time }

// Now is the clock's time, not the wall clock's.
func (c *Clock) Now() time.Time { return c.now }

// Now is a function of this package, not of time.
func Now() int64 { return 0 }

// Times uses time's types and pure functions only.
func Times(c *Clock) (time.Duration, int64) {
	t := time.Unix(0, 0).UTC().Add(90 * time.Minute)
	d := c.Now().Sub(t) + time.Duration(Now())
	at, _ := time.ParseInLocation(time.RFC3339, "2026-01-05T09:00:00Z", time.UTC)
	return d, at.UnixMilli()
}

// Rand draws from generators made from a seed.
func Rand(seed uint64, xs []int) int {
	r := rand.New(rand.NewSource(int64(seed)))
	r.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] })
	r2 := randv2.New(randv2.NewPCG(seed, 1))
	return r.Intn(10) + r2.IntN(10) + int(randv2.NewZipf(r2, 1.5, 1, 10).Uint64())
}

// ID makes a ULID from a given time and entropy.
func ID(ms uint64, entropy [10]byte) ulid.ULID {
	var id ulid.ULID
	_ = id.SetTime(min(ms, ulid.MaxTime()))
	_ = id.SetEntropy(entropy[:])
	return id
}

// Maps uses maps in ways whose order cannot reach the result.
func Maps(m map[string]int, ch chan int) []string {
	keys := slices.Sorted(maps.Keys(m))
	n := 0
	for range m {
		n++
	}
	// order: counting; each entry adds one
	for _, v := range m {
		n += v
	}
	c := map[string]int{}
	// A longer comment block above the loop,
	// order: each entry is copied into its own key
	// with the marker in its middle.
	for k, v := range m {
		c[k] = v
	}
	for k := range m { // order: deletes are independent of each other
		delete(c, k)
	}
	maps.Copy(c, m)
	for _, k := range keys {
		n += m[k]
	}
	for i := range 3 {
		n += i
	}
	for x := range ch {
		n += x
	}
	for _, r := range "abc" {
		n += int(r)
	}
	return append(keys, string(rune(n)))
}
