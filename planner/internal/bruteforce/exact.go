package bruteforce

import (
	"math"

	"github.com/chainplan/chainplan/planner/internal/minheap"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
)

// MaxExactStages is the longest chain (N = L+1) OptimalExact accepts; each stage's graph
// takes two bits of the state and the runner's activations one.
const MaxExactStages = 8

// OptimalExact returns a minimum-makespan sequence for c within limit (units, a_0
// included) in the exact memory model (docs/rotor.md): the oracle of the exact DPs. It
// knows nothing of them. A state is the set R of activations the executor holds, the
// option each stage's graph is filled with (none, or 0..2), and the current gradient δ_d;
// memory is Σ a_i over the live activations (held by the executor, by the graph of stage i
// when it saved its output, or by that of stage i+1 when it saved its input), ā_ℓ − a_ℓ of
// each filled graph (the option's, until B_ℓ restores the rest) and δ_d. The moves are:
//
//   - a forward of ℓ ≤ d without graph (emitted as F_ck), from a held a_{ℓ-1}, adding a_ℓ
//     to R;
//   - F_ℓ^all with option o for ℓ < d (or the loss), the same and filling stage ℓ's graph;
//   - F_ℓ^all immediately followed by B_ℓ when ℓ = d < N: the recomputation that stops at
//     the saved tensors (u_R), making a_ℓ only when the stage saved it;
//   - B_d of a filled graph (with an option, from a still-held input, after recomputing
//     the rest of ā_d), which empties the graph; B_1 also drops a_0;
//   - dropping an activation from R, for free (the executor drops each after its last
//     reader); a_0 stays until B_1.
//
// As in Optimal, a forward never makes an activation that is still live. Stages may have
// at most two options; it panics if c.N > MaxExactStages or a stage has more.
func OptimalExact(c *discretize.Chain, limit int64) (makespan float64, seq []chainplan.Op, ok bool) {
	n := c.N
	if n > MaxExactStages {
		panic("bruteforce: chain too long for the exact search")
	}
	for l := 1; l <= n; l++ {
		if len(c.Options(l)) > 2 {
			panic("bruteforce: more than two options on a stage")
		}
	}
	e := &exactSearch{c: c, limit: limit, seen: map[exactState]int{}}
	e.relax(exactState{r: 1, d: n}, 0, -1, chainplan.Op{})
	for e.queue.Len() > 0 {
		it := e.queue.Pop()
		nd := &e.nodes[it.node]
		if nd.done || it.dist > nd.dist {
			continue
		}
		nd.done = true
		if nd.state.d == 0 {
			return nd.dist, e.path(it.node), true
		}
		e.expand(it.node)
	}
	return math.Inf(1), nil, false
}

// exactState: bit i of r says that the executor holds a_i; graph holds two bits per stage
// (0: empty, 1+o: filled with option o); d is the current gradient's index.
type exactState struct {
	r     uint32
	graph uint32
	d     int
}

func (s exactState) filled(l int) (int, bool) {
	g := int(s.graph>>(2*l)) & 3
	return g - 1, g > 0
}

func (s exactState) fill(l, o int) exactState {
	s.graph = s.graph&^(3<<(2*l)) | uint32(o+1)<<(2*l)
	return s
}

type exactNode struct {
	state  exactState
	dist   float64
	parent int
	op     chainplan.Op
	silent bool // a drop: no operation of the sequence
	done   bool
}

type qItem struct {
	dist float64
	node int
}

// Before orders the queue by distance, then node index, so ties pop deterministically.
func (q qItem) Before(o qItem) bool {
	return q.dist < o.dist || (q.dist == o.dist && q.node < o.node)
}

type exactSearch struct {
	c     *discretize.Chain
	limit int64
	seen  map[exactState]int
	nodes []exactNode
	queue minheap.Heap[qItem]
}

// live reports whether a_i is in memory in state s.
func (e *exactSearch) live(s exactState, i int) bool {
	if s.r&(1<<i) != 0 {
		return true
	}
	if _, ok := s.filled(i); ok && i >= 1 && e.c.OutSaved(i) {
		return true
	}
	_, ok := s.filled(i + 1)
	return ok && i+1 <= e.c.N && e.c.InSaved(i+1)
}

// size is the memory of state s.
func (e *exactSearch) size(s exactState) int64 {
	c := e.c
	total := c.Grad(s.d)
	for i := 0; i < c.N; i++ {
		if e.live(s, i) {
			total += c.A[i]
		}
	}
	for l := 1; l <= c.N; l++ {
		if o, ok := s.filled(l); ok {
			total += c.Option(l, o).ABar - c.A[l]
		}
	}
	return total
}

