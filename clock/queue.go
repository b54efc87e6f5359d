package clock

import "slices"

// Item is an entry of a Queue: a value due at a time, with the sequence
// number the queue gave it on Push.
type Item[T any] struct {
	At    Time
	Seq   uint64
	Value T
}

// before reports whether a pops before b: earlier time first, then earlier
// insertion.
func before[T any](a, b *Item[T]) bool {
	return a.At < b.At || (a.At == b.At && a.Seq < b.Seq)
}

// compareItems orders Items as a Queue pops them.
func compareItems[T any](a, b Item[T]) int {
	switch {
	case before(&a, &b):
		return -1
	case before(&b, &a):
		return 1
	}
	return 0
}

// Queue is a priority queue of items ordered by (time, seq): items due at the
// same time pop in insertion order. Since every item has its own sequence
// number the order is total, so a Queue is deterministic. The zero Queue is
// empty and ready to use. A Queue is not safe for concurrent use.
type Queue[T any] struct {
	heap []Item[T] // binary min-heap under before
	seq  uint64    // sequence number of the last push
}

// Push adds v, due at time at, and returns its sequence number: 1 for the
// queue's first push, then 2, 3 and so on.
func (q *Queue[T]) Push(at Time, v T) uint64 {
	q.seq++
	q.heap = append(q.heap, Item[T]{At: at, Seq: q.seq, Value: v})
	q.up(len(q.heap) - 1)
	return q.seq
}

// Peek returns the item that Pop would return, without removing it; ok is
// false if the queue is empty.
func (q *Queue[T]) Peek() (at Time, v T, ok bool) {
	if len(q.heap) == 0 {
		return 0, v, false
	}
	return q.heap[0].At, q.heap[0].Value, true
}

// Pop removes and returns the item with the earliest time, and among those the
// earliest pushed; ok is false if the queue is empty.
func (q *Queue[T]) Pop() (at Time, v T, ok bool) {
	n := len(q.heap) - 1
	if n < 0 {
		return 0, v, false
	}
	top := q.heap[0]
	q.heap[0] = q.heap[n]
	q.heap[n] = Item[T]{} // drop the reference for the garbage collector
	q.heap = q.heap[:n]
	if n > 0 {
		q.down(0)
	}
	return top.At, top.Value, true
}

// Len returns the number of items in the queue.
func (q *Queue[T]) Len() int { return len(q.heap) }

// Items returns a copy of the queue's items in the order Pop would return
// them, for checkpoints and tests. The queue is unchanged.
func (q *Queue[T]) Items() []Item[T] {
	items := slices.Clone(q.heap)
	slices.SortFunc(items, compareItems[T])
	return items
}

// up moves the item at i toward the root until its parent pops before it.
func (q *Queue[T]) up(i int) {
	h := q.heap
	item := h[i]
	for i > 0 {
		p := (i - 1) / 2
		if !before(&item, &h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = item
}

// down moves the item at i toward the leaves until it pops before its children.
func (q *Queue[T]) down(i int) {
	h := q.heap
	n := len(h)
	item := h[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && before(&h[r], &h[c]) {
			c = r
		}
		if !before(&h[c], &item) {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = item
}
