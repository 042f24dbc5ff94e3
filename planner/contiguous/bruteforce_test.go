package contiguous_test

import (
	"math"

	"github.com/chainplan/chainplan/planner/pipeline"
)

// partitions calls visit with every partition of layers 1..l into at most p contiguous
// stages, stage k on device k: 2^(l−1) compositions, cut to p parts.
func partitions(l, p int, visit func([]pipeline.Stage)) {
	var rec func(first int, stages []pipeline.Stage)
	rec = func(first int, stages []pipeline.Stage) {
		if first > l {
			visit(stages)
			return
		}
		if len(stages) == p {
			return
		}
		for last := first; last <= l; last++ {
			rec(last+1, append(stages, pipeline.Stage{First: first, Last: last, GPU: len(stages)}))
		}
	}
	rec(1, nil)
}

// bruteForce returns the smallest BestPeriod over every contiguous allocation, or +Inf.
func bruteForce(pr *pipeline.Problem) float64 {
	best := math.Inf(1)
	partitions(pr.L(), pr.Options().GPUs, func(st []pipeline.Stage) {
		if t, ok := pipeline.BestPeriod(pr, st); ok {
			best = min(best, t)
		}
	})
	return best
}

// bruteUnconstrained returns the smallest largest load (stage or boundary) over every
// contiguous allocation: the optimum without a memory limit.
func bruteUnconstrained(pr *pipeline.Problem) float64 {
	best := math.Inf(1)
	partitions(pr.L(), pr.Options().GPUs, func(st []pipeline.Stage) {
		var load float64
		for k, s := range st {
			load = max(load, pr.U(s.First, s.Last))
			if k > 0 {
				load = max(load, pr.Comm(s.First-1))
			}
		}
		best = min(best, load)
	})
	return best
}

// bruteMinMemory returns the smallest memory per device at which some contiguous
// allocation has a plan, searched over memory with BestPeriod alone.
func bruteMinMemory(pr *pipeline.Problem) int64 {
	lo, hi := int64(0), int64(1)
	for math.IsInf(bruteForce(pr.WithMemory(hi)), 1) {
		hi *= 2
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if math.IsInf(bruteForce(pr.WithMemory(mid)), 1) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}
