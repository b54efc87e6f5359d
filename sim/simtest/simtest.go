// Package simtest has what tests of several packages need to run an engine
// in process: the built-in agents as turn answerers, a session's events,
// and the observations of random agents on the shipped worlds. It is for
// tests only (it takes a testing.TB), like net/http/httptest.
package simtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

// Buffer is a bytes.Buffer safe for concurrent use: what a process or a
// logger writes while the test reads it.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Source is the file of the shipped world name.
func Source(tb testing.TB, name string) []byte {
	tb.Helper()
	src, err := worlds.Source(name)
	if err != nil {
		tb.Fatal(err)
	}
	return src
}

// DeskWorld is the support-desk-bench world cut to n tickets, and its
// source.
func DeskWorld(tb testing.TB, n int) (*worlds.World, []byte) {
	tb.Helper()
	src, err := worlds.Source("support-desk-bench")
	if err != nil {
		tb.Fatal(err)
	}
	src = bytes.Replace(src, []byte("count: 200000"), []byte(fmt.Sprintf("count: %d", n)), 1)
	w, err := worlds.Load("bench.yaml", src)
	if err != nil {
		tb.Fatal(err)
	}
	return w, src
}

// ShippedOver is the source of shipped world name over horizon (such as
// "28d") instead of its own, and the world it loads to: a session longer
// than its world, where budgets run out and backlogs build.
func ShippedOver(tb testing.TB, name, horizon string) (*worlds.World, []byte) {
	tb.Helper()
	src, err := worlds.Source(name)
	if err != nil {
		tb.Fatal(err)
	}
	src = regexp.MustCompile(`(?m)^horizon: .*$`).ReplaceAll(src, []byte("horizon: "+horizon))
	w, err := worlds.Load(name+".yaml", src)
	if err != nil {
		tb.Fatal(err)
	}
	return w, src
}

// Greedy answers a turn as the built-in greedy agent does.
func Greedy(t sim.Turn) (sim.Answer, bool) {
	acts, _ := (&agents.Greedy{}).Decide(context.Background(), t.Observation)
	return sim.Answer{Member: t.Member, Turn: t.Observation.Turn, Actions: acts}, true
}

// Mixed answers as the built-in random agent (seeded with seed, one per
// member) on every every-th turn of a member, and as the greedy agent on
// the others: greedy play that keeps making the random agent's mistakes
// (claims refused, records written, handoffs, cases closed wrongly).
func Mixed(every int, seed uint64) func(sim.Turn) (sim.Answer, bool) {
	seats := map[string]*agents.Random{}
	return func(t sim.Turn) (sim.Answer, bool) {
		if t.Observation.Turn%uint64(every) != 0 {
			return Greedy(t)
		}
		a := seats[t.Member]
		if a == nil {
			a = agents.NewRandom(seed, t.Member)
			seats[t.Member] = a
		}
		acts, _ := a.Decide(context.Background(), t.Observation)
		return sim.Answer{Member: t.Member, Turn: t.Observation.Turn, Actions: acts}, true
	}
}

// Events plays a started engine to its end with greedy agents and returns
// its events.
func Events(tb testing.TB, e *sim.Engine) []events.Event {
	tb.Helper()
	var out []events.Event
	if err := sim.Play(e, func(b []events.Event) bool { out = append(out, b...); return true }, Greedy, 0); err != nil {
		tb.Fatal(err)
	}
	return out
}

// Batches is Events, keeping the engine's batches apart.
func Batches(tb testing.TB, e *sim.Engine) [][]events.Event {
	tb.Helper()
	var out [][]events.Event
	if err := sim.Play(e, func(b []events.Event) bool { out = append(out, slices.Clone(b)); return true }, Greedy, 0); err != nil {
		tb.Fatal(err)
	}
	return out
}

// ShippedWorlds are the shipped worlds small enough to play in a unit test
// (support-desk-bench, 200,000 tickets, is left out).
var ShippedWorlds = []string{"startup", "procurement", "product-launch", "portfolio", "support-desk"}

// Shipped loads every shipped world but support-desk-bench (200,000
// tickets), by name: the worlds a test plays in full.
func Shipped(tb testing.TB) map[string]*worlds.World {
	tb.Helper()
	ws := map[string]*worlds.World{}
	for _, name := range worlds.Names() {
		if name == "support-desk-bench" {
			continue
		}
		w, err := worlds.Shipped(name)
		if err != nil {
			tb.Fatal(err)
		}
		ws[name] = w
	}
	return ws
}

// RandomObservations plays ShippedWorlds with random agents (whose
// mistakes fill every list of an observation) for at most maxTurns turns
// each, and returns the JSON of every observation they saw, as the driver
// sends it.
func RandomObservations(tb testing.TB, seed uint64, maxTurns int) [][]byte {
	tb.Helper()
	var out [][]byte
	for _, name := range ShippedWorlds {
		w, err := worlds.Shipped(name)
		if err != nil {
			tb.Fatal(err)
		}
		e, err := sim.New(sim.Config{World: w, Seed: seed, Session: "s-" + name})
		if err != nil {
			tb.Fatal(err)
		}
		e.Start()
		seats := map[string]*agents.Random{}
		turns := 0
		err = sim.Play(e, nil, func(t sim.Turn) (sim.Answer, bool) {
			data, err := json.Marshal(t.Observation)
			if err != nil {
				tb.Fatal(err)
			}
			out = append(out, data)
			a := seats[t.Member]
			if a == nil {
				a = agents.NewRandom(seed, t.Member)
				seats[t.Member] = a
			}
			acts, _ := a.Decide(context.Background(), t.Observation)
			turns++
			return sim.Answer{Member: t.Member, Turn: t.Observation.Turn, Actions: acts}, turns < maxTurns
		}, 0)
		if err != nil && !errors.Is(err, sim.ErrStopped) {
			tb.Fatal(err)
		}
	}
	return out
}

// GoroutineID returns the ID of the calling goroutine, from the first line
// of its stack ("goroutine 7 [running]:"): what a test compares to tell on
// which goroutine something ran (an agent deciding, a log appending).
func GoroutineID() string {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	id, ok := strings.CutPrefix(string(buf), "goroutine ")
	if i := strings.IndexByte(id, ' '); ok && i > 0 {
		return id[:i]
	}
	panic(fmt.Sprintf("simtest: a stack that does not begin with its goroutine: %q", buf))
}

// Started loads world src (as the file name) and starts a session of it
// with seed (session "s"), its agents to be played by the test.
func Started(tb testing.TB, name string, src []byte, seed uint64) (*sim.Engine, *worlds.World) {
	tb.Helper()
	w, err := worlds.Load(name, src)
	if err != nil {
		tb.Fatal(err)
	}
	e, err := sim.New(sim.Config{World: w, Source: src, Seed: seed, Session: "s"})
	if err != nil {
		tb.Fatal(err)
	}
	e.Start()
	return e, w
}
