// Package minheap is the planners' one priority queue: a binary min-heap over a slice of
// values ordered by their own Before method.
//
// It is container/heap's algorithm with the element type known at compile time. The
// searches that use it (the brute-force oracles' Dijkstra, pipesim's event queue) push and
// pop millions of small structs; container/heap would box each one in an interface and call
// Less and Swap through it, which dominated those loops when measured.
package minheap

// Ordered is what a heap element provides: a strict weak order, Before(x) true when the
// receiver must leave the heap first.
type Ordered[T any] interface {
	Before(T) bool
}

// Heap is a min-heap of T. The zero value is an empty heap ready to use.
type Heap[T Ordered[T]] struct {
	items []T
}

// Len is the number of elements held.
func (h *Heap[T]) Len() int { return len(h.items) }

// Reset empties the heap and keeps its storage.
func (h *Heap[T]) Reset() { h.items = h.items[:0] }

// Peek returns the first element without removing it; it panics on an empty heap.
func (h *Heap[T]) Peek() T { return h.items[0] }

// Push adds x.
func (h *Heap[T]) Push(x T) {
	s := append(h.items, x)
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if !s[i].Before(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
	h.items = s
}

// Pop removes and returns the first element; it panics on an empty heap, like indexing.
func (h *Heap[T]) Pop() T {
	s := h.items
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	for i := 0; ; {
		k := 2*i + 1
		if k >= n {
			break
		}
		if k+1 < n && s[k+1].Before(s[k]) {
			k++
		}
		if !s[k].Before(s[i]) {
			break
		}
		s[i], s[k] = s[k], s[i]
		i = k
	}
	h.items = s
	return top
}
