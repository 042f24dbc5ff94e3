package rotor

import (
	"errors"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
)

// floatingAlgo names the plans of the floating DP.
const floatingAlgo = "optimal"

// SolveFloating returns the optimal schedule without the memory-persistence restriction:
// the floating DP of Theorem 5 with the fixes of spec §3.4, which matched exhaustive search
// on every instance tried. It costs O(S·N⁶) and refuses (ErrUnsupported) chains where
// that would take more than a few seconds; Solve is the practical algorithm and differs
// from it only on rare instances (spec §3.5). Plans are named "optimal". Options.Revolve
// is ignored.
//
// Like Solve, it returns the no-recomputation schedule when that fits in exact bytes.
func SolveFloating(c *chainplan.Chain, budgetBytes int64, opts Options) (*chainplan.Plan, error) {
	start := time.Now()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	opts.Revolve = false
	slots := opts.slots(budgetBytes)
	if plan := storeAllIfFits(c, budgetBytes); plan != nil {
		plan.Algo, plan.Slots, plan.SolveMS = floatingAlgo, slots, msSince(start)
		return plan, nil
	}
	makespan, seq, err := floatingAt(c, budgetBytes, slots)
	if errors.Is(err, chainplan.ErrInfeasible) {
		e := &chainplan.InfeasibleError{Algo: floatingAlgo, BudgetBytes: budgetBytes, Slots: slots}
		if minB, err := minBudgetFloating(c, opts); err == nil {
			e.MinBudgetBytes, e.Slots = minB, opts.slots(minB)
		}
		return nil, e
	}
	if err != nil {
		return nil, err
	}
	return finishPlan(c, floatingAlgo, budgetBytes, slots, makespan, seq, start)
}

func floatingAt(c *chainplan.Chain, budgetBytes, slots int64) (float64, []chainplan.Op, error) {
	dc := discretize.ForBudget(c, budgetBytes, slots)
	return solveFloating(dc, dc.Units(budgetBytes)-dc.A[0])
}

// MinBudgetFloating returns the smallest total budget in bytes (chain input included),
// and at least 1, at which SolveFloating finds a schedule with the given options
// (Options.Revolve is ignored). It bisects between the necessary condition of spec §4.5
// and the persistent minimum, MinBudget (the floating DP explores a superset of the
// persistent schedules at the same discretization, so it accepts that budget). A probe
// runs the floating DP's feasibility side alone (floatingNeed, O(N⁶)), once per memory
// unit probed, no table. Errors: those of SolveFloating for a chain it refuses.
func MinBudgetFloating(c *chainplan.Chain, opts Options) (int64, error) {
	if err := c.Validate(); err != nil {
		return 0, err
	}
	opts.Revolve = false
	return minBudgetFloating(c, opts)
}

// SolveFloatingMin returns SolveFloating's plan at MinBudgetFloating's budget: the search
// runs no table, then the floating table is built once.
func SolveFloatingMin(c *chainplan.Chain, opts Options) (*chainplan.Plan, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	opts.Revolve = false
	b, err := minBudgetFloating(c, opts)
	if err != nil {
		return nil, err
	}
	return SolveFloating(c, b, opts)
}

func minBudgetFloating(c *chainplan.Chain, opts Options) (int64, error) {
	// A chain too long for the floating DP at any budget is refused before the search
	// below builds its tables.
	if err := floatingLimits(c.Len()+1, 0); err != nil {
		return 0, err
	}
	ex := discretize.Exact(c)
	lo := int64(1) // the smallest budget not known to fail
	for l := 1; l <= ex.N; l++ {
		// a_0 stays during every backward, and B_ℓ needs its input, ā_ℓ, δ_ℓ, δ_{ℓ-1}, o_B.
		in := ex.A[l-1]
		if l == 1 {
			in = 0 // a_0 is the input itself
		}
		lo = max(lo, ex.A[0]+in+ex.ABar[l]+ex.Grad(l)+ex.Grad(l-1)+ex.OB[l])
	}
	peak := StoreAllPeak(c) // SolveFloating returns the no-recomputation schedule from it on
	if peak <= lo {
		return max(1, peak), nil
	}
	slots := opts.Slots
	if slots == 0 {
		slots = DefaultSlots
	}
	needs := map[int64]int64{} // by unit
	best, err := firstFit(lo, slots, "optimal", func(unit int64) (int64, error) {
		need, ok := needs[unit]
		if !ok {
			dc := discretize.WithUnit(c, unit)
			need = dc.A[0] + floatingNeed(dc)
			needs[unit] = need
		}
		return need, nil
	})
	if err != nil {
		return 0, err
	}
	if peak < best {
		return max(1, peak), nil
	}
	// The table of that budget must be one the floating DP accepts, as SolveFloating checks.
	dc := discretize.ForBudget(c, best, opts.slots(best))
	if err := floatingLimits(dc.N, dc.Units(best)-dc.A[0]); err != nil {
		return 0, err
	}
	return best, nil
}
