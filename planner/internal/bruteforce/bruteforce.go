// Package bruteforce finds optimal rematerialization schedules of small chains by exhaustive
// search, the test oracle of rotor spec §4.6. It knows nothing of the dynamic programs: it
// explores every sequence of the four operations of spec §2.1 with the memory accounting of
// the reference simulator (spec §2.5), so a DP that disagrees with it is wrong.
package bruteforce

import (
	"math"
	"math/bits"

	"github.com/chainplan/chainplan/planner/internal/minheap"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
)

// MaxStages is the largest chain (stages N = L+1, the loss included) Optimal accepts. The
// state packs the present a_i into 16 bits; the search is exponential long before that.
const MaxStages = 15

// A state is (A, Ā, d) of spec §2.5 packed into 64 bits: bit i of the low 16 bits says
// that a_i is present, bit i of the next 16 that ā_i is present, and d (the index of the
// current gradient δ_d) sits above them.
const (
	barShift = 16
	dShift   = 32
	maskBits = 1<<barShift - 1
)

func pack(a, abar uint32, d int) uint64 {
	return uint64(a) | uint64(abar)<<barShift | uint64(d)<<dShift
}

func unpack(k uint64) (a, abar uint32, d int) {
	return uint32(k & maskBits), uint32(k >> barShift & maskBits), int(k >> dShift)
}

// node is what the search knows of a state: its best distance so far, how it was reached
// (the previous state's node index and the operation), and whether it is settled. It holds
// no pointers, so the garbage collector never scans the node slice.
type node struct {
	dist    float64
	key     uint64
	parent  int32
	kind    uint8 // index into kinds
	stage   uint8
	settled bool
}

// kinds maps node.kind to the operation; the search never stores a chainplan.Op itself.
var kinds = [...]chainplan.OpKind{chainplan.FAll, chainplan.FCk, chainplan.FNone, chainplan.B}

const (
	kindAll uint8 = iota
	kindCk
	kindNone
	kindB
)

// maxDense is the longest chain whose states are indexed by a dense array rather than a map:
// 3^{N+1}·(N+1) int32 entries, 7.8 MB at N = 10.
const maxDense = 10

// item is a heap entry ordered by prio = dist + remaining-time bound. Stale entries (dist
// above the node's) are skipped when popped. Among equal priorities the longer path (the
// one closer to the goal) goes first, then the older entry, so the search is
// deterministic.
type item struct {
	prio float64
	dist float64
	seq  uint64
	node int32
}

// Optimal returns a minimum-makespan valid sequence for c whose memory never exceeds limit,
// the total memory in c's units with the input a_0 included (as for simulate.Run). ok is
// false when no sequence fits.
//
// The search is Dijkstra's algorithm over the states (A, Ā, d) of spec §2.5, starting from
// ({0}, ∅, N) and ending at the first settled state with d = 0. Edges are the operations
// of spec §2.1 with cost = their time; an operation is allowed only if its peak (stored
// data + output + overhead) is at most limit. As in spec §4.6, F_ℓ (any variant) is never
// run while a_ℓ or ā_ℓ is present: without that rule the search finds schedules that abuse
// a second forward as a free deletion, which no DP of the thesis can express.
//
// Two shortcuts keep it fast without changing the answer: a limit below a necessary
// memory bound (lowerBound) is rejected without a search, and the queue is ordered by the
// distance plus a consistent lower bound on the remaining time (A*, see remaining). With
// non-integer times the sums are rounded, so the makespan is optimal up to rounding.
//
// Ties between sequences of equal makespan go to the one found first, which is
// deterministic but otherwise unspecified.
//
// The time complexity is O(V·N + V·log V) for the V reachable states, at most
// 3^{N+1}·(N+1); keep N ≤ 7 with small sizes for interactive speed. Optimal panics if
// c.N > MaxStages.
func Optimal(c *discretize.Chain, limit int64) (makespan float64, seq []chainplan.Op, ok bool) {
	n := c.N
	if n > MaxStages {
		panic("bruteforce: chain too long for exhaustive search")
	}
	if limit < lowerBound(c) {
		return math.Inf(1), nil, false
	}
	return run(c, limit)
}

