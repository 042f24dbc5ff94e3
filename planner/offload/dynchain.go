package offload

import (
	"math"

	"github.com/chainplan/chainplan/planner/offload/internal/units"
)

// dynChain is the discretized chain of DYNPROG (spec §3.4.5): overheads and gradients
// rounded up, link capacities u·β rounded down through their prefix sums, saved sizes ā by
// the iterative optimistic scheme.
type dynChain struct {
	n          int
	unit       float64
	m          int64     // M in units
	beta       float64   // β in units per time unit
	uF, uB     []float64 // 1..n
	abar       []int64   // ã_0..ã_n (ã_n = 0)
	down       []bool    // ã_i was rounded below ā_i/unit
	delta      []int64   // δ_0..δ_n, rounded up (δ_n = 0)
	oF, oB     []int64   // 1..n
	capF, capB []int64   // ⌊u·β⌋ per stage, from rounded prefix sums
	exact      *units.Chain
	// maxStates bounds the states the DP keeps (dynStateBytes each), from
	// chainplan.TableLimit; over is the refusal once a stage would pass it.
	maxStates float64
	over      error
}

func newDynChain(c *units.Chain, budget, slots int64, beta float64) *dynChain {
	n := c.N
	unit := max(1, budget/max(1, slots))
	if slots <= 0 {
		unit = 1
	}
	u := float64(unit)
	up := func(x float64) int64 { return int64(math.Ceil(x/u - 1e-9)) }
	d := &dynChain{
		n: n, unit: u, m: budget / unit, beta: beta / u, exact: c, maxStates: maxDynStates(),
		uF: c.UF, uB: c.UB,
		abar: make([]int64, n+1), down: make([]bool, n+1), delta: make([]int64, n+1),
		oF: make([]int64, n+1), oB: make([]int64, n+1), capF: make([]int64, n+1), capB: make([]int64, n+1),
	}
	// Optimistic ā: round the prefix sums up, so that the first activations, which optimal
	// schedules tend to offload, are not over-estimated (L1975).
	var prefix float64
	prevUp := int64(0)
	for i := 0; i <= n; i++ {
		prefix += c.ABar[i]
		cur := up(prefix)
		d.abar[i] = cur - prevUp
		d.down[i] = float64(d.abar[i])*u < c.ABar[i]
		prevUp = cur
	}
	for i := 0; i <= n; i++ {
		d.delta[i] = up(c.A[i])
	}
	var sF, sB float64
	prevF, prevB := int64(0), int64(0)
	for i := 1; i <= n; i++ {
		d.oF[i], d.oB[i] = up(c.OF[i]), up(c.OB[i])
		// Capacities round down through the prefix sums (L1973), so that their total is
		// never over-estimated.
		sF += c.UF[i] * d.beta
		sB += c.UB[i] * d.beta
		cf, cb := int64(math.Floor(sF+1e-9)), int64(math.Floor(sB+1e-9))
		d.capF[i], d.capB[i] = cf-prevF, cb-prevB
		prevF, prevB = cf, cb
	}
	return d
}

// bump rounds up one value that the optimistic scheme rounded down (L1975): the one whose
// rounded-up value is closest to its true value, i.e. with the largest fractional part
// (spec §8 reading). It reports false when none is left.
func (d *dynChain) bump() bool {
	best, bestFrac := -1, -1.0
	for i := 0; i <= d.n; i++ {
		if !d.down[i] {
			continue
		}
		x := d.exact.ABar[i] / d.unit
		if f := x - math.Floor(x); f > bestFrac {
			best, bestFrac = i, f
		}
	}
	if best < 0 {
		return false
	}
	d.abar[best] = int64(math.Ceil(d.exact.ABar[best]/d.unit - 1e-9))
	d.down[best] = false
	return true
}
