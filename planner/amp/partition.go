package amp

import (
	"math"
	"slices"
)

// cutProblem is the layer-assignment problem of spec §3.5 for a fixed pipeline depth
// k = len(Class) and gas micro-batches, with a speed class per stage: stage j (0-based)
// runs blocks a..b−1 in Pre[Class[j]][b] − Pre[Class[j]][a], one micro-batch forward and
// backward on its devices; cutting after the first c blocks between stages j and j+1
// costs Comm(c, j). Solve minimises AMP's Eq. 5,
//
//	T^pp = (gas−1)·max_j T_j + Σ_j T_j + Σ_j e_j,
//
// over the contiguous assignments of the L blocks to the k stages (each stage at least one
// block), plus, when Sync is set, Eq. 4's max_j S_j: the data-parallel synchronisation
// depends on the cut too (a stage's gradients are its blocks' parameters), and AMP's DP,
// which leaves it out, can pick a cut whose synchronisation costs more than it saves.
// With one class and no Sync, Σ_j T_j is constant and this is exactly the paper's problem.
type cutProblem struct {
	// Pre[c] holds the prefix sums of the blocks' times on class c: Pre[c][0] = 0,
	// Pre[c][i] the first i blocks; non-decreasing.
	Pre [][]float64
	// Class[j] is stage j's speed class.
	Class []int
	// Comm(c, j) is e: the transfer of the boundary after block c (1 ≤ c < L) from stage j
	// to stage j+1 (0 ≤ j < k−1); nil means 0.
	Comm func(c, j int) float64
	// GAS is the number of micro-batches, ≥ 1.
	GAS int
	// Sync, when set, makes stage j's synchronisation S_j = Sync.Base[j] +
	// Sync.PerByte[j]·(Sync.Bytes[b] − Sync.Bytes[a]) for blocks a..b−1 (Sync.Bytes: the
	// blocks' parameter bytes as prefix sums), and Solve minimises T^pp + max_j S_j.
	Sync *syncTerm
}

// syncTerm is the synchronisation term of cutProblem: affine in the stage's parameter bytes.
type syncTerm struct {
	Base, PerByte []float64 // per stage: α terms, and seconds per byte
	Bytes         []float64 // prefix sums over blocks, Bytes[0] = 0
}

// stage returns S_j for blocks a..b−1.
func (y *syncTerm) stage(j, a, b int) float64 {
	if y == nil {
		return 0
	}
	return y.Base[j] + y.PerByte[j]*(y.Bytes[b]-y.Bytes[a])
}

// Solve returns the smallest T^pp and the boundaries b_0 = 0 < b_1 < ... < b_k = L that
// reach it (stage j holds blocks b_j..b_{j+1}−1); among equal costs, the smallest
// bottleneck, then the earliest cuts. k must be in 1..L.
//
// Method (the equivalent formulation of spec §3.5 [REC]): for a bottleneck bound m, the
// smallest Σ(T_j + e_j) over assignments whose stages all take at most m is a DP over
// (stage, blocks) in O(k·L²); T^pp is the minimum over m of (gas−1)·m + that sum, and m
// need only range over the stages' possible times (segment sums per class). The sweep
// starts at the smallest feasible m (a binary search: feasibility is monotone in m) and
// stops once (gas−1)·m plus the unconstrained minimum of Σ(T_j + e_j) reaches the best
// cost found, which no larger m can beat. The result equals the paper's O(k·L⁴) DP
// (Appendix A.1) and brute force (tests).
func (p *cutProblem) Solve() (float64, []int) {
	k := len(p.Class)
	L := len(p.Pre[0]) - 1
	if k < 1 || k > L {
		panic("amp: cutProblem.Solve: want 1 ≤ k ≤ L")
	}
	d := newSweep(p, k, L)
	inf := math.Inf(1)
	sumMin, bounds, _ := d.run(inf, inf)
	if p.GAS <= 1 && p.Sync == nil {
		return sumMin, bounds
	}
	g := float64(p.GAS - 1)
	ms := p.bottlenecks(L)
	ss := []float64{inf}
	if p.Sync != nil {
		ss = p.syncs(L)
	}
	// The smallest feasible bounds: feasibility is monotone in each.
	mLo := sortSearch(len(ms), func(i int) bool { _, _, ok := d.run(ms[i], inf); return ok })
	sLo := sortSearch(len(ss), func(i int) bool { _, _, ok := d.run(inf, ss[i]); return ok })
	best, bestBounds := inf, []int(nil)
	for _, sb := range ss[sLo:] {
		s0 := sb
		if p.Sync == nil {
			s0 = 0
		}
		if s0+g*ms[mLo]+sumMin >= best {
			break
		}
		first := sortSearch(len(ms), func(i int) bool { _, _, ok := d.run(ms[i], sb); return ok })
		for _, m := range ms[first:] {
			if g*m+s0+sumMin >= best {
				break
			}
			v, bounds, ok := d.run(m, sb)
			if !ok {
				continue
			}
			// The assignment's own maxima may lie below the bounds: price it exactly.
			if cost := g*p.bottleneck(bounds) + p.maxSync(bounds) + v; cost < best {
				best, bestBounds = cost, bounds
			}
		}
	}
	return best, bestBounds
}

