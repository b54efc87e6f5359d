package sim_test

import (
	"cmp"
	"slices"
	"strings"
	"testing"

	"github.com/corpsim/corpsim/events"
	"github.com/corpsim/corpsim/events/payload"
	"github.com/corpsim/corpsim/org"
	"github.com/corpsim/corpsim/sim"
	"github.com/corpsim/corpsim/worlds"
)

// TestQueueAheadIsTheQueueOrder holds org.State.QueueAhead and QueueHead,
// which look at a queue's lanes (a lane per priority) and stop early where
// the queue's order allows, to the order they implement, computed here
// from the tickets themselves: a queue is served in arrival order
// (creation time, then the order tasks were made), a priority queue
// highest priority first. In states of every shipped world that has
// queues, played by greedy agents at a load that builds backlogs, and of
// a desk whose agents also claim tickets and release them again (back to
// their place in the queue), every member asks about every open ticket
// and for the head of every queue.
func TestQueueAheadIsTheQueueOrder(t *testing.T) {
	asked := 0
	type world struct {
		name  string
		src   []byte
		churn bool
	}
	var ws []world
	for _, name := range worlds.Names() {
		if strings.HasSuffix(name, "-bench") {
			continue
		}
		src, err := worlds.Source(name)
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, world{name, src, false})
	}
	ws = append(ws, world{"churn-desk", []byte(churnDesk), true})
	for _, wd := range ws {
		w, err := worlds.Load(wd.name+".yaml", wd.src)
		if err != nil {
			t.Fatal(err)
		}
		if len(w.Arrivals) == 0 {
			continue
		}
		e, err := sim.New(sim.Config{World: w, Source: wd.src, Seed: 3, Session: "s", Load: 8})
		if err != nil {
			t.Fatal(err)
		}
		e.Start()
		n, next, released := 0, 200, 0
		err = sim.Play(e, func(evs []events.Event) bool {
			for _, ev := range evs {
				if ev.Type == payload.EvTaskHandedOff {
					released++
				}
			}
			if n += len(evs); n >= next {
				next += 400
				asked += checkQueueAhead(t, wd.name, e.State())
			}
			return n < 6000
		}, func(tn sim.Turn) (sim.Answer, bool) {
			if o := tn.Observation; wd.churn && o.Turn%3 != 0 {
				if acts := claimOrRelease(o); acts != nil {
					return sim.Answer{Member: tn.Member, Turn: o.Turn, Actions: acts}, true
				}
			}
			return greedy(tn.Observation), true
		}, 0)
		if err != nil && err != sim.ErrStopped {
			t.Fatal(err)
		}
		if wd.churn && released < 50 {
			t.Fatalf("%s: only %d tickets were released back to their queue", wd.name, released)
		}
	}
	if asked < 1000 {
		t.Fatalf("only %d questions with a ticket ahead were asked: the worlds built no backlog", asked)
	}
}

// claimOrRelease releases a ticket the member claimed and has not started
// (a handoff to nobody), or claims the first ticket it may take without
// starting it; nil if it can do neither.
func claimOrRelease(o org.Observation) []org.Action {
	for _, t := range o.Assigned {
		if t.Status == org.StatusClaimed {
			return []org.Action{{Type: org.ActHandoff, Task: t.ID}}
		}
	}
	if len(o.Assigned) == 0 && len(o.Available) > 0 {
		return []org.Action{{Type: org.ActClaim, Task: o.Available[0].ID}, {Type: org.ActWait, For: "10m"}}
	}
	return nil
}

// churnDesk is a priority queue with tickets of three priorities and two
// roles, some needing a skill only some members have, and a queue served
// in arrival order; agent seats and serving colleagues share them, and
// bursts bring tickets of both roles at the same instants (their order is
// the order they were made).
const churnDesk = `version: 1
name: churn-desk
start: 2026-01-05T00:00:00Z
horizon: 4d
calendar: {hours: "00:00-24:00", workdays: [mon, tue, wed, thu, fri, sat, sun]}
roles: [{id: support}, {id: ops}]
teams: [{id: desk}]
members:
  - {id: ann, role: support, team: desk, skills: [billing]}
  - {id: bob, role: support, team: desk}
  - {id: cy, role: support, team: desk}
  - {id: dee, role: ops, team: desk}
  - {id: npc1, role: support, team: desk, npc: {reply: {min: 0s, max: 0s}, serves: [desk, back]}}
  - {id: npc2, role: support, team: desk, npc: {reply: {min: 0s, max: 0s}, serves: [back]}}
  - {id: npc3, role: ops, team: desk, npc: {reply: {min: 0s, max: 0s}, serves: [desk, back]}}
queues:
  - {id: desk, served_by: [support, ops], order: priority}
  - {id: back, served_by: [support, ops], order: fifo}
arrivals:
  - {id: g, queue: desk, process: poisson, every: 20m, ticket: {title: G, role: support, effort: {mean: 30m}, value: 1, priority: {1: 60, 2: 30, 3: 10}}}
  - {id: b, queue: desk, process: poisson, every: 1h, ticket: {title: B, role: support, skill: billing, effort: {mean: 40m}, value: 2, priority: {2: 50, 3: 50}}}
  - {id: o, queue: desk, process: bursty, burst: 3, every: 2h, ticket: {title: O, role: ops, effort: {mean: 50m}, value: 1, priority: {1: 50, 3: 50}}}
  - {id: p, queue: desk, process: bursty, burst: 3, every: 2h, ticket: {title: P, role: support, effort: {mean: 50m}, value: 1, priority: {1: 50, 3: 50}}}
  - {id: k, queue: back, process: poisson, every: 30m, ticket: {title: K, role: support, effort: {mean: 20m}, value: 1}}
  - {id: q, queue: back, process: bursty, burst: 2, every: 90m, ticket: {title: Q, role: ops, effort: {mean: 20m}, value: 1}}
`

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
		for _, m := range s.Members {
			var want *org.Task
			for _, o := range list {
				if s.CanTake(m.ID, o) && (want == nil || q.Order == "priority" && o.Priority > want.Priority) {
					want = o
				}
			}
			if got := s.QueueHead(q.ID, m.ID); got != want {
				t.Fatalf("%s at seq %d: QueueHead(%s, %s) in %s queue = %v, want %v", world, s.LastSeq, q.ID, m.ID, q.Order, id(got), id(want))
			}
		}
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
