package pofo

import (
	"math"
	"time"

	"github.com/chainplan/chainplan"
)

// This file is DYNPROG, Algorithm 5 of the thesis (spec §3.4): the dynamic program over
// ordered, no-wait offloading schedules without recomputation in the model of fractional
// communications (O.7''). For each stage i = 1..L+1 it decides whether to offload ā_{i−1},
// the input of stage i, over the states (A, Δ_F, Δ_B) in whole memory units.

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
	exact      *chain
}

func newDynChain(c *chain, budget, slots int64, beta float64) *dynChain {
	n := c.n
	unit := max(1, budget/max(1, slots))
	if slots <= 0 {
		unit = 1
	}
	u := float64(unit)
	up := func(x float64) int64 { return int64(math.Ceil(x/u - 1e-9)) }
	d := &dynChain{
		n: n, unit: u, m: budget / unit, beta: beta / u, exact: c,
		uF: c.uF, uB: c.uB,
		abar: make([]int64, n+1), down: make([]bool, n+1), delta: make([]int64, n+1),
		oF: make([]int64, n+1), oB: make([]int64, n+1), capF: make([]int64, n+1), capB: make([]int64, n+1),
	}
	// Optimistic ā: round the prefix sums up, so that the first activations, which optimal
	// schedules tend to offload, are not over-estimated (L1975).
	var prefix float64
	prevUp := int64(0)
	for i := 0; i <= n; i++ {
		prefix += c.abar[i]
		cur := up(prefix)
		d.abar[i] = cur - prevUp
		d.down[i] = float64(d.abar[i])*u < c.abar[i]
		prevUp = cur
	}
	for i := 0; i <= n; i++ {
		d.delta[i] = up(c.a[i])
	}
	var sF, sB float64
	prevF, prevB := int64(0), int64(0)
	for i := 1; i <= n; i++ {
		d.oF[i], d.oB[i] = up(c.oF[i]), up(c.oB[i])
		// Capacities round down through the prefix sums (L1973), so that their total is
		// never over-estimated.
		sF += c.uF[i] * d.beta
		sB += c.uB[i] * d.beta
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
		x := d.exact.abar[i] / d.unit
		if f := x - math.Floor(x); f > bestFrac {
			best, bestFrac = i, f
		}
	}
	if best < 0 {
		return false
	}
	d.abar[best] = int64(math.Ceil(d.exact.abar[best]/d.unit - 1e-9))
	d.down[best] = false
	return true
}

// dynState is one state of Algorithm 5 at stage i.
type dynState struct {
	a, dF, dB int64
}

type dynEntry struct {
	dynState
	val  float64
	prev int32 // index of the predecessor in the previous stage
	off  bool  // ā_{i−1} offloaded on the way in
}

func pos(x int64) int64 { return max(x, 0) }

