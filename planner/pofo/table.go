package pofo

import (
	"math"
)

// table holds the POFO dynamic program of spec §4.5-4.8 on a chain in memory units: the
// forward-phase values OC_x(s, A, Δ_F, Δ_B) and the backward-phase values C_Δ(s, t, A, Δ).
//
// In the discretized mode (the production mode, spec §4.9) the states lie on a grid: A is
// a whole number of units (a size joining A is rounded up) and every new Δ is rounded up to
// whole units; the sizes themselves, idle times and link capacities keep their
// exact values. fill computes every grid entry bottom-up. In the continuous mode nothing
// is rounded and the values are memoized top-down on the reachable states: exact,
// exponential in the worst case, for small chains and tests (spec §4.10 (a)).
type table struct {
	c          *chain
	m          float64 // M, the memory limit in units, chain input included
	beta       float64 // β in units per time unit
	continuous bool
	nearest    bool    // sizes join A rounded to the nearest unit instead of up
	noOffload  bool    // v = 2 only: POFO reduces to the persistent rematerialization DP
	qtol       float64 // slack of the rounding up of Δ states
	tol        float64 // slack of memory comparisons
	prefF      []float64
	pa         []float64 // pa[s] = Σ_{k<s} ā_k in units, for the rounding of runs of ā (incAbar)
	seqFrom    []float64 // seqFrom[s] = Σ_{k=s}^{N} (u_F(k)+u_B(k)), a lower bound of OC at s
	seq2       []float64 // seq2[k] = Σ_{j≤k} (u_F(j)+u_B(j))
	tailF0     []float64 // tailF0[s] = max_{k∈(s,L]} rF0(·, k), −Inf when s = L
	oc         ocStore
	cd         cdStore
	// Lower bounds filled by the bottom-up fill: ocMin[x·(N+1)+s][A] is the smallest OC
	// over Δ_F, Δ_B (and run) at that A, cdMin[s·(N+1)+t][A] the smallest C_Δ over Δ
	// (and run). nil: the sequential times are used instead.
	ocMin, cdMin [][]float64
	// nearestDelta rounds every new Δ state to the nearest unit instead of up: no longer
	// conservative (the value may fall below the replayed makespan), but the rounding
	// errors of a long backlog cancel instead of adding up (Solve's "pofo-nearest").
	nearestDelta bool
}

// ocLB returns a lower bound of OC_x(s, A, ·, ·).
func (tb *table) ocLB(x, s int, a float64) float64 {
	if tb.ocMin != nil {
		if row := tb.ocMin[x*(tb.c.n+1)+s]; row != nil && int(a) < len(row) {
			return row[int(a)]
		}
	}
	return tb.seqFrom[s]
}

// cdLB returns a lower bound of C_Δ(s, t, A, ·).
func (tb *table) cdLB(s, t int, a float64) float64 {
	if tb.cdMin != nil {
		if row := tb.cdMin[s*(tb.c.n+1)+t]; row != nil && int(a) < len(row) {
			return row[int(a)]
		}
	}
	return tb.seq2[t] - tb.seq2[s-1]
}

// newTable returns an empty table for M = m units and β in units per time unit. In the
// discretized mode A and Δ states are whole numbers of units.
func newTable(c *chain, m, beta float64, continuous, noOffload bool) *table {
	n := c.n
	tb := &table{
		c: c, m: m, beta: beta, continuous: continuous, noOffload: noOffload,
		qtol: 1e-12 * max(1, m), tol: 1e-9 * max(1, m),
		prefF:   make([]float64, n+1),
		pa:      make([]float64, n+1),
		seqFrom: make([]float64, n+2),
		seq2:    make([]float64, n+1),
		tailF0:  make([]float64, n+1),
	}
	for k := 1; k <= n; k++ {
		tb.prefF[k] = tb.prefF[k-1] + c.uF[k]
		tb.seq2[k] = tb.seq2[k-1] + c.uF[k] + c.uB[k]
	}
	for k := n; k >= 1; k-- {
		tb.seqFrom[k] = tb.seqFrom[k+1] + c.uF[k] + c.uB[k]
	}
	for k := 1; k <= n; k++ {
		tb.pa[k] = tb.pa[k-1] + c.abar[k-1]
	}
	tb.tailF0[n] = math.Inf(-1)
	for s := n - 1; s >= 1; s-- {
		// rF0(s, k) for k > s does not depend on s.
		v := math.Inf(-1)
		if s+1 <= n-1 {
			v = max(tb.tailF0[s+1], c.rF0(0, s+1))
		}
		tb.tailF0[s] = v
	}
	var g *grid
	if !continuous {
		gr := newGrid(int(m))
		g = &gr
	}
	tb.cd.init(n, g)
	tb.oc.init(n, g)
	return tb
}

