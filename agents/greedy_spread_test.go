package agents

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/corpsim/corpsim/org"
)

// tieHash is hash/fnv's 64-bit FNV-1a of member, a zero byte and task.
func TestTieHashIsFNV1a(t *testing.T) {
	for _, c := range [][2]string{{"", ""}, {"bob", "api"}, {"s01", "t-1"}, {"ana", "tickets-17"}, {"\xff\x00", "ü"}} {
		h := fnv.New64a()
		h.Write([]byte(c[0]))
		h.Write([]byte{0})
		h.Write([]byte(c[1]))
		if got, want := tieHash(c[0], c[1]), h.Sum64(); got != want {
			t.Errorf("tieHash(%q, %q): got %x, want %x", c[0], c[1], got, want)
		}
	}
}

// spreadFirst picks what a stable sort of the tasks tied for the highest
// value by tieHash puts first, leaving ts as it was.
func TestSpreadFirstIsTheFirstOfTheTiesSortedByHash(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		ts := make([]org.TaskView, 1+r.IntN(12))
		for i := range ts {
			ts[i] = org.TaskView{ID: fmt.Sprintf("t-%d", r.IntN(40)), Value: float64(3 - r.IntN(3))}
		}
		slices.SortStableFunc(ts, func(a, b org.TaskView) int { return cmp.Compare(b.Value, a.Value) })
		member := fmt.Sprintf("m%d", r.IntN(5))
		before := slices.Clone(ts)
		n := 1
		for n < len(ts) && ts[n].Value == ts[0].Value {
			n++
		}
		ties := slices.Clone(ts[:n])
		slices.SortStableFunc(ties, func(a, b org.TaskView) int {
			return cmp.Compare(tieHash(member, a.ID), tieHash(member, b.ID))
		})
		i := spreadFirst(member, ts)
		if i >= n || ts[i].ID != ties[0].ID {
			t.Fatalf("%s among %v: got %d (%s), want %s", member, ts, i, ts[i].ID, ties[0].ID)
		}
		if !slices.EqualFunc(ts, before, func(a, b org.TaskView) bool { return a.ID == b.ID && a.Value == b.Value }) {
			t.Fatal("spreadFirst changed the tasks it was given")
		}
	}
}
