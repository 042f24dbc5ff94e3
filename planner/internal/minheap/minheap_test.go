package minheap

import (
	"container/heap"
	"math/rand/v2"
	"testing"
)

type pair struct{ key, seq int }

func (p pair) Before(q pair) bool { return p.key < q.key || p.key == q.key && p.seq < q.seq }

// reference is container/heap over the same order: the oracle.
type reference []pair

func (r reference) Len() int           { return len(r) }
func (r reference) Less(i, j int) bool { return r[i].Before(r[j]) }
func (r reference) Swap(i, j int)      { r[i], r[j] = r[j], r[i] }
func (r *reference) Push(x any)        { *r = append(*r, x.(pair)) }
func (r *reference) Pop() any {
	old := *r
	x := old[len(old)-1]
	*r = old[:len(old)-1]
	return x
}

// TestAgainstContainerHeap interleaves random pushes and pops on both heaps: every pop
// returns the same element (the order is total, so the answer is unique).
func TestAgainstContainerHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 2000 {
		var h Heap[pair]
		var r reference
		seq := 0
		for range rng.IntN(200) {
			if h.Len() > 0 && rng.IntN(3) == 0 {
				got, want := h.Pop(), heap.Pop(&r).(pair)
				if got != want {
					t.Fatalf("trial %d: popped %v, container/heap %v", trial, got, want)
				}
				continue
			}
			seq++
			p := pair{key: rng.IntN(10), seq: seq}
			h.Push(p)
			heap.Push(&r, p)
		}
		for h.Len() > 0 {
			if got, want := h.Pop(), heap.Pop(&r).(pair); got != want {
				t.Fatalf("trial %d drain: popped %v, container/heap %v", trial, got, want)
			}
		}
		if r.Len() != 0 {
			t.Fatalf("trial %d: container/heap still holds %d", trial, r.Len())
		}
	}
}

func TestResetKeepsNothing(t *testing.T) {
	var h Heap[pair]
	h.Push(pair{key: 3})
	h.Push(pair{key: 1})
	h.Reset()
	if h.Len() != 0 {
		t.Fatalf("Len after Reset = %d", h.Len())
	}
	h.Push(pair{key: 2})
	if got := h.Pop(); got.key != 2 {
		t.Fatalf("Pop after Reset = %v", got)
	}
}