// run is the search itself, without the lowerBound shortcut.
func run(c *discretize.Chain, limit int64) (makespan float64, seq []chainplan.Op, ok bool) {
	n := c.N
	s := newSearch(c, limit)
	s.relax(pack(1, 0, n), 0, -1, 0, 0)
	for s.heap.Len() > 0 {
		it := s.heap.Pop()
		nd := &s.nodes[it.node]
		if nd.settled || it.dist > nd.dist {
			continue
		}
		nd.settled = true
		a, abar, d := unpack(nd.key)
		if d == 0 {
			return nd.dist, s.path(it.node), true
		}
		s.expand(it.node, a, abar, d)
	}
	return math.Inf(1), nil, false
}

// lowerBound is a memory no valid sequence can stay below (spec §4.5, extended to the
// forwards). a_0 cannot be recomputed and B_1 needs it, so it is present during every
// operation that matters; B_ℓ also holds its input (a_{ℓ-1} or the larger ā_{ℓ-1}), ā_ℓ,
// δ_ℓ, δ_{ℓ-1} and o_B(ℓ), and the F_ℓ^all that every B_ℓ needs holds its input, ā_ℓ and
// o_F(ℓ). An infeasible limit makes the search visit every reachable state, and in tests
// the bound is the smallest feasible limit of about 99 % of random chains, so checking it
// first saves most of the time spent on infeasible limits.
func lowerBound(c *discretize.Chain) int64 {
	var bound int64
	for l := 1; l <= c.N; l++ {
		in := c.A[0] // F_1 and B_1 read a_0 itself
		if l > 1 {
			in += c.A[l-1]
		}
		bound = max(bound, in+c.ABar[l]+c.Grad(l)+c.Grad(l-1)+c.OB[l], in+c.ABar[l]+c.OF[l])
	}
	return bound
}

// search holds the Dijkstra state of one call.
type search struct {
	c     *discretize.Chain
	limit int64
	// A state's node is found through dense (position+1, 0 for unseen) when the chain is
	// short enough, else through index. The dense position of (A, Ā, d) is
	// (tern[A] + 2·tern[Ā])·(N+1) + d, with tern[mask] = Σ_{i∈mask} 3^i: a_i and ā_i are
	// never both present (F_ℓ waits until neither is), so each index has 3 states.
	dense []int32
	tern  []int32
	index map[uint64]int32
	nodes []node
	heap  minheap.Heap[item]
	seq   uint64
}

func newSearch(c *discretize.Chain, limit int64) *search {
	s := &search{c: c, limit: limit}
	n := c.N
	if n > maxDense {
		s.index = make(map[uint64]int32, 1024)
		return s
	}
	s.tern = make([]int32, 1<<(n+1))
	for m := 1; m < len(s.tern); m++ {
		low := bits.TrailingZeros(uint(m))
		p := int32(1)
		for range low {
			p *= 3
		}
		s.tern[m] = s.tern[m&(m-1)] + p
	}
	s.dense = make([]int32, int(s.tern[len(s.tern)-1]+1)*3*(n+1))
	return s
}

// size is the memory held in a state: Σ a_i over A, Σ ā_i over Ā, and δ_d (= a_d).
func (s *search) size(a, abar uint32, d int) int64 {
	total := s.c.Grad(d)
	for m := a; m != 0; m &= m - 1 {
		total += s.c.A[bits.TrailingZeros32(m)]
	}
	for m := abar; m != 0; m &= m - 1 {
		total += s.c.ABar[bits.TrailingZeros32(m)]
	}
	return total
}

