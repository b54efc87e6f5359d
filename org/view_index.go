package org

import (
	"fmt"
	"slices"
)

// The offer index keeps, for each (queue, role, skill), the open project
// tasks a member of that role with that skill may take from that queue, in
// the order a view lists them, so that a view costs what it shows and not a
// scan of the queue. It is derived (rebuilt by index() after Restore, never
// hashed) and kept up to date by apply:
//
//   - a task enters when it becomes open and visible (created, its project
//     started, handed back to nobody) and leaves when it is claimed;
//   - a task whose dependencies are all done is in ready, ordered by value
//     (highest first), then by its place in State.Tasks; the others are in
//     waiting, ordered by dependencies not done (fewest first), then value,
//     then place;
//   - when a task is done its dependents move (fewer pending, perhaps to
//     ready); when a task's value changes it moves;
//   - a ready task whose purchase the budget it charges can no longer pay
//     moves from ready to dear (same order) when a view finds it among
//     the ready tasks it would list (firstPayable): a budget never grows and a
//     purchase never changes, so it stays dear. Which ready tasks are
//     dear yet depends on the views taken, not on the state alone, so
//     nothing but a view's order may read the split: ready and dear
//     together are the ready tasks.
//
// Tickets are not in it: a view offers at most one ticket per queue, the
// queue's head (QueueHead), found from the queue's open tickets.

// offerKey names one set of offers.
type offerKey struct{ queue, role, skill string }

// offers are the open visible project tasks of one offerKey.
type offers struct {
	skill   string  // the key's
	qi      int     // the key's queue, by its index in World.Queues
	live    int     // its index in its roleOffers' live; -1 when empty
	ready   []*Task // dependencies done; by readyCmp
	dear    []*Task // ready, and found unpayable (firstPayable); by readyCmp
	waiting []*Task // dependencies pending; by waitingCmp
	buys    int     // the tasks in ready with a purchase
}

// first is the first ready task of o, dear or not, by readyCmp; nil for none.
func (o *offers) first() *Task {
	switch {
	case len(o.dear) == 0:
		if len(o.ready) == 0 {
			return nil
		}
		return o.ready[0]
	case len(o.ready) == 0 || readyCmp(o.dear[0], o.ready[0]) < 0:
		return o.dear[0]
	}
	return o.ready[0]
}

// readyN counts o's ready tasks, dear or not.
func (o *offers) readyN() int { return len(o.ready) + len(o.dear) }

// roleOffers are the offer sets of one role: by the index of their queue
// in World.Queues, each queue's in the order they were made (one per
// skill), so that a queue's sets are found by number, not by hashing three
// strings; and those that hold a task (live, in no order), so that a view
// of a member whose role serves a hundred queues, most of them with
// nothing open for it, looks at those that do.
type roleOffers struct {
	byQueue [][]*offers
	live    []*offers
}

// counted keeps o in its role's live sets while it holds a task.
func (ro *roleOffers) counted(o *offers) {
	switch n := o.readyN() + len(o.waiting); {
	case n > 0 && o.live < 0:
		o.live = len(ro.live)
		ro.live = append(ro.live, o)
	case n == 0 && o.live >= 0:
		last := ro.live[len(ro.live)-1]
		ro.live[o.live], last.live = last, o.live
		ro.live[len(ro.live)-1] = nil
		ro.live = ro.live[:len(ro.live)-1]
		o.live = -1
	}
}

// offerPos is where a task is in the offer index, with the sort keys it was
// filed under (the task's Value and pending count may change before it is
// moved; it is found again by these).
type offerPos struct {
	in      *offers // nil: not offered
	ready   bool
	dear    bool // in dear (ready too)
	pending int
	value   float64
}

func readyCmp(a, b *Task) int {
	switch {
	case a.ix.value > b.ix.value:
		return -1
	case a.ix.value < b.ix.value:
		return 1
	}
	return a.ord - b.ord
}

// valueCmp orders tasks as a view lists what it offers: by value, highest
// first, then by place in State.Tasks. On offered tasks it agrees with
// readyCmp.
func valueCmp(a, b *Task) int {
	switch {
	case a.Value > b.Value:
		return -1
	case a.Value < b.Value:
		return 1
	}
	return a.ord - b.ord
}

