package agents

import (
	"context"
	"fmt"
	"testing"

	"github.com/corpsim/corpsim/org"
)

// BenchmarkGreedyDesk is one greedy decision at a desk whose observation
// lists 50 open tickets of equal value (a long queue): the pick among
// ties, by a hash of the member and each ticket, is most of its work.
func BenchmarkGreedyDesk(b *testing.B) {
	o := org.Observation{Member: "s07", Turn: 3}
	for i := range 50 {
		o.Available = append(o.Available, org.TaskView{ID: fmt.Sprintf("t-%d", 1000+i), Kind: "ticket",
			Queue: "desk", Role: "server", Value: 1, Effort: 540000, Status: org.StatusOpen})
	}
	g := &Greedy{}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Decide(context.Background(), o); err != nil {
			b.Fatal(err)
		}
	}
}