// q rounds a new Δ state up to whole units in the discretized mode (spec §4.9: new Δ
// states → ⌈·⌉, conservative), or to the nearest unit with nearestDelta.
func (tb *table) q(x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case tb.continuous:
		return x
	case tb.nearestDelta:
		return math.Floor(x + 0.5)
	}
	return math.Ceil(x - tb.qtol)
}

// beats reports whether a candidate whose value is at least lb may beat best: the
// branch-and-bound test of both tables. A candidate is skipped only when its lower bound
// exceeds the best value by more than the rounding of a sum, so every state's value stays
// exact; the bounds are the sequential times Σ(u_F+u_B) of what remains (no schedule runs
// a stage's forward and backward in less).
func beats(lb, best float64) bool { return lb <= best+1e-12*math.Abs(best) }

// qa rounds a stored size up to whole units when it joins A (discretized mode): the
// state A stays a whole number of units and never under-estimates the stored bytes,
// while every other size keeps its exact value (spec §4.9 reading, docs/pofo.md).
func (tb *table) qa(x float64) float64 {
	switch {
	case tb.continuous:
		return x
	case tb.nearest:
		return math.Floor(x + 0.5)
	}
	return math.Ceil(x - tb.qtol)
}

// incAbar returns what keeping ā_{s−1} adds to A. In the discretized mode the saved
// activations kept one after the other, ā_{i−1}, ā_i, …, ā_{j−1} (a run: the F_all
// segments of the forward phase, the F_all steps of case 1 in the backward phase), are
// rounded through the prefix sums Σ_{k<s} ā_k: the first adds ⌈Σ_{k<i}⌉ − ⌊Σ_{k<i−1}⌋, the
// next ones ⌈Σ_{k<s}⌉ − ⌈Σ_{k<s−1}⌉, so that a whole run costs less than two units more
// than its exact size instead of up to one unit per activation, and A never under-
// estimates the stored bytes. run says whether ā_{s−2} was the previous activation added.
// With 68 stages and 100 units, rounding each activation up cost more than a third of the
// budget on densenet121 (docs/pofo.md).
func (tb *table) incAbar(s int, run bool) float64 {
	if tb.continuous {
		return tb.c.abar[s-1]
	}
	hi := math.Ceil(tb.pa[s] - tb.qtol)
	if run {
		return hi - math.Ceil(tb.pa[s-1]-tb.qtol)
	}
	return hi - math.Floor(tb.pa[s-1]+tb.qtol)
}

// fits reports need ≤ avail up to the memory tolerance.
func (tb *table) fits(need, avail float64) bool { return need <= avail+tb.tol }

// Choices of C_Δ.
const (
	cdInfeasible int32 = -2
	cdBase       int32 = -1
	cdAll        int32 = 0
	// A positive code s' is case 2: F_s^ck F_{s+1}^∅ … F_{s'}^∅, keep a_{s'}.
)

type cdEntry struct {
	v  float64
	ch int32
}

type cdKey struct {
	s, t    int32
	run     bool
	a, dlta float64
}

// grid indexes the discretized states: A and Δ whole numbers of units with A + Δ ≤ m
// (stored data and backlog are both on the GPU).
type grid struct {
	m          int
	w          []int // w[a] = m − a + 1, the number of Δ values at A = a
	off1, off2 []int // Σ_{a'<a} w[a'] and Σ_{a'<a} w[a']²
}

func newGrid(m int) grid {
	g := grid{m: m, w: make([]int, m+1), off1: make([]int, m+2), off2: make([]int, m+2)}
	for a := 0; a <= m; a++ {
		g.w[a] = m - a + 1
		g.off1[a+1] = g.off1[a] + g.w[a]
		g.off2[a+1] = g.off2[a] + g.w[a]*g.w[a]
	}
	return g
}

// step returns the Δ index of d, or −1 when d is not on the grid at A = a.
func (g *grid) step(a int, d float64) int {
	j := int(d)
	if d < 0 || j >= g.w[a] || float64(j) != d {
		return -1
	}
	return j
}

// stepAt is step for any A: −1 when A is beyond the grid (such a state holds more than M).
func (g *grid) stepAt(a int, d float64) int {
	if a > g.m {
		return -1
	}
	return g.step(a, d)
}

// index1 returns the position of (A, Δ), or −1 off the grid.
func (g *grid) index1(a, d float64) int {
	ia := int(a)
	if a < 0 || ia > g.m || float64(ia) != a {
		return -1
	}
	j := g.step(ia, d)
	if j < 0 {
		return -1
	}
	return g.off1[ia] + j
}

