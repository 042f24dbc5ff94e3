package rotor

import (
	"errors"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
)

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
		plan.Algo, plan.Slots, plan.SolveMS = "optimal", slots, msSince(start)
		return plan, nil
	}
	makespan, seq, err := floatingAt(c, budgetBytes, slots)
	if errors.Is(err, chainplan.ErrInfeasible) {
		e := &chainplan.InfeasibleError{Algo: "optimal", BudgetBytes: budgetBytes, Slots: slots}
		if minB, err := minBudgetFloating(c, opts); err == nil {
			e.MinBudgetBytes, e.Slots = minB, opts.slots(minB)
		}
		return nil, e
	}
	if err != nil {
		return nil, err
	}
	return finishPlan(c, "optimal", budgetBytes, slots, makespan, seq, start)
}

func floatingAt(c *chainplan.Chain, budgetBytes, slots int64) (float64, []chainplan.Op, error) {
	dc := discretize.ForBudget(c, budgetBytes, slots)
	return solveFloating(dc, dc.Units(budgetBytes)-dc.A[0])
}

// minBudgetFloating finds the smallest budget the floating DP accepts by bisection between
// the necessary condition of spec §4.5 and the persistent minimum (the floating DP
// explores a superset of the persistent schedules at the same discretization, so it
// accepts that budget). Every probe is a full floating DP, which the length limit keeps
// cheap.
func minBudgetFloating(c *chainplan.Chain, opts Options) (int64, error) {
	hi, err := MinBudget(c, opts)
	if err != nil {
		return 0, err
	}
	ex := discretize.Exact(c)
	lo := int64(0) // largest budget known or assumed to fail
	for l := 1; l <= ex.N; l++ {
		// a_0 stays during every backward, and B_ℓ needs its input, ā_ℓ, δ_ℓ, δ_{ℓ-1}, o_B.
		in := ex.A[l-1]
		if l == 1 {
			in = 0 // a_0 is the input itself
		}
		lo = max(lo, ex.A[0]+in+ex.ABar[l]+ex.Grad(l)+ex.Grad(l-1)+ex.OB[l]-1)
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		_, _, err := floatingAt(c, mid, opts.slots(mid))
		switch {
		case err == nil:
			hi = mid
		case errors.Is(err, chainplan.ErrInfeasible):
			lo = mid
		default:
			return 0, err
		}
	}
	return hi, nil
}
