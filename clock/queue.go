package clock

import "slices"

// Item is an entry of a Queue: a value due at a time, with the sequence
// number the queue gave it on Push.
type Item[T any] struct {
	At    Time
	Seq   uint64
	Value T
}

// Queue is a priority queue of items ordered by (time, seq): items due at the
// same time pop in insertion order. Since every item has its own sequence
// number the order is total, so a Queue is deterministic. The zero Queue is
// empty and ready to use. A Queue is not safe for concurrent use.
//
// The heap orders keys of 24 bytes, without pointers; the values stay in
// their slots while keys move. A heap of whole items moved every value
// at each step, with a write barrier on each of its pointers while the
// collector marked.
type Queue[T any] struct {
	heap []key   // binary min-heap under before
	vals []T     // the values, by slot
	free []int32 // slots of vals no item holds
	seq  uint64  // sequence number of the last push
}

// key is a heap entry: an item's time and sequence number, and the slot
// of vals that holds its value.
type key struct {
	At   Time
	Seq  uint64
	slot int32
}

// before reports whether a pops before b: earlier time first, then earlier
// insertion.
func (a *key) before(b *key) bool {
	return a.At < b.At || (a.At == b.At && a.Seq < b.Seq)
}

// Push adds v, due at time at, and returns its sequence number: 1 for the
// queue's first push, then 2, 3 and so on.
func (q *Queue[T]) Push(at Time, v T) uint64 {
	q.seq++
	var slot int32
	if n := len(q.free); n > 0 {
		slot = q.free[n-1]
		q.free = q.free[:n-1]
		q.vals[slot] = v
	} else {
		slot = int32(len(q.vals))
		q.vals = append(q.vals, v)
	}
	q.heap = append(q.heap, key{At: at, Seq: q.seq, slot: slot})
	q.up(len(q.heap) - 1)
	return q.seq
}

// Peek returns the item that Pop would return, without removing it; ok is
// false if the queue is empty.
func (q *Queue[T]) Peek() (at Time, v T, ok bool) {
	if len(q.heap) == 0 {
		return 0, v, false
	}
	return q.heap[0].At, q.vals[q.heap[0].slot], true
}

// Pop removes and returns the item with the earliest time, and among those the
// earliest pushed; ok is false if the queue is empty.
func (q *Queue[T]) Pop() (at Time, v T, ok bool) {
	n := len(q.heap) - 1
	if n < 0 {
		return 0, v, false
	}
	top := q.heap[0]
	v = q.vals[top.slot]
	var zero T
	q.vals[top.slot] = zero // drop the reference for the garbage collector
	q.free = append(q.free, top.slot)
	q.heap[0] = q.heap[n]
	q.heap = q.heap[:n]
	if n > 0 {
		q.down(0)
	}
	return top.At, v, true
}

// Len returns the number of items in the queue.
func (q *Queue[T]) Len() int { return len(q.heap) }

// Items returns a copy of the queue's items in the order Pop would return
// them, for checkpoints and tests. The queue is unchanged.
func (q *Queue[T]) Items() []Item[T] {
	keys := slices.Clone(q.heap)
	slices.SortFunc(keys, func(a, b key) int {
		switch {
		case a.before(&b):
			return -1
		case b.before(&a):
			return 1
		}
		return 0
	})
	items := make([]Item[T], len(keys))
	for i, k := range keys {
		items[i] = Item[T]{At: k.At, Seq: k.Seq, Value: q.vals[k.slot]}
	}
	return items
}

// up moves the key at i toward the root until its parent pops before it.
func (q *Queue[T]) up(i int) {
	h := q.heap
	k := h[i]
	for i > 0 {
		p := (i - 1) / 2
		if !k.before(&h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = k
}

// down moves the key at i toward the leaves until it pops before its children.
func (q *Queue[T]) down(i int) {
	h := q.heap
	n := len(h)
	k := h[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && h[r].before(&h[c]) {
			c = r
		}
		if !h[c].before(&k) {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = k
}