func (e *exactSearch) expand(from int) {
	c := e.c
	s := e.nodes[from].state
	dist := e.nodes[from].dist
	held := e.size(s)
	for i := 1; i < c.N; i++ { // drops
		if s.r&(1<<i) != 0 {
			e.relaxSilent(exactState{r: s.r &^ (1 << i), graph: s.graph, d: s.d}, dist, from)
		}
	}
	// Forwards of stages whose backward has run are useless (and §2.5 refuses them); at
	// ℓ = d only the early recomputation pair runs F_ℓ^all.
	for l := 1; l <= s.d; l++ {
		if s.r&(1<<(l-1)) == 0 || (l < c.N && e.live(s, l)) {
			continue
		}
		if l < c.N { // a forward without graph
			if held+c.A[l]+c.OF[l] <= e.limit {
				e.relax(exactState{r: s.r | 1<<l, graph: s.graph, d: s.d}, dist+c.UF[l], from, chainplan.Op{Kind: chainplan.FCk, Stage: l})
			}
		}
		if _, ok := s.filled(l); ok {
			continue
		}
		if l == s.d && l < c.N { // the early-stopping recomputation and B_l
			// Between the two the executor drops the input, whose last reader the
			// recomputation was (unless it is a_0).
			filledState := s.fill(l, 0)
			if l >= 2 {
				filledState.r &^= 1 << (l - 1)
			}
			mid := e.size(filledState)
			if held+c.EarlyPeak(l) <= e.limit && mid+c.Grad(l-1)+c.OB[l] <= e.limit {
				next := exactState{r: filledState.r, graph: s.graph, d: l - 1}
				if l == 1 {
					next.r &^= 1
				}
				e.relax(next, dist+c.Recompute(l)+c.UB[l], from, chainplan.Op{Kind: chainplan.FAll, Stage: l},
					chainplan.Op{Kind: chainplan.B, Stage: l})
			}
		}
		for o := 0; o <= len(c.Options(l)) && (l < s.d || l == c.N); o++ {
			opt := c.Option(l, o)
			add := opt.ABar
			next := s.fill(l, o)
			if l < c.N {
				next.r |= 1 << l
			} else {
				add = 0
			}
			if held+add+opt.OF <= e.limit {
				e.relax(next, dist+opt.UF, from, chainplan.Op{Kind: chainplan.FAll, Stage: l, Option: o})
			}
		}
	}
	// B_d
	l := s.d
	if o, ok := s.filled(l); ok && (o == 0 || s.r&(1<<(l-1)) != 0) {
		opt := c.Option(l, o)
		restored, ob, recompute := held+c.ABar[l]-opt.ABar, c.OB[l], o > 0
		if opt.Form { // another computation of the stage: its own backward, nothing restored
			restored, ob, recompute = held, opt.OB, false
		}
		if restored+c.Grad(l-1)+ob <= e.limit && (!recompute || restored+opt.OF <= e.limit) {
			next := exactState{r: s.r, graph: s.graph &^ (3 << (2 * l)), d: l - 1}
			if l == 1 {
				next.r &^= 1
			}
			e.relax(next, dist+opt.UB+opt.UR, from, chainplan.Op{Kind: chainplan.B, Stage: l})
		}
	}
}

func (e *exactSearch) node(s exactState) int {
	i, ok := e.seen[s]
	if !ok {
		i = len(e.nodes)
		e.seen[s] = i
		e.nodes = append(e.nodes, exactNode{state: s, dist: math.Inf(1)})
	}
	return i
}

// relax records a path to s of length dist through the operations ops from node parent
// (two operations for the early recomputation and its backward, which a second node
// carries).
func (e *exactSearch) relax(s exactState, dist float64, parent int, ops ...chainplan.Op) {
	if len(ops) == 2 {
		// The pair is one move; the intermediate node holds the first operation.
		mid := len(e.nodes)
		e.nodes = append(e.nodes, exactNode{dist: dist, parent: parent, op: ops[0], done: true})
		parent, ops = mid, ops[1:]
	}
	i := e.node(s)
	nd := &e.nodes[i]
	if nd.done || dist >= nd.dist {
		return
	}
	nd.dist, nd.parent, nd.op, nd.silent = dist, parent, ops[0], false
	e.queue.Push(qItem{dist: dist, node: i})
}

func (e *exactSearch) relaxSilent(s exactState, dist float64, parent int) {
	i := e.node(s)
	nd := &e.nodes[i]
	if nd.done || dist >= nd.dist {
		return
	}
	nd.dist, nd.parent, nd.silent = dist, parent, true
	e.queue.Push(qItem{dist: dist, node: i})
}

func (e *exactSearch) path(i int) []chainplan.Op {
	var rev []chainplan.Op
	for ; i >= 0; i = e.nodes[i].parent {
		if nd := &e.nodes[i]; !nd.silent && nd.op.Kind != "" {
			rev = append(rev, nd.op)
		}
	}
	seq := make([]chainplan.Op, len(rev))
	for k, op := range rev {
		seq[len(rev)-1-k] = op
	}
	return seq
}
