package madpipe

import (
	"math"
	"slices"

	"github.com/chainplan/chainplan/planner/pipeline"
)

// searchSteps is K of Algorithm 1, "enough in practice" (spec §2.7).
const searchSteps = 10

// iterate is one step of Algorithm 1: the target period T̂, the DP's period T for it, and
// the allocation (nil when the DP found none).
type iterate struct {
	that, period float64
	stages       []stage
}

// estimate is T̃ = max(T, T̂), phase 1's prediction for the iterate's allocation.
func (it iterate) estimate() float64 { return max(it.period, it.that) }

// phase1 runs Algorithm 1 (spec §2.7): a bisection on T̂ between U(1,L)/P and
// U(1,L) + ΣC that narrows [lb, ub] with min(T, T̂) and max(T, T̂) of every DP run. It
// returns the iterates with an allocation, best estimate first, duplicates of an
// allocation dropped (the fallbacks of phase 2 walk this list). Errors: a
// *chainplan.SizeError when a DP run passes the limits of limits.go.
func phase1(prob *pipeline.Problem, exact bool) ([]iterate, error) {
	return phase1Within(prob, exact, float64(prob.Limit()))
}

// phase1Within is phase1 planning within memory bytes per device, below the problem's
// own when phase 2 could not schedule the allocations planned at the full memory (phase
// 1's estimate of the special device's memory is optimistic against the ILP's).
func phase1Within(prob *pipeline.Problem, exact bool, memory float64) ([]iterate, error) {
	if err := checkProblem(prob); err != nil {
		return nil, err
	}
	u, l := prob.TotalWork(), prob.L()
	lb := u / float64(prob.Options().GPUs)
	ub := u + sumComm(prob, 1, l-1)
	that := lb
	var its []iterate
	for range searchSteps {
		d := newDPWithin(prob, that, exact, memory)
		period, stages := d.run()
		if d.budget.over {
			return nil, overError(prob, &d.budget)
		}
		its = append(its, iterate{that: that, period: period, stages: stages})
		if math.IsInf(period, 1) {
			lb = max(lb, that) // infeasible: T̂ too small for memory
		} else {
			lb = max(lb, min(period, that))
			ub = min(ub, max(period, that))
		}
		next := (lb + ub) / 2
		if next == that {
			break
		}
		that = next
	}
	its = slices.DeleteFunc(its, func(it iterate) bool { return it.stages == nil })
	slices.SortStableFunc(its, func(a, b iterate) int {
		switch ea, eb := a.estimate(), b.estimate(); {
		case ea < eb:
			return -1
		case ea > eb:
			return 1
		}
		return 0
	})
	var out []iterate
	for _, it := range its {
		if !slices.ContainsFunc(out, func(o iterate) bool { return slices.Equal(o.stages, it.stages) }) {
			out = append(out, it)
		}
	}
	return out, nil
}
