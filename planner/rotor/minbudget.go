package rotor

import (
	"fmt"
	"math"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
)

// MinBudget returns the smallest total budget in bytes (chain input included) at which
// Solve finds a schedule with the given options, and at least 1.
//
// Without discretization the answer is exact: a_0 plus the need of the whole chain (see
// minMemory), computed in O(N³) without any table. With S slots the unit grows with the
// budget and every size is rounded up, so a budget slightly above the exact minimum may
// still be refused; MinBudget then searches upwards, first by doubling steps of one unit
// and then by bisection, and returns a budget it has checked. Each probe costs one O(N³)
// feasibility DP per memory unit probed, none per budget: budgets with the same unit share
// their discretization. For rotor the answer is capped by the no-recomputation peak, which
// Solve accepts in exact bytes.
func MinBudget(c *chainplan.Chain, opts Options) (int64, error) {
	if err := c.Validate(); err != nil {
		return 0, err
	}
	s, err := searchMinBudget(c, opts)
	return s.budget, err
}

// SolveMin returns Solve's plan at MinBudget's budget, from one search: the
// discretization and feasibility DP the search ends with are the ones Solve would compute
// at that budget, so the persistent table is built once and no search runs again.
func SolveMin(c *chainplan.Chain, opts Options) (*chainplan.Plan, error) {
	start := time.Now()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	s, err := searchMinBudget(c, opts)
	if err != nil {
		return nil, err
	}
	if !opts.Revolve {
		if plan := storeAllIfFits(c, s.budget); plan != nil {
			plan.Algo, plan.Slots, plan.SolveMS = opts.algo(), opts.slots(s.budget), msSince(start)
			return plan, nil
		}
	}
	return solveWith(c, s.budget, s.dc, s.need, opts, start)
}

// minSearch is what searchMinBudget found: the budget, and the discretization of that
// budget with its feasibility DP (nil when the budget is the store-all peak, which needs
// no table).
type minSearch struct {
	budget int64
	dc     *discretize.Chain
	need   *needTable
}

func searchMinBudget(c *chainplan.Chain, opts Options) (minSearch, error) {
	exact := discretize.Exact(c)
	// The search keeps the tables of its best budget while it builds a probe's.
	if err := checkTables(exact, searchNeed, -1, opts); err != nil {
		return minSearch{}, err
	}
	exactNeed, err := minMemory(exact, opts.variant())
	if err != nil {
		return minSearch{}, err
	}
	lo := max(1, exact.A[0]+exactNeed.at(1, exact.N, 0))
	// A probe keeps, per memory unit, only whether the chain fits in how many units; the
	// tables of the smallest feasible budget probed, which the search returns, are kept
	// beside (best), so that at most two feasibility tables live at once.
	type probe struct {
		dc   *discretize.Chain
		need *needTable
	}
	needs := map[int64]int64{1: exact.A[0] + exactNeed.at(1, exact.N, 0)} // by unit: a_0 + need, in units
	best := struct {
		budget int64
		probe
	}{budget: -1}
	var probeErr error
	fits := func(b int64) bool {
		unit := discretize.Unit(b, opts.slots(b))
		need, ok := needs[unit]
		var p probe
		switch {
		case ok && unit == 1:
			p = probe{exact, exactNeed}
		case !ok:
			dc := discretize.WithUnit(c, unit)
			nt, err := minMemory(dc, opts.variant())
			if err != nil {
				probeErr = err
				return true // ends the search; the error is returned
			}
			p = probe{dc, nt}
			need = dc.A[0] + nt.at(1, dc.N, 0)
			needs[unit] = need
		}
		ok = need <= b/unit
		if ok && (best.budget < 0 || b < best.budget) {
			if p.dc == nil && best.dc != nil && best.dc.Unit == unit {
				p = best.probe
			}
			if p.dc == nil { // a unit probed before whose tables were not kept
				dc := discretize.WithUnit(c, unit)
				nt, err := minMemory(dc, opts.variant())
				if err != nil {
					probeErr = err
					return true
				}
				p = probe{dc, nt}
			}
			best.budget, best.probe = b, p
		}
		return ok
	}
	if !fits(lo) {
		step := max(1, lo/opts.slots(lo))
		bad, hi := lo, lo+step
		for !fits(hi) {
			// With very few slots every size rounds up to a unit at least, and a chain may
			// need more units than there are slots whatever the budget.
			if step > math.MaxInt64/4 {
				return minSearch{}, fmt.Errorf("%w: %s: no budget fits at %d slots (every size rounds up to "+
					"at least one slot); use more slots", chainplan.ErrUnsupported, opts.algo(), opts.slots(lo))
			}
			bad, step = hi, step*2
			hi = lo + step
		}
		// Rounding makes feasibility almost, not exactly, monotone in the budget; the
		// bisection keeps hi feasible at every step, so the answer is always a budget
		// that works.
		for hi-bad > 1 && probeErr == nil {
			mid := bad + (hi-bad)/2
			if fits(mid) {
				hi = mid
			} else {
				bad = mid
			}
		}
	}
	if probeErr != nil {
		return minSearch{}, probeErr
	}
	if !opts.Revolve {
		if peak := StoreAllPeak(c); peak < best.budget {
			return minSearch{budget: max(1, peak)}, nil
		}
	}
	return minSearch{budget: best.budget, dc: best.dc, need: best.need}, nil
}
