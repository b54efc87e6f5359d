// Package dirty is a fixture of the purity check (tests/purity_test.go): it
// has one of every kind of finding, each marked on its line with a comment
// "want: <kind>" (or, where the finding is on the next line, "want below:").
// It is never built into anything.
package dirty

import (
	crand "crypto/rand" // want: import
	"maps"
	"math/rand"
	randv2 "math/rand/v2"
	_ "net"      // want: import
	_ "net/http" // want: import
	"os"         // want: import
	_ "os/exec"  // want: import
	"slices"
	_ "syscall" // want: import
	wall "time"

	_ "github.com/cockroachdb/pebble/v2"         // want: import
	_ "github.com/nats-io/nats-server/v2/server" // want: import
	_ "github.com/nats-io/nats.go"               // want: import
	"github.com/oklog/ulid/v2"

	_ "github.com/corpsim/corpsim/events/pebblelog" // want: import
)

// Clock reads the wall clock in every way the check knows.
func Clock() wall.Duration {
	start := wall.Now()             // want: time
	wall.Sleep(wall.Millisecond)    // want: time
	<-wall.After(wall.Millisecond)  // want: time
	_ = wall.Tick(wall.Second)      // want: time
	t := wall.NewTimer(wall.Second) // want: time
	t.Stop()
	k := wall.NewTicker(wall.Second) // want: time
	k.Stop()
	wall.AfterFunc(wall.Second, func() {}).Stop() // want: time
	_ = wall.Until(start)                         // want: time
	now := wall.Now                               // want: time
	_ = now
	return wall.Since(start) // want: time
}

// Rand draws from the global sources.
func Rand(xs []int) int {
	rand.Seed(1)                                                          // want: rand
	rand.Shuffle(len(xs), func(i, j int) { xs[i], xs[j] = xs[j], xs[i] }) // want: rand
	n := rand.Intn(10) + int(rand.Int63())                                // want: rand,rand
	n += randv2.IntN(10)                                                  // want: rand
	n += randv2.N(10)                                                     // want: rand
	_, _ = crand.Read(make([]byte, 4))
	return n
}

// IDs makes ULIDs from the wall clock.
func IDs() []ulid.ULID {
	a := ulid.Make()                                                     // want: ulid
	b := ulid.MustNew(ulid.Now(), ulid.DefaultEntropy())                 // want: ulid,ulid
	c := ulid.MustNew(ulid.Timestamp(wall.Now()), ulid.DefaultEntropy()) // want: time,ulid
	return []ulid.ULID{a, b, c}
}

// Go starts a goroutine.
func Go() {
	go func() {}() // want: go
}

// Weights is a named map type.
type Weights map[string]float64

// Maps lets map order reach what it returns.
func Maps(m map[string]int, w Weights) ([]string, float64) {
	var out []string
	for k := range m { // want: maprange
		out = append(out, k)
	}
	sum := 0.0
	for _, x := range w { // want: maprange
		sum += x
	}
	for k := range maps.Keys(m) { // want: maprange
		out = append(out, k)
	}
	out = append(out, slices.Collect(maps.Keys(m))...) // want: maprange
	// want below: marker
	// order:
	for k, v := range m {
		out = append(out, k+string(rune(v)))
	}
	// want below: marker
	// order: a marker on a loop over a slice explains nothing
	for _, s := range out {
		sum += float64(len(s))
	}
	_ = os.Args
	return out, sum + Sum(w)
}

// Sum ranges over a map of a type parameter.
func Sum[M ~map[K]float64, K comparable](m M) float64 {
	s := 0.0
	for _, v := range m { // want: maprange
		s += v
	}
	return s
}