func waitingCmp(a, b *Task) int {
	if a.ix.pending != b.ix.pending {
		return a.ix.pending - b.ix.pending
	}
	return readyCmp(a, b)
}

// offer files t in the offer index if it is an open, visible project task
// or case step; not a step an NPC performs when asked, which no member takes.
func (s *State) offer(t *Task) {
	if t.Kind != KindTask && t.Kind != KindStep || t.Status != StatusOpen || t.Hidden || t.ix.in != nil || t.Spec.NPC != "" {
		return
	}
	k := offerKey{t.Queue, t.Spec.Role, t.Spec.Skill}
	o := s.offers[k]
	ro := s.roleOffers[k.role]
	if ro == nil {
		ro = &roleOffers{byQueue: make([][]*offers, len(s.World.Queues))}
		s.roleOffers[k.role] = ro
	}
	if o == nil {
		qi, ok := s.queueIx[k.queue]
		if !ok {
			panic(fmt.Sprintf("org: task %s is in queue %q, which the world does not have", t.ID, k.queue))
		}
		o = &offers{skill: k.skill, qi: qi, live: -1}
		s.offers[k] = o
		ro.byQueue[qi] = append(ro.byQueue[qi], o)
	}
	defer ro.counted(o)
	n := s.pendingCount(t)
	t.ix = offerPos{in: o, ready: n == 0, pending: n, value: t.Value}
	if s.bulkOffers {
		// index() files every task first and sorts each list once: an
		// insert at a time moves a quarter of a list per task (~2.5e9
		// pointer moves for 100,000 tasks at every New and Restore).
		if t.ix.ready {
			o.ready = append(o.ready, t)
			o.buys += buys(t)
		} else {
			o.waiting = append(o.waiting, t)
		}
		return
	}
	if t.ix.ready {
		o.ready = insertTask(o.ready, t, readyCmp)
		o.buys += buys(t)
	} else {
		o.waiting = insertTask(o.waiting, t, waitingCmp)
	}
}

// unoffer takes t out of the offer index, if it is there.
func (s *State) unoffer(t *Task) {
	o := t.ix.in
	if o == nil {
		return
	}
	switch {
	case t.ix.dear:
		o.dear = deleteTask(o.dear, t, readyCmp)
	case t.ix.ready:
		o.ready = deleteTask(o.ready, t, readyCmp)
		o.buys -= buys(t)
	default:
		o.waiting = deleteTask(o.waiting, t, waitingCmp)
	}
	s.roleOffers[t.Spec.Role].counted(o)
	t.ix = offerPos{}
}

// buys is 1 for a task with a purchase, else 0.
func buys(t *Task) int {
	if t.Spec.Purchase > 0 {
		return 1
	}
	return 0
}

// payable reports whether the budget t charges (its team's) can pay its
// purchase: true without a purchase or a budget.
func (s *State) payable(t *Task) bool {
	b := s.budgets[t.Team]
	return t.Spec.Purchase <= 0 || b == nil || t.Spec.Purchase <= b.Remaining()
}

// firstPayable returns the first n ready tasks of sets together, by
// value, whose purchase the budget they charge can pay: a view lists them
// first. The ready tasks it finds on the way that no budget can pay move to
// their sets' dear lists, once (a budget never grows and a purchase never
// changes: they stay dear), so a view pays for the tasks it moves and a
// merge of n tasks per round that moved any; when no set's ready tasks
// buy anything it is the one merge the view makes anyway. The result may
// share a set's ready array (firstTasks): read it, do not keep it past the
// next change of the index.
func (s *State) firstPayable(sets []*offers, n int) []*Task {
	for {
		lists, buys := s.readyBuf[:0], false
		for _, o := range sets {
			if len(o.ready) > 0 {
				lists = append(lists, o.ready)
				buys = buys || o.buys > 0
			}
		}
		first := firstTasks(lists, valueCmp, n)
		clear(lists) // kept for the next view, without the lists they pointed to
		s.readyBuf = lists[:0]
		if !buys {
			return first
		}
		dear := s.dearBuf[:0] // apart from the lists: moving changes them
		for _, t := range first {
			if !s.payable(t) {
				dear = append(dear, t)
			}
		}
		s.dearBuf = dear[:0]
		if len(dear) == 0 {
			return first
		}
		for _, t := range dear {
			o := t.ix.in
			o.ready = deleteTask(o.ready, t, readyCmp)
			o.buys--
			o.dear = insertTask(o.dear, t, readyCmp)
			t.ix.dear = true
		}
		clear(dear)
	}
}