// index2 returns the position of (A, Δ_F, Δ_B), or −1 off the grid.
func (g *grid) index2(a, f, b float64) int {
	ia := int(a)
	if a < 0 || ia > g.m || float64(ia) != a {
		return -1
	}
	jf, jb := g.step(ia, f), g.step(ia, b)
	if jf < 0 || jb < 0 {
		return -1
	}
	return g.off2[ia] + jf*g.w[ia] + jb
}

// cdStore memoizes C_Δ: a map in the continuous mode; in the discretized mode one lazily
// allocated slab per sub-chain (s, t) over the grid. The rare calls off the grid are
// computed without memoizing.
type cdStore struct {
	n    int
	g    *grid
	vals [][]float64
	chs  [][]int16
	mp   map[cdKey]cdEntry
}

func (st *cdStore) init(n int, g *grid) {
	st.n = n
	if g == nil {
		st.mp = make(map[cdKey]cdEntry)
		return
	}
	st.g = g
	st.vals = make([][]float64, 2*(n+1)*(n+1))
	st.chs = make([][]int16, 2*(n+1)*(n+1))
}

// slab returns the index of the slab of C_Δ(s, t, ·, ·, run).
func (st *cdStore) slab(s, t int, run bool) int {
	p := 2 * (s*(st.n+1) + t)
	if run {
		p++
	}
	return p
}

// size is the number of entries of one slab.
func (st *cdStore) size() int { return st.g.off1[st.g.m+1] }

// get returns the memoized C_Δ(s, t, A, Δ, run), if any.
func (st *cdStore) get(s, t int, run bool, a, d float64) (cdEntry, bool) {
	if st.mp != nil {
		e, ok := st.mp[cdKey{int32(s), int32(t), run, a, d}]
		return e, ok
	}
	p := st.slab(s, t, run)
	vals := st.vals[p]
	i := st.g.index1(a, d)
	if vals == nil || i < 0 || math.IsNaN(vals[i]) {
		return cdEntry{}, false
	}
	return cdEntry{v: vals[i], ch: int32(st.chs[p][i])}, true
}

func (st *cdStore) put(s, t int, run bool, a, d float64, e cdEntry) {
	if st.mp != nil {
		st.mp[cdKey{int32(s), int32(t), run, a, d}] = e
		return
	}
	i := st.g.index1(a, d)
	if i < 0 {
		return
	}
	p := st.slab(s, t, run)
	if st.vals[p] == nil {
		st.vals[p] = nanSlice(st.size())
		st.chs[p] = make([]int16, st.size())
	}
	st.vals[p][i], st.chs[p][i] = e.v, int16(e.ch)
}

func nanSlice(n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = math.NaN()
	}
	return s
}

// ocStore memoizes OC: a map in the continuous mode; in the discretized mode one lazily
// allocated slab per (x, s) over the grid (states off the grid are pruned before any
// lookup).
type ocStore struct {
	n    int
	g    *grid
	vals [][]float64
	chs  [][]ocChoice
	mp   map[ocKey]ocEntry
}

func (st *ocStore) init(n int, g *grid) {
	st.n = n
	if g == nil {
		st.mp = make(map[ocKey]ocEntry)
		return
	}
	st.g = g
	st.vals = make([][]float64, 4*(n+1))
	st.chs = make([][]ocChoice, 4*(n+1))
}

// slab returns the index of the slab of the states (x, run, s).
func (st *ocStore) slab(s ocState) int {
	p := 2 * s.x
	if s.run {
		p++
	}
	return p*(st.n+1) + s.s
}

func (st *ocStore) size() int { return st.g.off2[st.g.m+1] }

func (st *ocStore) get(s ocState) (ocEntry, bool) {
	if st.mp != nil {
		e, ok := st.mp[s.key()]
		return e, ok
	}
	p := st.slab(s)
	vals := st.vals[p]
	i := st.g.index2(s.a, s.dF, s.dB)
	if vals == nil || i < 0 || math.IsNaN(vals[i]) {
		return ocEntry{}, false
	}
	return ocEntry{v: vals[i], ch: st.chs[p][i]}, true
}

func (st *ocStore) put(s ocState, e ocEntry) {
	if st.mp != nil {
		st.mp[s.key()] = e
		return
	}
	i := st.g.index2(s.a, s.dF, s.dB)
	if i < 0 {
		return
	}
	p := st.slab(s)
	if st.vals[p] == nil {
		st.vals[p] = nanSlice(st.size())
		st.chs[p] = make([]ocChoice, st.size())
	}
	st.vals[p][i], st.chs[p][i] = e.v, e.ch
}
