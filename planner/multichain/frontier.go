package multichain

import (
	"cmp"
	"slices"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/rotor"
)

// SolveFrontier returns the makespan of H0 at every budget from its smallest to the
// no-recomputation peak, from one table (the dynamic program at K+ΣL slots holds the
// optimum at every smaller slot count too): a point at m·s + R wherever the value drops,
// and the no-recomputation schedule at its exact peak, which Solve returns from there on.
// The plans of H1 are not swept (each needs its own rotor solves); Solve at a budget
// compares them too, so its makespan is at most the frontier's.
//
// The frontier has rotor's shape: Slots is K+ΣL and UnitBytes the slot s. Its cost is one
// table at K+ΣL slots. Errors: ErrInvalidChain; ErrUnsupported when that table is too
// large.
func SolveFrontier(mc *chainplan.MultiChain) (*rotor.Frontier, error) {
	start := time.Now()
	if err := mc.Validate(); err != nil {
		return nil, err
	}
	budgets, spans, err := dpFrontier(mc)
	if err != nil {
		return nil, err
	}
	sum, peak := mc.SumTime(), storeAllPeak(mc)
	type pt struct {
		b int64
		v float64
	}
	pts := []pt{{peak, sum}}
	for i := range budgets {
		pts = append(pts, pt{budgets[i], spans[i]})
	}
	slices.SortStableFunc(pts, func(x, y pt) int { return cmp.Compare(x.b, y.b) })
	in := instanceOf(mc)
	f := &rotor.Frontier{Algo: "multichain", Slots: int64(in.k() + in.sumL()), UnitBytes: slotModelOf(mc).UnitBytes,
		SumTime: sum, StoreAllPeakByte: peak}
	for _, p := range pts {
		if n := len(f.Points); n > 0 && !(p.v < f.Points[n-1].Makespan*(1-1e-12)) {
			continue
		}
		over := 0.0
		if sum > 0 {
			over = p.v/sum - 1
		}
		f.Points = append(f.Points, rotor.FrontierPoint{BudgetBytes: p.b, Makespan: p.v, Overhead: over})
		if p.b >= peak {
			break
		}
	}
	f.SolveMS = msSince(start)
	return f, nil
}