// reoffer files t again after its value or its dependencies changed.
func (s *State) reoffer(t *Task) {
	if t.ix.in == nil {
		return
	}
	s.unoffer(t)
	s.offer(t)
}

func insertTask(list []*Task, t *Task, cmp func(a, b *Task) int) []*Task {
	i, found := slices.BinarySearchFunc(list, t, cmp)
	if found {
		panic(fmt.Sprintf("org: task %s is offered twice", t.ID))
	}
	return slices.Insert(list, i, t)
}

func deleteTask(list []*Task, t *Task, cmp func(a, b *Task) int) []*Task {
	i, found := slices.BinarySearchFunc(list, t, cmp)
	if !found || list[i] != t {
		panic(fmt.Sprintf("org: task %s is not where the offer index filed it", t.ID))
	}
	return slices.Delete(list, i, i+1)
}

// offersFor returns the offer sets of the queue numbered qi in
// World.Queues that a member of the role whose sets are ro, with skills,
// may take from, by skill: the tasks naming no skill, then each of its
// skills (openFor takes the first ready task in this order).
//
// The slice is the state's, reused by the next call: range over it at
// once, do not keep it.
func (s *State) offersFor(ro *roleOffers, qi int, skills []string) []*offers {
	out := s.offerSets[:0]
	if ro == nil {
		return out
	}
	sets := ro.byQueue[qi]
	for _, o := range sets {
		if o.skill == "" {
			out = append(out, o)
			break
		}
	}
	if len(out) < len(sets) {
		for i, sk := range skills {
			if sk == "" || slices.Contains(skills[:i], sk) {
				continue
			}
			for _, o := range sets {
				if o.skill == sk {
					out = append(out, o)
					break
				}
			}
		}
	}
	s.offerSets = out
	return out
}

// firstTasks returns the first n tasks of the merge of sorted lists (empty
// lists allowed) by cmp. The result may share one of the lists' arrays:
// read it, do not change it.
//
// The merge is a binary heap of the lists' fronts, written out rather
// than through container/heap: a view of a member serving a hundred queues
// merges a hundred lists, and the interface calls were most of its cost.
// cmp is a total order on tasks (each ends on the task's place), so the
// tasks taken, the smallest front each time, do not depend on the heap.
func firstTasks(lists [][]*Task, cmp func(a, b *Task) int, n int) []*Task {
	if n <= 0 {
		return nil
	}
	h := make([][]*Task, 0, len(lists))
	total := 0
	for _, l := range lists {
		if len(l) > 0 {
			h = append(h, l)
			total += len(l)
		}
	}
	switch len(h) {
	case 0:
		return nil
	case 1:
		return h[0][:min(n, len(h[0]))]
	}
	down := func(i int) {
		for {
			c := 2*i + 1
			if c >= len(h) {
				return
			}
			if r := c + 1; r < len(h) && cmp(h[r][0], h[c][0]) < 0 {
				c = r
			}
			if cmp(h[c][0], h[i][0]) >= 0 {
				return
			}
			h[i], h[c] = h[c], h[i]
			i = c
		}
	}
	for i := len(h)/2 - 1; i >= 0; i-- {
		down(i)
	}
	out := make([]*Task, 0, min(n, total))
	for len(out) < n && len(h) > 0 {
		l := h[0]
		out = append(out, l[0])
		if len(l) == 1 {
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
		} else {
			h[0] = l[1:]
		}
		down(0)
	}
	return out
}
