package sim_test

import (
	"cmp"
	"slices"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

// TestQueueAheadIsTheQueueOrder holds org.State.QueueAhead, which stops
// early where the queue's order allows, to the order it implements,
// computed here from the tickets themselves: a ticket's queue is served in
// arrival order (creation time, then the order tasks were made), a
// priority queue highest priority first. In states of every shipped world
// that has queues, played by greedy agents at a load that builds backlogs,
// every member asks about every open ticket.
func TestQueueAheadIsTheQueueOrder(t *testing.T) {
	asked := 0
	for _, name := range worlds.Names() {
		if strings.HasSuffix(name, "-bench") {
			continue
		}
		src, err := worlds.Source(name)
		if err != nil {
			t.Fatal(err)
		}
		w, err := worlds.Load(name+".yaml", src)
		if err != nil {
			t.Fatal(err)
		}
		if len(w.Arrivals) == 0 {
			continue
		}
		e, err := sim.New(sim.Config{World: w, Source: src, Seed: 3, Session: "s", Load: 8})
		if err != nil {
			t.Fatal(err)
		}
		e.Start()
		n, next := 0, 200
		err = sim.Play(e, func(evs []events.Event) bool {
			if n += len(evs); n >= next {
				next += 400
				asked += checkQueueAhead(t, name, e.State())
			}
			return n < 6000
		}, func(tn sim.Turn) (sim.Answer, bool) { return greedy(tn.Observation), true }, 0)
		if err != nil && err != sim.ErrStopped {
			t.Fatal(err)
		}
	}
	if asked < 1000 {
		t.Fatalf("only %d questions with a ticket ahead were asked: the worlds built no backlog", asked)
	}
}

// checkQueueAhead compares QueueAhead with the queue order for every open
// ticket and member of s; it returns how many answers named a ticket.
func checkQueueAhead(t *testing.T, world string, s *org.State) int {
	t.Helper()
	arrival := func(a, b *org.Task) int { // tasks are listed in the order they were made
		return cmp.Compare(a.Created, b.Created)
	}
	open := map[string][]*org.Task{}
	for _, tk := range s.Tasks() {
		if tk.Kind == org.KindTicket && tk.Status == org.StatusOpen {
			open[tk.Queue] = append(open[tk.Queue], tk)
		}
	}
	named := 0
	for _, q := range s.World.Queues {
		list := open[q.ID]
		slices.SortStableFunc(list, arrival)
		for i, tk := range list {
			for _, m := range s.Members {
				var want *org.Task
				for j, o := range list {
					if o == tk || !s.CanTake(m.ID, o) {
						continue
					}
					if q.Order != "priority" && j < i || q.Order == "priority" && (o.Priority > tk.Priority || o.Priority == tk.Priority && j < i) {
						want = o
						break
					}
				}
				got := s.QueueAhead(tk, m.ID)
				if got != want {
					t.Fatalf("%s at seq %d: QueueAhead(%s, %s) in %s queue %s = %v, want %v", world, s.LastSeq, tk.ID, m.ID, q.Order, q.ID, id(got), id(want))
				}
				if got != nil {
					named++
				}
			}
		}
	}
	return named
}

func id(t *org.Task) string {
	if t == nil {
		return "none"
	}
	return t.ID
}
