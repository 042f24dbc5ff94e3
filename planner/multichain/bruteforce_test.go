package multichain

import (
	"container/heap"
)

// This file is the independent exhaustive search of spec §8 ("brute.py"): Dijkstra over
// the literal operations of Table 1.1, with no canonical form assumed and no pruning but
// the memory bound. It shares nothing with the dynamic program but the instance.

// A state is a multiset of values (each multiplicity 0..2, spec §8's cap) and whether the
// loss ran, packed in 64 bits: two bits per value, a_q^(j) then δ_q^(j) for every branch
// and position, and the loss flag in the top bit.
const bfLoss = uint64(1) << 63

// bfLayout maps (branch, position) to the value index of a_q and of δ_q.
type bfLayout struct {
	in   *instance
	base []int // base[j]: the index of a_0^(j); δ_q^(j) is at base[j] + L_j + 1 + q
	n    int   // the number of values
}

func newLayout(in *instance) *bfLayout {
	l := &bfLayout{in: in}
	for _, n := range in.L {
		l.base = append(l.base, l.n)
		l.n += 2 * (n + 1)
	}
	return l
}

func (l *bfLayout) a(j, q int) int { return l.base[j] + q }
func (l *bfLayout) d(j, q int) int { return l.base[j] + l.in.L[j] + 1 + q }

func count(s uint64, i int) int { return int(s >> (2 * i) & 3) }

// bruteForce returns the optimal makespan of MULTI-b(L, m, b⁰) in the model of Table 1.1,
// or inf. It explores S, F, B, Loss (once), D and D̄ (when b_j = 0) from {a_0^(j)}, with at
// most m values stored in every state, until the memory is exactly {δ_0^(j) : b_j = 1}.
// With in.keepInputs the inputs stay: B_1 leaves a_0, the loss leaves the a_0 of a branch
// without stages beside its δ_0, only copies of an a_0 may be dropped, and the memory ends
// with every a_0^(j) as well.
func bruteForce(in *instance, m int) float64 {
	lay := newLayout(in)
	if lay.n > 31 {
		panic("bruteForce: too many values for a 64-bit state")
	}
	var start, goal uint64
	for j := range in.L {
		start |= 1 << (2 * lay.a(j, 0))
		if in.b0[j] {
			goal |= 1 << (2 * lay.d(j, 0))
		}
		if in.keepInputs {
			goal |= 1 << (2 * lay.a(j, 0))
		}
	}
	goal |= bfLoss
	if len(in.L) > m {
		return inf
	}
	dist := map[uint64]float64{start: 0}
	pq := &bfQueue{{start, 0}}
	for pq.Len() > 0 {
		cur := heap.Pop(pq).(bfItem)
		if cur.dist > dist[cur.s] {
			continue
		}
		if cur.s == goal {
			return cur.dist
		}
		used := 0
		for i := 0; i < lay.n; i++ {
			used += count(cur.s, i)
		}
		lay.next(cur.s, used, m, func(ns uint64, cost float64) {
			d := cur.dist + cost
			if old, ok := dist[ns]; !ok || d < old {
				dist[ns] = d
				heap.Push(pq, bfItem{ns, d})
			}
		})
	}
	return inf
}

// next calls visit with every state one operation away from s and the operation's cost.
func (l *bfLayout) next(s uint64, used, m int, visit func(uint64, float64)) {
	in := l.in
	apply := func(ns uint64, cost float64, changes ...[2]int) { // (value index, +1 or −1)
		for _, c := range changes {
			v := count(ns, c[0]) + c[1]
			if v < 0 || v > 2 {
				return
			}
			ns = ns&^(3<<(2*c[0])) | uint64(v)<<(2*c[0])
		}
		visit(ns, cost)
	}
	has := func(i int) bool { return count(s, i) > 0 }
	lossDone := s&bfLoss != 0
	for j, n := range in.L {
		for q := 0; q <= n; q++ {
			if !has(l.a(j, q)) {
				continue
			}
			if used < m {
				apply(s, 0, [2]int{l.a(j, q), +1}) // S_q
			}
			if q > 0 || !in.keepInputs || count(s, l.a(j, 0)) == 2 {
				apply(s, 0, [2]int{l.a(j, q), -1}) // D_q
			}
			if q < n {
				apply(s, in.uF[j][q+1], [2]int{l.a(j, q), -1}, [2]int{l.a(j, q+1), +1}) // F_{q+1}
			}
		}
		for q := 1; q <= n; q++ {
			if !has(l.d(j, q)) || !has(l.a(j, q-1)) {
				continue
			}
			if q == 1 && in.keepInputs { // B_1 reads a_0 and leaves it
				apply(s, in.uB[j][q], [2]int{l.d(j, q), -1}, [2]int{l.d(j, q-1), +1})
				continue
			}
			apply(s, in.uB[j][q], [2]int{l.d(j, q), -1}, [2]int{l.a(j, q-1), -1}, [2]int{l.d(j, q-1), +1}) // B_q
		}
		if !in.b0[j] && has(l.d(j, 0)) && lossDone {
			apply(s, 0, [2]int{l.d(j, 0), -1}) // D̄
		}
	}
	if !lossDone {
		changes := make([][2]int, 0, 2*len(in.L))
		extra := 0
		for j, n := range in.L {
			if !has(l.a(j, n)) {
				return
			}
			if n == 0 && in.keepInputs { // the input stays beside δ_0
				changes = append(changes, [2]int{l.d(j, n), +1})
				extra++
				continue
			}
			changes = append(changes, [2]int{l.a(j, n), -1}, [2]int{l.d(j, n), +1})
		}
		if used+extra > m {
			return
		}
		apply(s|bfLoss, in.uL, changes...)
	}
}

type bfItem struct {
	s    uint64
	dist float64
}

type bfQueue []bfItem

func (q bfQueue) Len() int           { return len(q) }
func (q bfQueue) Less(i, j int) bool { return q[i].dist < q[j].dist }
func (q bfQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *bfQueue) Push(x any)        { *q = append(*q, x.(bfItem)) }
func (q *bfQueue) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}
