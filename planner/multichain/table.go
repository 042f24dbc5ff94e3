package multichain

import (
	"runtime"
	"sync"
)

// table is the dynamic program Opt(R, μ) of spec §5.2 (Theorem 3 with the heterogeneous
// times of spec §6) for every vector R of remaining lengths (0 ≤ R_j ≤ L_j, branch j's
// first L_j − R_j stages done) and every slot count μ ≤ μmax, with its argmin (k, i): the
// first decision, replicate the head of branch k and forward it i steps. b is derived from
// R (b_j = b⁰_j or R_j < L_j: a branch that was cut must leave its gradient for its head),
// so the state is (R, μ) alone:
//
//	Opt(0⃗, μ) = u_L                                                             μ ≥ K
//	Opt(R, μ) = min_{k, 1≤i≤R_k} [ P_k(off_k+i) − P_k(off_k) + Opt(R − i·e_k, μ−1)
//	                               + AC_k(off_k, i−1, μ − Σ_{j≠k} b_j) ]          μ ≥ m_min(R, b)
//
// with off_k = L_k − R_k. The adjoint chain of branch k runs after the sub-problem has
// finished and has every slot but the gradients the other branches keep (spec §10.2).
type table struct {
	in     *instance
	k      int
	stride []int // state index = Σ_j R_j·stride[j]
	states int
	muMax  int       // min(m, K + ΣL): larger budgets are clamped (spec §5.2)
	val    []float64 // Opt(R, μ) at μ·states + state
	argK   []int8    // the argmin (k, i), k 0-based; -1 for infeasible states
	argI   []int16
	ac     []*adjoint
	suffix [][]float64 // suffix[j][off] = Σ_{q>off} (u_F + u_B): what is left of branch j without recomputation
}

// newTable fills the table for slot counts 0..min(m, K+ΣL). Its cost is
// O(μmax·Π_j(L_j+1)·ΣL_j) time and O(μmax·Π_j(L_j+1)) memory, plus the adjoint chains'
// O(L_j³·min(m, L_j)). Errors: a *chainplan.SizeError, before anything is allocated, when
// the tables would pass the limits of limits.go.
func newTable(in *instance, m int) (*table, error) {
	k := len(in.L)
	muMax := max(0, min(m, k+in.sumL()+in.bare()))
	if err := checkTables(in, muMax); err != nil {
		return nil, err
	}
	tb := &table{in: in, k: k, stride: make([]int, k), states: 1, muMax: muMax}
	for j := k - 1; j >= 0; j-- {
		tb.stride[j] = tb.states
		tb.states *= in.L[j] + 1
	}
	for j := range k {
		tb.ac = append(tb.ac, newAdjoint(in.uF[j], in.uB[j], tb.muMax))
		s := make([]float64, in.L[j]+1)
		for off := in.L[j] - 1; off >= 0; off-- {
			s[off] = s[off+1] + in.uF[j][off+1] + in.uB[j][off+1]
		}
		tb.suffix = append(tb.suffix, s)
	}
	cells := tb.states * (tb.muMax + 1)
	tb.val, tb.argK, tb.argI = make([]float64, cells), make([]int8, cells), make([]int16, cells)
	for mu := 0; mu <= tb.muMax; mu++ {
		tb.fillLayer(mu)
	}
	return tb, nil
}

// fillLayer computes Opt(·, μ) from layer μ−1 (spec §10.11), the states split among the
// cores when there are many.
func (tb *table) fillLayer(mu int) {
	workers := 1
	if tb.states >= 4096 {
		workers = min(runtime.GOMAXPROCS(0), 8)
	}
	chunk := (tb.states + workers - 1) / workers
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*chunk, min(tb.states, (w+1)*chunk)
		if lo >= hi {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			tb.fillRange(mu, lo, hi)
		}()
	}
	wg.Wait()
}

// fillRange computes Opt(R, μ) for the states lo..hi−1, walking R as an odometer.
func (tb *table) fillRange(mu, lo, hi int) {
	in, k := tb.in, tb.k
	r := tb.decode(lo)
	b := make([]bool, k)
	for s := lo; s < hi; s++ {
		v, ak, ai := tb.solveState(mu, s, r, b)
		at := mu*tb.states + s
		tb.val[at], tb.argK[at], tb.argI[at] = v, ak, ai
		for j := k - 1; j >= 0; j-- { // next state: R_{K−1} varies fastest
			if r[j] < in.L[j] {
				r[j]++
				break
			}
			r[j] = 0
		}
	}
}

// solveState returns Opt(R, μ) and its argmin for state s = R; b is scratch space.
// Ties: branches in order, then steps in order, a strictly smaller value replacing the
// current one (spec §5.2, the tie rule of §7.1's decision chain).
func (tb *table) solveState(mu, s int, r []int, b []bool) (float64, int8, int16) {
	in, k := tb.in, tb.k
	sumR, held, z := 0, 0, in.bare()
	for j := range k {
		sumR += r[j]
		b[j] = in.b0[j] || r[j] < in.L[j]
		// What branch j holds once its part of the sub-problem is done: its kept gradient,
		// and its input when that stays.
		held += btoi(b[j]) + in.stay(r[j], in.L[j])
	}
	switch {
	case sumR == 0:
		if mu >= k+z {
			return in.uL, -1, 0
		}
		return inf, -1, 0
	case mu < minSlots(r, in.L, b, in.keepInputs): // Lemma 2 (spec §4.3)
		return inf, -1, 0
	case mu >= k+sumR+z: // store everything (spec §5.2; tight for the thesis's model)
		v := in.uL
		first := -1
		for j := range k {
			v += tb.suffix[j][in.L[j]-r[j]]
			if first < 0 && r[j] > 0 {
				first = j
			}
		}
		return v, int8(first), 1
	}
	best, bk, bi := inf, int8(-1), int16(0)
	below := (mu - 1) * tb.states
	for j := range k {
		if r[j] == 0 {
			continue
		}
		// The adjoint chain's slots: all but what the other branches hold (spec §10.2).
		mu0 := mu - (held - btoi(b[j]) - in.stay(r[j], in.L[j]))
		off := in.L[j] - r[j]
		ac, p := tb.ac[j], tb.ac[j].prefix
		for i := 1; i <= r[j]; i++ {
			c0 := ac.value(off, i-1, mu0)
			if c0 == inf {
				continue
			}
			sub := tb.val[below+s-i*tb.stride[j]]
			if sub == inf {
				continue
			}
			if v := p[off+i] - p[off] + sub + c0; v < best {
				best, bk, bi = v, int8(j), int16(i)
			}
		}
	}
	return best, bk, bi
}

// decode returns the remaining lengths of state s.
func (tb *table) decode(s int) []int {
	r := make([]int, tb.k)
	for j := range tb.k {
		r[j] = s / tb.stride[j]
		s %= tb.stride[j]
	}
	return r
}

// top is the state of the whole problem, R = L.
func (tb *table) top() int {
	s := 0
	for j, n := range tb.in.L {
		s += n * tb.stride[j]
	}
	return s
}

// value returns Opt(L, m): the optimal makespan with m slots, inf when m < m_min.
func (tb *table) value(m int) float64 {
	if m < 0 {
		return inf
	}
	return tb.val[min(m, tb.muMax)*tb.states+tb.top()]
}