// table runs Algorithm 5 and returns the offload decisions of the best end state
// (off[ℓ] for ā_ℓ, ℓ = 0..L) and its value; ok is false when no state survives.
// With cheap, the junction is the synchronized ε_G = (Δ_F⁺+Δ_B⁺)/β of L1965 and negative
// backlogs are clipped at 0; otherwise it is the full ε_G of (3.16)/(3.17).
func (d *dynChain) table(cheap bool) (off []bool, value float64, ok bool) {
	n := d.n
	stages := make([][]dynEntry, n+2)
	stages[1] = []dynEntry{{}}
	for i := 1; i <= n; i++ {
		index := make(map[dynState]int32, len(stages[i]))
		var next []dynEntry
		aa := d.abar[i-1]
		mF := d.oF[i] + d.abar[i]
		mB := d.oB[i] + d.abar[i] + d.delta[i] + d.delta[i-1]
		relax := func(s dynState, val float64, prev int32, isOff bool) {
			if cheap {
				s.dF, s.dB = pos(s.dF), pos(s.dB)
			}
			if j, seen := index[s]; seen {
				// Ties keep the first entry, reached by keeping (tried first).
				if val < next[j].val {
					next[j] = dynEntry{s, val, prev, isOff}
				}
				return
			}
			index[s] = int32(len(next))
			next = append(next, dynEntry{s, val, prev, isOff})
		}
		for j, e := range stages[i] {
			// (3.8), (3.9): ā_{i−1} must stay resident during F_i and B_i.
			if mF > d.m-e.a-aa || mB > d.m-e.a-aa {
				continue
			}
			mf := e.a + pos(e.dF) + aa // (3.4)
			mb := e.a + pos(e.dB) + aa // (3.5)
			excF := pos(mF - d.m + mf) // ε_F·β (3.6), idle before F_i
			excB := pos(mB - d.m + mb) // ε_B·β (3.7), idle after B_i
			val := e.val + d.uF[i] + d.uB[i] + float64(excF+excB)/d.beta
			dF := excF + d.capF[i]
			dB := excB + d.capB[i]
			// Keep first: ties prefer no transfer (pitfall 16).
			relax(dynState{e.a + aa, e.dF - dF, e.dB - dB}, val, int32(j), false)             // (3.13)-(3.15)
			relax(dynState{e.a, pos(e.dF) + aa - dF, pos(e.dB-dB) + aa}, val, int32(j), true) // (3.10)-(3.12)
		}
		stages[i+1] = next
	}
	best, bestVal := -1, math.Inf(1)
	for j, e := range stages[n+1] {
		g := d.junctionCheap(e.dynState)
		if !cheap {
			g = d.junctionFull(e.dynState)
		}
		v := e.val + g
		// Ties prefer the state that keeps more on the GPU (fewer transfers).
		if v < bestVal || v == bestVal && best >= 0 && e.a > stages[n+1][best].a {
			best, bestVal = j, v
		}
	}
	if best < 0 {
		return nil, math.Inf(1), false
	}
	off = make([]bool, n)
	j := int32(best)
	for i := n + 1; i >= 2; i-- {
		e := stages[i][j]
		off[i-2] = e.off
		j = e.prev
	}
	return off, bestVal, true
}

// junctionCheap is the synchronized idle time at the loss (L1965).
func (d *dynChain) junctionCheap(s dynState) float64 {
	return float64(pos(s.dF)+pos(s.dB)) / d.beta
}

// junctionFull is ε_G of (3.16)/(3.17) (spec §3.4.3), read at the end state L+2.
func (d *dynChain) junctionFull(s dynState) float64 {
	n, beta := d.n, d.beta
	m := float64(d.m)
	switch {
	case s.dF <= 0 && s.dB <= 0:
		return 0
	case s.dF > 0 && s.dB > 0:
		return float64(s.dF+s.dB) / beta
	case s.dF > 0: // offloading continues into the backward phase (3.16)
		avB := float64(-s.dB) / beta
		mF := float64(s.a + s.dF + d.abar[n])
		eps := float64(s.dF)/beta - avB
		var u float64 // U^B_j = Σ_{i=j+1}^{L+1} u_B(i)
		var later int64
		for j := n; j >= 1; j-- {
			if j < n {
				u += d.uB[j+1]
				later += d.abar[j+1]
			}
			if u >= avB {
				break
			}
			r := float64(d.delta[j-1] + d.delta[j] + d.oB[j] - later)
			eps = max(eps, (r-m+mF)/beta-u)
		}
		return max(eps, 0)
	default: // prefetching starts during the forward phase (3.17)
		avF := float64(-s.dF) / beta
		mB := float64(s.a + s.dB + d.abar[n])
		eps := float64(s.dB)/beta - avF
		var u float64 // U^F_j = Σ_{i=j+1}^{L+1} u_F(i)
		var later int64
		for j := n; j >= 1; j-- {
			if j < n {
				u += d.uF[j+1]
				later += d.abar[j+1]
			}
			if u >= avF {
				break
			}
			r := float64(d.oF[j] - later)
			eps = max(eps, (r-m+mB)/beta-u)
		}
		return max(eps, 0)
	}
}

// dynOptions are the variants of DYNPROG the tests compare.
type dynOptions struct {
	cheap bool // synchronized junction (L1965) instead of (3.16)/(3.17)
}