// remaining is a lower bound on the time still needed from state key: every B_ℓ with
// ℓ ≤ d has to run, and so does an F_ℓ^all for each of them whose ā_ℓ is absent. The bound
// is consistent (no move lowers it by more than its own time), which is what lets A* stop
// at the first goal it settles.
func (s *search) remaining(key uint64) float64 {
	_, abar, d := unpack(key)
	var h float64
	for l := 1; l <= d; l++ {
		h += s.c.UB[l]
		if abar&(1<<l) == 0 {
			h += s.c.UF[l]
		}
	}
	return h
}

// expand relaxes every move of spec §2.5 out of a settled state.
func (s *search) expand(from int32, a, abar uint32, d int) {
	c := s.c
	dist := s.nodes[from].dist
	held := s.size(a, abar, d)
	for l := 1; l <= c.N; l++ {
		bit, in := uint32(1)<<l, uint32(1)<<(l-1)
		if a&bit != 0 || abar&bit != 0 {
			continue // spec §4.6: never recompute a value that is present
		}
		cost := dist + c.UF[l]
		if a&in != 0 || abar&in != 0 {
			if held+c.ABar[l]+c.OF[l] <= s.limit {
				s.relax(pack(a, abar|bit, d), cost, from, kindAll, l)
			}
			if held+c.A[l]+c.OF[l] <= s.limit {
				s.relax(pack(a|bit, abar, d), cost, from, kindCk, l)
			}
		}
		// F_∅ reads only the plain a_{ℓ-1}, and frees it.
		if a&in != 0 && held+c.A[l]+c.OF[l] <= s.limit {
			s.relax(pack(a&^in|bit, abar, d), cost, from, kindNone, l)
		}
	}
	// B_d consumes δ_d, ā_d and a plain a_{d-1}; an ā_{d-1} input stays for B_{d-1}.
	bit, in := uint32(1)<<d, uint32(1)<<(d-1)
	if abar&bit != 0 && (a&in != 0 || abar&in != 0) && held+c.Grad(d-1)+c.OB[d] <= s.limit {
		s.relax(pack(a&^in, abar&^bit, d-1), dist+c.UB[d], from, kindB, d)
	}
}

// relax records a path of length dist to key through the operation (kind, stage) from
// node parent.
func (s *search) relax(key uint64, dist float64, parent int32, kind uint8, stage int) {
	var i int32
	if s.dense != nil {
		a, abar, d := unpack(key)
		if a&abar != 0 {
			panic("bruteforce: a_i and ā_i both present") // excluded by the F_ℓ rule
		}
		j := int(s.tern[a]+2*s.tern[abar])*(s.c.N+1) + d
		i = s.dense[j] - 1
		if i < 0 {
			i = int32(len(s.nodes))
			s.dense[j] = i + 1
			s.nodes = append(s.nodes, node{dist: math.Inf(1), key: key})
		}
	} else {
		var seen bool
		if i, seen = s.index[key]; !seen {
			i = int32(len(s.nodes))
			s.index[key] = i
			s.nodes = append(s.nodes, node{dist: math.Inf(1), key: key})
		}
	}
	nd := &s.nodes[i]
	if nd.settled || dist >= nd.dist {
		return
	}
	nd.dist, nd.parent, nd.kind, nd.stage = dist, parent, kind, uint8(stage)
	s.heap.Push(item{prio: dist + s.remaining(key), dist: dist, seq: s.seq, node: i})
	s.seq++
}

// path returns the operations from the start to node i.
func (s *search) path(i int32) []chainplan.Op {
	var rev []chainplan.Op
	for ; s.nodes[i].parent >= 0; i = s.nodes[i].parent {
		nd := &s.nodes[i]
		rev = append(rev, chainplan.Op{Kind: kinds[nd.kind], Stage: int(nd.stage)})
	}
	seq := make([]chainplan.Op, len(rev))
	for k, op := range rev {
		seq[len(rev)-1-k] = op
	}
	return seq
}

func (it item) Before(o item) bool {
	if it.prio != o.prio {
		return it.prio < o.prio
	}
	if it.dist != o.dist {
		return it.dist > o.dist
	}
	return it.seq < o.seq
}