// Cost returns T^pp of the assignment bounds (k+1 boundaries from 0 to L).
func (p *cutProblem) Cost(bounds []int) float64 {
	var sum float64
	for j := 0; j+1 < len(bounds); j++ {
		sum += p.stageTime(j, bounds[j], bounds[j+1])
		if j+2 < len(bounds) && p.Comm != nil {
			sum += p.Comm(bounds[j+1], j)
		}
	}
	return float64(p.GAS-1)*p.bottleneck(bounds) + p.maxSync(bounds) + sum
}

// maxSync returns max_j S_j of an assignment (0 without Sync).
func (p *cutProblem) maxSync(bounds []int) float64 {
	var m float64
	for j := 0; j+1 < len(bounds); j++ {
		m = math.Max(m, p.Sync.stage(j, bounds[j], bounds[j+1]))
	}
	return m
}

// syncs returns every possible S_j, sorted and distinct.
func (p *cutProblem) syncs(L int) []float64 {
	var ss []float64
	for j := range p.Class {
		for a := 0; a < L; a++ {
			for b := a + 1; b <= L; b++ {
				ss = append(ss, p.Sync.stage(j, a, b))
			}
		}
	}
	slices.Sort(ss)
	return slices.Compact(ss)
}

// bottleneck returns max_j T_j of an assignment.
func (p *cutProblem) bottleneck(bounds []int) float64 {
	var m float64
	for j := 0; j+1 < len(bounds); j++ {
		m = math.Max(m, p.stageTime(j, bounds[j], bounds[j+1]))
	}
	return m
}

func (p *cutProblem) stageTime(j, a, b int) float64 {
	pre := p.Pre[p.Class[j]]
	return pre[b] - pre[a]
}

// bottlenecks returns every possible stage time (segment sums of the classes the stages
// use), sorted and distinct.
func (p *cutProblem) bottlenecks(L int) []float64 {
	var ms []float64
	seen := map[int]bool{}
	for _, c := range p.Class {
		if seen[c] {
			continue
		}
		seen[c] = true
		pre := p.Pre[c]
		for a := 0; a < L; a++ {
			for b := a + 1; b <= L; b++ {
				ms = append(ms, pre[b]-pre[a])
			}
		}
	}
	slices.Sort(ms)
	return slices.Compact(ms)
}

// sweep is the bounded DP's reusable state.
type sweep struct {
	p    *cutProblem
	k, L int
	e    [][]float64 // e[j][c]: Comm(c, j)
	g    [][]float64 // g[j][i]: min Σ(T+e) of blocks 0..i−1 in stages 0..j
	arg  [][]int
}

func newSweep(p *cutProblem, k, L int) *sweep {
	d := &sweep{p: p, k: k, L: L, e: make([][]float64, k), g: make([][]float64, k), arg: make([][]int, k)}
	for j := range k {
		d.g[j] = make([]float64, L+1)
		d.arg[j] = make([]int, L+1)
		d.e[j] = make([]float64, L+1)
		if p.Comm != nil && j < k-1 {
			for c := 1; c < L; c++ {
				d.e[j][c] = p.Comm(c, j)
			}
		}
	}
	return d
}

// run returns the smallest Σ_j(T_j + e_j) over the assignments whose stages all take at
// most m and synchronise within sb, its boundaries, and false when there is none. Ties go
// to the earliest cuts.
func (d *sweep) run(m, sb float64) (float64, []int, bool) {
	y := d.p.Sync
	inf := math.Inf(1)
	k, L := d.k, d.L
	for j := range k {
		pre := d.p.Pre[d.p.Class[j]]
		gj, aj := d.g[j], d.arg[j]
		// Stage j ends after block i: at least j+1 blocks before, k−1−j after.
		for i := range gj {
			gj[i] = inf
		}
		for i := j + 1; i <= L-(k-1-j); i++ {
			if j == 0 {
				if t := pre[i]; t <= m && (y == nil || y.stage(0, 0, i) <= sb) {
					gj[i], aj[i] = t, 0
				}
				continue
			}
			best, arg := inf, -1
			prev, e := d.g[j-1], d.e[j-1]
			// The stage holds blocks c..i−1; its time grows as c falls, so stop at m.
			for c := i - 1; c >= j; c-- {
				t := pre[i] - pre[c]
				if t > m || (y != nil && y.stage(j, c, i) > sb) {
					break
				}
				if prev[c] == inf {
					continue
				}
				if v := prev[c] + t + e[c]; v <= best {
					best, arg = v, c
				}
			}
			gj[i], aj[i] = best, arg
		}
	}
	v := d.g[k-1][L]
	if v == inf {
		return inf, nil, false
	}
	bounds := make([]int, k+1)
	bounds[k] = L
	for j := k - 1; j > 0; j-- {
		bounds[j] = d.arg[j][bounds[j+1]]
	}
	return v, bounds, true
}

// sortSearch is sort.Search: the smallest i in [0, n) with f(i) true, n if none.
func sortSearch(n int, f func(int) bool) int {
	lo, hi := 0, n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if !f(mid) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}
