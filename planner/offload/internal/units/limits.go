package units

import (
	"math"

	"github.com/chainplan/chainplan"
)

// The memory of a table, which the planners check against chainplan.TableLimit before
// they build one (planner/offload's limits.go). Slabs are allocated when first written:
// FillCD writes them all, while a top-down use (the heuristics' rematerialization) writes
// those of the sub-chains it reaches, which no bound short of all of them predicts; those
// are counted as they are allocated (lazyLeft), and a table that would pass the limit stops
// (Overflow).

// IndexBytes is what NewTable allocates for n stages (the loss included) and m units,
// whatever is computed later: two slice headers (values and choices) per slab of C_Δ,
// 2(n+1)² slabs, the grid and the prefix sums.
func IndexBytes(n, m int) float64 {
	nn := float64(n+1) * float64(n+1)
	return 2*nn*2*24 + 3*float64(m+2)*8 + 2*float64(n+1)*8
}

// CDSlabBytes is the memory of one slab of C_Δ on the grid of m units: a float64 value and
// an int16 choice per (A, Δ) state.
func CDSlabBytes(m int) float64 {
	return float64(m+1) * float64(m+2) / 2 * 10
}

// FilledBytes is what FillCD adds to IndexBytes: a slab for every sub-chain and run,
// n(n+1) of them, and the lower bounds (a row of m+1 float64 per sub-chain and a slice
// header per pair).
func FilledBytes(n, m int) float64 {
	subs := float64(n) * float64(n+1) / 2
	return 2*subs*CDSlabBytes(m) + float64(n+1)*float64(n+1)*24 + subs*float64(m+1)*8
}

// tableLimit is chainplan.TableLimit, the default where the environment does not parse:
// the planners check it, and report its error, before they build a table.
func tableLimit() float64 {
	limit, err := chainplan.TableLimit()
	if err != nil {
		return float64(chainplan.DefaultTableLimitBytes)
	}
	return float64(limit)
}

// reserve takes the memory of slab p of C_Δ from what is left to the table, and reports
// false, marking the table over its limit, when it does not fit. A slab already allocated,
// a state off the grid and the continuous mode cost nothing.
func (tb *Table) reserve(p, i int) bool {
	if tb.Grid == nil || i < 0 || tb.cd.Vals[p] != nil {
		return true
	}
	b := CDSlabBytes(tb.Grid.M)
	if b > tb.lazyLeft {
		tb.over = true
		return false
	}
	tb.lazyLeft -= b
	tb.lazyUsed += b
	return true
}

// Overflow reports whether computing C_Δ would have passed chainplan.TableLimit: every
// value computed since is +Inf, and the caller must refuse the request, with at least
// OverflowBytes of tables needed.
func (tb *Table) Overflow() bool { return tb.over }

// OverflowBytes is the memory the table had reached, index included, plus the slab it
// could not allocate: a lower bound of what the request needs.
func (tb *Table) OverflowBytes() float64 {
	return IndexBytes(tb.C.N, max(0, int(math.Min(tb.M, math.MaxInt32)))) + tb.lazyUsed + CDSlabBytes(tb.Grid.M)
}
