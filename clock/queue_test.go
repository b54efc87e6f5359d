package clock

import (
	"cmp"
	"container/heap"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestQueueOrder(t *testing.T) {
	type push struct {
		at Time
		v  string
	}
	tests := []struct {
		name   string
		pushes []push
		want   []string
	}{
		{"empty", nil, nil},
		{"single", []push{{5, "a"}}, []string{"a"}},
		{"by time", []push{{30, "c"}, {10, "a"}, {20, "b"}}, []string{"a", "b", "c"}},
		{"ties in insertion order", []push{{10, "a"}, {10, "b"}, {10, "c"}, {10, "d"}}, []string{"a", "b", "c", "d"}},
		{"ties among others", []push{{20, "c1"}, {10, "a"}, {20, "c2"}, {15, "b"}, {20, "c3"}}, []string{"a", "b", "c1", "c2", "c3"}},
		{"negative times", []push{{0, "b"}, {-5, "a"}}, []string{"a", "b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q Queue[string]
			for i, p := range tt.pushes {
				if seq := q.Push(p.at, p.v); seq != uint64(i+1) {
					t.Errorf("Push #%d returned seq %d, want %d", i+1, seq, i+1)
				}
			}
			if got := len(q.Items()); got != len(tt.want) {
				t.Errorf("len(Items()) = %d, want %d", got, len(tt.want))
			}
			var got []string
			for q.Len() > 0 {
				pat, pv, _ := q.Peek()
				at, v, ok := q.Pop()
				if !ok || at != pat || v != pv {
					t.Fatalf("Pop() = %d, %q, %v after Peek() = %d, %q", at, v, ok, pat, pv)
				}
				got = append(got, v)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("popped %q, want %q", got, tt.want)
			}
		})
	}
}

func TestQueueEmpty(t *testing.T) {
	var q Queue[*int]
	if at, v, ok := q.Peek(); at != 0 || v != nil || ok {
		t.Errorf("Peek() = %d, %v, %v, want 0, nil, false", at, v, ok)
	}
	if at, v, ok := q.Pop(); at != 0 || v != nil || ok {
		t.Errorf("Pop() = %d, %v, %v, want 0, nil, false", at, v, ok)
	}
	if got := q.Items(); len(got) != 0 {
		t.Errorf("Items() = %v, want none", got)
	}
}

func TestQueueItemsIsSnapshot(t *testing.T) {
	var q Queue[string]
	q.Push(20, "b")
	q.Push(10, "a")
	q.Push(20, "c")
	items := q.Items()
	want := []Item[string]{{10, 2, "a"}, {20, 1, "b"}, {20, 3, "c"}}
	if !slices.Equal(items, want) {
		t.Fatalf("Items() = %v, want %v", items, want)
	}
	items[0].At = 99
	if at, v, _ := q.Pop(); at != 10 || v != "a" {
		t.Errorf("after editing the snapshot, Pop() = %d, %q, want 10, \"a\"", at, v)
	}
}

// TestQueueMatchesReference runs random pushes and pops, with many ties,
// against a sorted slice.
func TestQueueMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var q Queue[int]
	var ref []Item[int] // sorted by (At, Seq)
	var seq uint64
	for op := range 20000 {
		if rng.IntN(5) < 3 || len(ref) == 0 { // grow more than shrink
			at := Time(rng.IntN(50))
			seq++
			if got := q.Push(at, op); got != seq {
				t.Fatalf("op %d: Push returned seq %d, want %d", op, got, seq)
			}
			item := Item[int]{At: at, Seq: seq, Value: op}
			i, _ := slices.BinarySearchFunc(ref, item, compareItems[int])
			ref = slices.Insert(ref, i, item)
		} else {
			at, v, ok := q.Pop()
			if want := ref[0]; !ok || at != want.At || v != want.Value {
				t.Fatalf("op %d: Pop() = %d, %d, %v, want %d, %d, true", op, at, v, ok, want.At, want.Value)
			}
			ref = ref[1:]
		}
		if q.Len() != len(ref) {
			t.Fatalf("op %d: Len() = %d, want %d", op, q.Len(), len(ref))
		}
		if op%1000 == 0 && !slices.Equal(q.Items(), ref) {
			t.Fatalf("op %d: Items() differs from the reference", op)
		}
	}
	for len(ref) > 0 {
		at, v, _ := q.Pop()
		if at != ref[0].At || v != ref[0].Value {
			t.Fatalf("draining: Pop() = %d, %d, want %d, %d", at, v, ref[0].At, ref[0].Value)
		}
		ref = ref[1:]
	}
}

// compareItems orders Items as a Queue pops them: by time, then sequence.
func compareItems[T any](a, b Item[T]) int {
	if c := cmp.Compare(a.At, b.At); c != 0 {
		return c
	}
	return cmp.Compare(a.Seq, b.Seq)
}

// boxedHeap is the container/heap baseline for BenchmarkQueuePushPop.
type boxedHeap []Item[int]

func (h boxedHeap) Len() int           { return len(h) }
func (h boxedHeap) Less(i, j int) bool { return compareItems(h[i], h[j]) < 0 }
func (h boxedHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *boxedHeap) Push(x any)        { *h = append(*h, x.(Item[int])) }
func (h *boxedHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// BenchmarkQueuePushPop measures one Push and one Pop on a queue holding size
// items, against container/heap as a baseline.
func BenchmarkQueuePushPop(b *testing.B) {
	for _, size := range []int{16, 1024, 65536} {
		times := make([]Time, 4096)
		rng := rand.New(rand.NewPCG(1, uint64(size)))
		for i := range times {
			times[i] = Time(rng.IntN(1 << 20))
		}
		b.Run(fmt.Sprintf("Queue/size=%d", size), func(b *testing.B) {
			var q Queue[int]
			for i := range size {
				q.Push(times[i%len(times)], i)
			}
			i := 0
			for b.Loop() {
				at, _, _ := q.Pop()
				q.Push(at+times[i%len(times)], i)
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pushpops/s")
		})
		b.Run(fmt.Sprintf("container-heap/size=%d", size), func(b *testing.B) {
			var h boxedHeap
			var seq uint64
			for i := range size {
				seq++
				heap.Push(&h, Item[int]{At: times[i%len(times)], Seq: seq, Value: i})
			}
			i := 0
			for b.Loop() {
				it := heap.Pop(&h).(Item[int])
				seq++
				heap.Push(&h, Item[int]{At: it.At + times[i%len(times)], Seq: seq, Value: i})
				i++
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pushpops/s")
		})
	}
}
