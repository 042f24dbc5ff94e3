package rotor

import (
	"fmt"
	"math"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
)

// MinBudget returns the smallest total budget in bytes (chain input included) at which
// Solve finds a schedule with the given options.
//
// Without discretization the answer is exact: a_0 plus the need of the whole chain (see
// minMemory), computed in O(N³) without any table. With S slots the unit grows with the
// budget and every size is rounded up, so a budget slightly above the exact minimum may
// still be refused; MinBudget then searches upwards, first by doubling steps of one unit
// and then by bisection, and returns a budget it has checked. For rotor the answer is
// capped by the no-recomputation peak, which Solve accepts in exact bytes.
func MinBudget(c *chainplan.Chain, opts Options) (int64, error) {
	if err := c.Validate(); err != nil {
		return 0, err
	}
	exact := discretize.Exact(c)
	lo := exact.A[0] + minMemory(exact, opts.Revolve).at(1, exact.N)
	fits := func(b int64) bool {
		dc := discretize.ForBudget(c, b, opts.slots(b))
		return dc.A[0]+minMemory(dc, opts.Revolve).at(1, dc.N) <= dc.Units(b)
	}
	best := lo
	if !fits(lo) {
		step := max(1, lo/opts.slots(lo))
		bad, hi := lo, lo+step
		for !fits(hi) {
			// With very few slots every size rounds up to a unit at least, and a chain may
			// need more units than there are slots whatever the budget.
			if step > math.MaxInt64/4 {
				return 0, fmt.Errorf("%w: %s: no budget fits at %d slots (every size rounds up to "+
					"at least one slot); use more slots", chainplan.ErrUnsupported, opts.algo(), opts.slots(lo))
			}
			bad, step = hi, step*2
			hi = lo + step
		}
		// Rounding makes feasibility almost, not exactly, monotone in the budget; the
		// bisection keeps hi feasible at every step, so the answer is always a budget
		// that works.
		for hi-bad > 1 {
			mid := bad + (hi-bad)/2
			if fits(mid) {
				hi = mid
			} else {
				bad = mid
			}
		}
		best = hi
	}
	if !opts.Revolve {
		best = min(best, StoreAllPeak(c))
	}
	return best, nil
}