// SolveOffload returns the DYNPROG schedule of spec §3.4 (Algorithm 5, Theorem 10): the
// best ordered, no-wait offloading schedule without recomputation, optimal in the model of
// fractional communications up to the discretization (default DefaultOffloadSlots
// slots), with the full junction ε_G of (3.16)/(3.17). Saved sizes are rounded by the
// iterative optimistic scheme: when the schedule does not replay with the exact sizes,
// one value rounded down is rounded up and the DP runs again.
//
// Errors: *chainplan.InfeasibleError with the smallest budget at which DYNPROG finds a
// schedule; ErrInvalidChain; ErrUnsupported. The time complexity is O(L·N³) in the worst
// case (Theorem 10); only reachable states are visited.
func SolveOffload(c *chainplan.Chain, budgetBytes int64, opts Options) (*chainplan.Plan, error) {
	return solveOffload(c, budgetBytes, opts, dynOptions{})
}

func solveOffload(c *chainplan.Chain, budgetBytes int64, opts Options, do dynOptions) (*chainplan.Plan, error) {
	start := time.Now()
	if err := opts.check(c, budgetBytes); err != nil {
		return nil, err
	}
	slots := opts.slots(budgetBytes, DefaultOffloadSlots)
	exact := exactChain(c)
	s, ok := dynSchedule(exact, budgetBytes, slots, opts.BandwidthBytesPerS, opts.model(), do)
	if !ok {
		return infeasible(c, "offload", budgetBytes, opts, start, func() (int64, error) {
			return minBudgetOffload(c, opts, do, slots)
		}, func(c *chainplan.Chain, b int64, o Options) (*chainplan.Plan, error) {
			return solveOffload(c, b, o, do)
		})
	}
	return finishPlan("offload", c, budgetBytes, slots, s, opts, start)
}

// MinBudgetOffload returns the smallest budget at which SolveOffload finds a schedule,
// searched from the need of offloading everything (offloadNeed) to within M_peak/(8·S)
// bytes for S slots (Options.Slots, DefaultOffloadSlots when zero, M_peak for exact
// bytes). Errors: ErrInvalidChain, ErrUnsupported for bad options.
func MinBudgetOffload(c *chainplan.Chain, opts Options) (int64, error) {
	if err := opts.check(c, 1); err != nil {
		return 0, err
	}
	hi := int64(exactChain(c).storeAllPeak())
	return minBudgetOffload(c, opts, dynOptions{}, opts.slots(hi, DefaultOffloadSlots))
}

// minBudgetOffload searches DYNPROG's smallest budget; the bisection stops within
// M_peak/(8·precSlots) bytes.
func minBudgetOffload(c *chainplan.Chain, opts Options, do dynOptions, precSlots int64) (int64, error) {
	exact := exactChain(c)
	hi := int64(exact.storeAllPeak())
	lo := int64(offloadNeed(exact))
	return searchBudget(lo, hi, max(1, hi/(8*precSlots)), func(b int64) bool {
		_, ok := dynSchedule(exact, b, opts.slots(b, DefaultOffloadSlots), opts.BandwidthBytesPerS, opts.model(), do)
		return ok
	}), nil
}

// dynSchedule runs DYNPROG with the iterative rounding and returns a schedule that
// replays within the budget with the exact sizes.
func dynSchedule(c *chain, budget, slots int64, beta float64, model chainplan.MemoryModel, do dynOptions) (Schedule, bool) {
	if c.storeAllPeak() <= float64(budget) {
		return storeAllSchedule(c, make([]bool, c.n), true), true
	}
	d := newDynChain(c, budget, slots, beta)
	for {
		off, _, ok := d.table(do.cheap)
		if !ok {
			// Rounding more values up cannot make the DP feasible again.
			return Schedule{}, false
		}
		s := storeAllSchedule(c, off, do.cheap)
		if simulate(c, s, params{beta: beta, limit: float64(budget), model: model}).Valid {
			return s, true
		}
		if !d.bump() {
			return Schedule{}, false
		}
	}
}

// offloadNeed is the smallest memory at which some offloading schedule without
// recomputation exists: every ā but the input of the running stage offloaded, (3.8)/(3.9)
// with A = 0 for every stage.
func offloadNeed(c *chain) float64 {
	var need float64
	for i := 1; i <= c.n; i++ {
		mF := c.oF[i] + c.abar[i]
		mB := c.oB[i] + c.abar[i] + c.a[i] + c.a[i-1]
		need = max(need, max(mF, mB)+c.abar[i-1])
	}
	return need
}
