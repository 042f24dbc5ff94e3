package pofo

import (
	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
)

// chain is a chain in memory units with float64 sizes, indexed as in the spec: stages
// 1..n with n = L+1 (the loss last), activations 0..n. Index 0 of the per-stage slices is
// unused. The gradient δ_ℓ has the size of a_ℓ, and a_n = ā_n = 0 (spec §1.1).
type chain struct {
	n       int
	uF, uB  []float64 // u_F(ℓ), u_B(ℓ)
	a, abar []float64 // a_ℓ, ā_ℓ (ā_0 = a_0)
	oF, oB  []float64 // o_F(ℓ), o_B(ℓ)
	unit    int64     // bytes per unit
}

// fromDiscrete converts an integer chain.
func fromDiscrete(d *discretize.Chain) *chain {
	f := func(v []int64) []float64 {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out
	}
	return &chain{
		n:  d.N,
		uF: append([]float64(nil), d.UF...), uB: append([]float64(nil), d.UB...),
		a: f(d.A), abar: f(d.ABar), oF: f(d.OF), oB: f(d.OB),
		unit: d.Unit,
	}
}

// scaled returns the chain with every size divided by unit, unrounded.
func (c *chain) scaled(unit int64) *chain {
	u := float64(unit)
	f := func(v []float64) []float64 {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = x / u
		}
		return out
	}
	return &chain{n: c.n, uF: c.uF, uB: c.uB, a: f(c.a), abar: f(c.abar), oF: f(c.oF), oB: f(c.oB), unit: unit}
}

// exactChain returns c with sizes in bytes (unit 1).
func exactChain(c *chainplan.Chain) *chain { return fromDiscrete(discretize.Exact(c)) }

// delta returns δ_ℓ, the size of the gradient of a_ℓ.
func (c *chain) delta(l int) float64 { return c.a[l] }

// rFall is the forward-phase need of F_s^all on top of its input and of everything stored:
// ā_s + o_F(s). The forward phase carries the gradient δ_{L+1} = 0 (spec §1.4, pitfall 3).
func (c *chain) rFall(s int) float64 { return c.abar[s] + c.oF[s] }

// rB is the need of B_s on top of its input: ā_s + δ_s + δ_{s−1} + o_B(s) (spec §4.5).
func (c *chain) rB(s int) float64 { return c.abar[s] + c.a[s] + c.a[s-1] + c.oB[s] }

// rF0 is the forward-phase need of the k-th forward of a segment that starts at s with
// F_s^ck: a_s + o_F(s) for k = s (the input counted outside), a_{k−1} + a_k + o_F(k) after.
func (c *chain) rF0(s, k int) float64 {
	if k == s {
		return c.a[s] + c.oF[s]
	}
	return c.a[k-1] + c.a[k] + c.oF[k]
}

// sumTime returns Σ(u_F+u_B) over all stages and the loss, the sequential time.
func (c *chain) sumTime() float64 {
	var t float64
	for k := 1; k <= c.n; k++ {
		t += c.uF[k] + c.uB[k]
	}
	return t
}

// storeAllPeak is M_peak of (3.3): the peak of F_1^all … F_{L+1}^all B_{L+1} … B_1,
//
//	max over ℓ of max(o_F(ℓ)+ā_ℓ, o_B(ℓ)+ā_ℓ+δ_ℓ+δ_{ℓ−1}) + Σ_{k<ℓ} ā_k,
//
// the sum starting at ā_0 = a_0 (spec §3.1).
func (c *chain) storeAllPeak() float64 {
	var stored, peak float64
	for l := 1; l <= c.n; l++ {
		stored += c.abar[l-1]
		need := max(c.oF[l]+c.abar[l], c.oB[l]+c.abar[l]+c.a[l]+c.a[l-1])
		peak = max(peak, stored+need)
	}
	return peak
}

// StoreAllPeak returns M_peak (pofo spec (3.3)), the smallest budget at which no
// activation needs to be offloaded or recomputed, in bytes.
func StoreAllPeak(c *chainplan.Chain) int64 { return int64(exactChain(c).storeAllPeak()) }

// LowBudget returns M^low of pofo spec §6.4 in bytes: the peak of the sequence that keeps
// only a_0 and recomputes everything from the start before each backward,
//
//	F_1^ck F_2^∅ … F_L^∅ F_{L+1}^all B_{L+1}, then for ℓ = L..1: F_1^ck F_2^∅ … F_{ℓ−1}^∅ F_ℓ^all B_ℓ.
//
// The thesis sweeps budgets between LowBudget and StoreAllPeak.
func LowBudget(c *chainplan.Chain) int64 {
	l := c.Len()
	var seq []chainplan.Op
	prefix := func(upto int) {
		for k := 1; k < upto; k++ {
			kind := chainplan.FNone
			if k == 1 {
				kind = chainplan.FCk
			}
			seq = append(seq, chainplan.Op{Kind: kind, Stage: k})
		}
	}
	for s := l + 1; s >= 1; s-- {
		prefix(s)
		seq = append(seq, chainplan.Op{Kind: chainplan.FAll, Stage: s}, chainplan.Op{Kind: chainplan.B, Stage: s})
	}
	lg := analyze(exactChain(c), Schedule{Compute: seq})
	return int64(lg.peakNoTransfer())
}
