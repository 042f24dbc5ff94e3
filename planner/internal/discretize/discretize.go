// Package discretize turns a chainplan.Chain into the integer chain the dynamic programs
// work on: sizes in whole memory units, indexed as in the specs (stages 1..N with N = L+1,
// the loss last; activations 0..N).
//
// The rule is rotor's (DESIGN.md, "Memory budget and discretization"): for a budget of B
// bytes and S slots the unit is max(1, floor(B/S)) bytes, every size is rounded up to whole
// units and the budget is rounded down. Rounding sizes up means a schedule that fits in
// units also fits in bytes.
package discretize

import (
	"github.com/chainplan/chainplan"
)

// Chain is a chain with integer sizes in units of Unit bytes. Slices are indexed as in the
// specs; index 0 of the per-stage slices is unused.
type Chain struct {
	N    int       // number of stages including the loss (L+1)
	UF   []float64 // u_F(ℓ), ℓ = 1..N
	UB   []float64 // u_B(ℓ), ℓ = 1..N
	A    []int64   // a_ℓ, ℓ = 0..N; a_N = 0 (the loss output)
	ABar []int64   // ā_ℓ, ℓ = 0..N; ā_0 = a_0, ā_N = 0
	OF   []int64   // o_F(ℓ), ℓ = 1..N
	OB   []int64   // o_B(ℓ), ℓ = 1..N
	Unit int64     // bytes per unit

	// The exact memory model and the options (chainplan.chain/v2), nil for a chain
	// read conservatively; read it through the methods of exact.go.
	Model *Model
}

// Unit returns the memory unit for a budget split into slots: max(1, floor(budget/slots)).
// A non-positive slot count means exact bytes (unit 1).
func Unit(budgetBytes, slots int64) int64 {
	if slots <= 0 || budgetBytes <= slots {
		return 1
	}
	return budgetBytes / slots
}

// Slots returns the slot count a request's slots option asks for at a budget: def when it
// is 0 (the planner's default), the budget itself (unit 1, exact bytes) when it is
// negative, else the count asked for. Every planner that discretizes memory reads the
// option through it, so "slots" means the same in each.
func Slots(asked, budgetBytes, def int64) int64 {
	switch {
	case asked == 0:
		return def
	case asked < 0:
		return max(budgetBytes, 1)
	}
	return asked
}

// Exact returns the chain with sizes in bytes (unit 1).
func Exact(c *chainplan.Chain) *Chain { return WithUnit(c, 1) }

// ForBudget returns the chain discretized for a budget and slot count.
func ForBudget(c *chainplan.Chain, budgetBytes, slots int64) *Chain {
	return WithUnit(c, Unit(budgetBytes, slots))
}

// WithUnit returns the chain with every size rounded up to whole units of unit bytes.
// It panics if unit < 1.
func WithUnit(c *chainplan.Chain, unit int64) *Chain {
	if unit < 1 {
		panic("discretize: unit must be at least 1")
	}
	up := func(b int64) int64 { return (b + unit - 1) / unit }
	l := len(c.Stages)
	n := l + 1
	d := &Chain{
		N: n, Unit: unit,
		UF: make([]float64, n+1), UB: make([]float64, n+1),
		A: make([]int64, n+1), ABar: make([]int64, n+1),
		OF: make([]int64, n+1), OB: make([]int64, n+1),
	}
	d.A[0] = up(c.InputBytes)
	d.ABar[0] = d.A[0]
	for i, s := range c.Stages {
		k := i + 1
		d.UF[k], d.UB[k] = s.FwdTime, s.BwdTime
		d.A[k], d.ABar[k] = up(s.OutBytes), up(s.SavedBytes)
		d.OF[k], d.OB[k] = up(s.FwdTmpBytes), up(s.BwdTmpBytes)
	}
	d.UF[n], d.UB[n] = c.Loss.FwdTime, c.Loss.BwdTime
	d.OF[n], d.OB[n] = up(c.Loss.FwdTmpBytes), up(c.Loss.BwdTmpBytes)
	if c.FormatTag() == chainplan.ChainFormatV2 {
		d.Model = exactOf(c, d, up)
	}
	return d
}

// Units returns a byte budget in whole units, rounded down.
func (d *Chain) Units(bytes int64) int64 { return bytes / d.Unit }

// Bytes returns a number of units in bytes.
func (d *Chain) Bytes(units int64) int64 { return units * d.Unit }

// SumTime returns Σ(u_F+u_B) over all stages, the no-recomputation makespan.
func (d *Chain) SumTime() float64 {
	var t float64
	for k := 1; k <= d.N; k++ {
		t += d.UF[k] + d.UB[k]
	}
	return t
}

// Grad returns δ_ℓ, the size of the gradient of a_ℓ, which equals a_ℓ (δ_N = 0).
func (d *Chain) Grad(l int) int64 { return d.A[l] }

// Sub returns layers s..t of c (1 ≤ s ≤ t ≤ L) as a chain of N = t−s+1 stages in exact
// bytes, layer s first, with a_0 = a_{s−1}: a pipeline stage's part of the chain. It has no
// loss: its last stage is layer t, whose output a_t (and gradient δ_t) keep their size.
// It panics when s..t is not a range of c's layers.
func Sub(c *chainplan.Chain, s, t int) *Chain {
	if s < 1 || t < s || t > len(c.Stages) {
		panic("discretize: sub-chain out of the chain's layers")
	}
	n := t - s + 1
	d := &Chain{
		N: n, Unit: 1,
		UF: make([]float64, n+1), UB: make([]float64, n+1),
		A: make([]int64, n+1), ABar: make([]int64, n+1),
		OF: make([]int64, n+1), OB: make([]int64, n+1),
	}
	if s > 1 {
		d.A[0] = c.Stages[s-2].OutBytes
	} else {
		d.A[0] = c.InputBytes
	}
	d.ABar[0] = d.A[0]
	for k := 1; k <= n; k++ {
		st := c.Stages[s+k-2]
		d.UF[k], d.UB[k] = st.FwdTime, st.BwdTime
		d.A[k], d.ABar[k] = st.OutBytes, st.SavedBytes
		d.OF[k], d.OB[k] = st.FwdTmpBytes, st.BwdTmpBytes
	}
	return d
}
