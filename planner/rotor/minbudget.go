package rotor

import (
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
// still be refused, and one further up accepted where the next is refused again:
// firstFit finds the smallest budget Solve accepts, interval of equal units after
// interval below S·S bytes, by bisection over the units above (where feasibility is
// monotone). Each probe costs one O(N³) feasibility DP per memory unit probed, none per
// budget: budgets with the same unit share their discretization. For rotor the answer is
// capped by the no-recomputation peak, which Solve accepts in exact bytes. No budget
// below the answer plans (checked budget by budget on random chains, TestSmallestBudget).
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
	// The search keeps the exact tables and one probe's at a time.
	if err := checkTables(exact, searchNeed, -1, opts); err != nil {
		return minSearch{}, err
	}
	exactNeed, err := minMemory(exact, opts.variant())
	if err != nil {
		return minSearch{}, err
	}
	lo := max(1, exact.A[0]+exactNeed.at(1, exact.N, 0)) // rounding up only adds
	type probe struct {
		dc   *discretize.Chain
		need *needTable
	}
	// A probe keeps, per memory unit, only how many units the chain needs; the tables of
	// the budget the search returns are built again at its end, so that at most two
	// feasibility tables (the exact one and a probe's) live at once.
	needs := map[int64]int64{1: exact.A[0] + exactNeed.at(1, exact.N, 0)} // by unit
	at := func(unit int64) (probe, error) {
		if unit == 1 {
			return probe{exact, exactNeed}, nil
		}
		dc := discretize.WithUnit(c, unit)
		nt, err := minMemory(dc, opts.variant())
		if err != nil {
			return probe{}, err
		}
		return probe{dc, nt}, nil
	}
	slots := opts.Slots
	if slots == 0 {
		slots = DefaultSlots
	}
	best, err := firstFit(lo, slots, opts.algo(), func(unit int64) (int64, error) {
		if need, ok := needs[unit]; ok {
			return need, nil
		}
		p, err := at(unit)
		if err != nil {
			return 0, err
		}
		need := p.dc.A[0] + p.need.at(1, p.dc.N, 0)
		needs[unit] = need
		return need, nil
	})
	if err != nil {
		return minSearch{}, err
	}
	if !opts.Revolve {
		if peak := StoreAllPeak(c); peak < best {
			return minSearch{budget: max(1, peak)}, nil
		}
	}
	p, err := at(discretize.Unit(best, opts.slots(best)))
	if err != nil {
		return minSearch{}, err
	}
	return minSearch{budget: best, dc: p.dc, need: p.need}, nil
}
