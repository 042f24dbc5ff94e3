package rotor

import (
	"fmt"
	"math"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
)

// firstFit returns the smallest budget b ≥ lo at which a table of S slots fits a chain:
// need(unit(b)) ≤ b/unit(b) in whole units, where unit(b) is discretize.Unit(b, S) and
// need(u) the units the chain needs (its input included) with every size rounded up to
// units of u bytes. S ≤ 0 means exact bytes: the unit is 1 and the answer max(lo, need(1)).
//
// Budgets with the same unit form an interval ([1, 2S−1] for unit 1, [uS, (u+1)S−1] for
// unit u ≥ 2), and within one feasibility starts at u·need(u), so the smallest feasible
// budget of the first interval that has one is the answer. Feasibility is not monotone
// across intervals: at the end of interval u the budget holds S + ⌊(S−1)/u⌋ units, at the
// start of u+1 only S, and rounding to the larger unit may add more than that. Below S·S
// (u < S) the intervals are therefore tried in order. From u = S on every budget of an
// interval holds exactly S units, and need is non-increasing in the unit (sizes rounded
// up to a larger unit are no more units, and the needs are sums, maxima and minima of
// them), so "need(u) ≤ S" is monotone in u and the first such u is found by doubling and
// bisection. need is called once per unit probed.
//
// Errors: need's own; ErrUnsupported when no unit fits S slots (every size rounds up to at
// least one slot, and the chain needs more of them than there are).
func firstFit(lo, slots int64, algo string, need func(unit int64) (int64, error)) (int64, error) {
	lo = max(lo, 1)
	if slots <= 0 {
		k, err := need(1)
		return max(lo, k), err
	}
	start := func(u int64) int64 {
		if u == 1 {
			return 1
		}
		return u * slots
	}
	end := func(u int64) int64 { return (u+1)*slots - 1 }
	u := discretize.Unit(lo, slots)
	for ; u < slots; u++ {
		k, err := need(u)
		if err != nil {
			return 0, err
		}
		if k <= end(u)/u { // some budget of the interval holds k units
			return max(lo, start(u), u*k), nil
		}
	}
	fits := func(u int64) (bool, error) {
		k, err := need(u)
		return k <= slots, err
	}
	ok, err := fits(u)
	if err != nil || ok {
		return max(lo, start(u)), err
	}
	// Steps start at 1/S of the unit (a budget's step of one unit), as rounding moves the
	// answer by a few units per size.
	bad, step := u, max(1, u/slots)
	for {
		if step > math.MaxInt64/(8*slots) || u > math.MaxInt64/(8*slots)-step {
			return 0, fmt.Errorf("%w: %s: no budget fits at %d slots (every size rounds up to "+
				"at least one slot); use more slots", chainplan.ErrUnsupported, algo, slots)
		}
		ok, err := fits(u + step)
		if err != nil {
			return 0, err
		}
		if ok {
			break
		}
		bad, step = u+step, step*2
	}
	hi := u + step
	for hi-bad > 1 {
		mid := bad + (hi-bad)/2
		ok, err := fits(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			hi = mid
		} else {
			bad = mid
		}
	}
	return start(hi), nil
}
