package units

import (
	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
)

// Chain is a chain in memory units with float64 sizes, indexed as in the spec.
type Chain struct {
	N       int
	UF, UB  []float64 // u_F(ℓ), u_B(ℓ)
	A, ABar []float64 // a_ℓ, ā_ℓ (ā_0 = a_0)
	OF, OB  []float64 // o_F(ℓ), o_B(ℓ)
	Unit    int64     // bytes per unit
}

// FromDiscrete converts an integer chain.
func FromDiscrete(d *discretize.Chain) *Chain {
	f := func(v []int64) []float64 {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out
	}
	return &Chain{
		N:  d.N,
		UF: append([]float64(nil), d.UF...), UB: append([]float64(nil), d.UB...),
		A: f(d.A), ABar: f(d.ABar), OF: f(d.OF), OB: f(d.OB),
		Unit: d.Unit,
	}
}

// Scaled returns the chain with every size divided by unit, unrounded.
func (c *Chain) Scaled(unit int64) *Chain {
	u := float64(unit)
	f := func(v []float64) []float64 {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = x / u
		}
		return out
	}
	return &Chain{N: c.N, UF: c.UF, UB: c.UB, A: f(c.A), ABar: f(c.ABar), OF: f(c.OF), OB: f(c.OB), Unit: unit}
}

// Exact returns c with sizes in bytes (unit 1). The chain is assumed valid.
func Exact(c *chainplan.Chain) *Chain { return FromDiscrete(discretize.Exact(c)) }

// Delta returns δ_ℓ, the size of the gradient of a_ℓ.
func (c *Chain) Delta(l int) float64 { return c.A[l] }

// RFall is the forward-phase need of F_s^all on top of its input and of everything stored:
// ā_s + o_F(s). The forward phase carries the gradient δ_{L+1} = 0 (spec §1.4, pitfall 3).
func (c *Chain) RFall(s int) float64 { return c.ABar[s] + c.OF[s] }

// RB is the need of B_s on top of its input: ā_s + δ_s + δ_{s−1} + o_B(s) (spec §4.5).
func (c *Chain) RB(s int) float64 { return c.ABar[s] + c.A[s] + c.A[s-1] + c.OB[s] }

// RF0 is the forward-phase need of the k-th forward of a segment that starts at s with
// F_s^ck: a_s + o_F(s) for k = s (the input counted outside), a_{k−1} + a_k + o_F(k) after.
func (c *Chain) RF0(s, k int) float64 {
	if k == s {
		return c.A[s] + c.OF[s]
	}
	return c.A[k-1] + c.A[k] + c.OF[k]
}

// SumTime returns Σ(u_F+u_B) over all stages and the loss, the sequential time.
func (c *Chain) SumTime() float64 {
	var t float64
	for k := 1; k <= c.N; k++ {
		t += c.UF[k] + c.UB[k]
	}
	return t
}

// StoreAllPeak is M_peak of (3.3): the peak of F_1^all … F_{L+1}^all B_{L+1} … B_1,
//
//	max over ℓ of max(o_F(ℓ)+ā_ℓ, o_B(ℓ)+ā_ℓ+δ_ℓ+δ_{ℓ−1}) + Σ_{k<ℓ} ā_k,
//
// the sum starting at ā_0 = a_0 (spec §3.1).
func (c *Chain) StoreAllPeak() float64 {
	var stored, peak float64
	for l := 1; l <= c.N; l++ {
		stored += c.ABar[l-1]
		need := max(c.OF[l]+c.ABar[l], c.OB[l]+c.ABar[l]+c.A[l]+c.A[l-1])
		peak = max(peak, stored+need)
	}
	return peak
}
