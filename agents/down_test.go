package agents_test

import (
	"slices"
	"testing"

	"github.com/corpsim/corpsim/agents"
	"github.com/corpsim/corpsim/clock"
	"github.com/corpsim/corpsim/org"
)

// TestGreedyWaitsForAQueueThatIsDown: work held in a queue that is down
// is left until the queue is back (the rules refuse it until then).
// Greedy does the other work it can, and when there is none it waits for
// something to change (the queue's coming back wakes it), not a turn at a
// time: in product-launch an outage of the engineering queue had two
// greedy engineers asking to work, and refused, every simulated minute for
// two and a half hours. The wait has no end: a wait until the queue is
// back would sleep through approvals, messages and tickets meanwhile.
func TestGreedyWaitsForAQueueThatIsDown(t *testing.T) {
	greedy, err := agents.New("greedy", agents.Options{Member: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	back := clock.Time(13 * clock.Hour)
	down := func(o org.Observation) org.Observation {
		o.Queues = []*org.QueueView{{ID: "backlog", Order: "fifo", DownUntil: back}, {ID: "desk", Order: "priority"}}
		return o
	}
	held := held(task("web", 2*clock.Hour, 9), 0)
	for _, tt := range []struct {
		name      string
		o         org.Observation
		work      []string
		claim     []string
		waitUntil int64 // -1: no wait
	}{
		{"queue up: works on what it holds", func() org.Observation {
			o := observe()
			o.Assigned = []org.TaskView{held}
			return o
		}(), []string{"web"}, nil, -1},
		{"queue down, nothing else: waits for a change", func() org.Observation {
			o := down(observe())
			o.Assigned = []org.TaskView{held}
			return o
		}(), nil, nil, 0},
		{"queue down, a ticket offered: takes the ticket", func() org.Observation {
			o := down(observe())
			o.Assigned = []org.TaskView{held}
			o.Available = []org.TaskView{ticket("t-1", 1, 2)}
			return o
		}(), []string{"t-1"}, []string{"t-1"}, -1},
		{"down until an instant past: works", func() org.Observation {
			o := observe()
			o.Queues = []*org.QueueView{{ID: "backlog", Order: "fifo", DownUntil: o.Time}}
			o.Assigned = []org.TaskView{held}
			return o
		}(), []string{"web"}, nil, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			acts := decide(t, greedy, tt.o)
			if got := ofType(acts, org.ActWork); !slices.Equal(got, tt.work) {
				t.Errorf("works on %v; want %v (%+v)", got, tt.work, acts)
			}
			if got := ofType(acts, org.ActClaim); !slices.Equal(got, tt.claim) {
				t.Errorf("claims %v; want %v", got, tt.claim)
			}
			until := int64(-1)
			for _, a := range acts {
				if a.Type == org.ActWait {
					until = a.Until
				}
			}
			if until != tt.waitUntil {
				t.Errorf("waits until %d; want %d (%+v)", until, tt.waitUntil, acts)
			}
		})
	}
}
