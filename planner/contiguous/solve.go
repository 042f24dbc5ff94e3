package contiguous

import (
	"time"

	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// Algo is the name of the plans Solve returns.
const Algo = "contiguous"

// maxProbes bounds the search over T; it ends far sooner, when the bounds are adjacent
// floats (about 60 probes from a ratio of 2 between them).
const maxProbes = 2000

// maxDoublings bounds the search for a first feasible period with checkpointing: a
// recomputing stage costs at most its forward again per layer it recomputes, far below
// 2^40 times the chain's work.
const maxDoublings = 40

// Solve returns the optimal contiguous plan of pr: at most P stages on distinct devices
// and their 1F1B* pattern at the smallest period whose memory fits every device
// (1F1B* is memory-optimal for each allocation, so the plan is optimal among the
// 1-periodic patterns of contiguous allocations). The plan is validated before it is
// returned.
//
// The search over T starts from the optimum without memory limit (every period is at
// least that) and keeps the feasible bound on the exact best period of an allocation
// found feasible (pipeline.BestPeriod), so it ends on a period some allocation reaches
// exactly, with the infeasible bound the next float below. O(L²·P) per probe.
//
// Errors: a *pipeplan.InfeasibleError with the smallest memory that fits (MinMemory) when
// no contiguous plan fits pr's memory; a *chainplan.SizeError when pr is too large to plan
// (pipeline.Problem.CheckPlanning).
func Solve(pr *pipeline.Problem) (*pipeplan.Plan, error) {
	start := time.Now()
	if err := pr.CheckPlanning(); err != nil {
		return nil, err
	}
	hi := pr.TotalWork()
	for l := 1; l < pr.L(); l++ {
		hi += pr.Comm(l) // one group holds any transformed chain
	}
	best := feasible(pr, hi)
	// Recomputing stages load their device more than U: one group may need a longer period.
	for k := 0; best == nil && pr.Options().Checkpoint && k < maxDoublings; k++ {
		hi *= 2
		best = feasible(pr, hi)
	}
	if best == nil {
		need, _ := MinMemory(pr)
		return nil, &pipeplan.InfeasibleError{Algo: Algo, MemoryBytes: pr.Options().MemoryBytes, MinMemoryBytes: need}
	}
	lo := unconstrained(pr)
	if stages := feasible(pr, lo); stages != nil {
		best = stages
	}
	hi, _ = pipeline.BestPeriod(pr, best)
	// Invariant: no allocation fits at T < lo·(1−ε) unless lo = hi; best reaches hi.
	for range maxProbes {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			break
		}
		stages := feasible(pr, mid)
		if stages == nil {
			lo = mid
			continue
		}
		// BestPeriod(stages) ≤ mid, up to the grouping's tolerance.
		if t, ok := pipeline.BestPeriod(pr, stages); ok {
			best, hi = stages, min(t, mid)
		} else {
			hi = mid // not reached: the DP and BestPeriod group alike
		}
	}
	p, ok, err := pipeline.ScheduleContiguous(pr, best, Algo)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, &pipeplan.InfeasibleError{Algo: Algo, MemoryBytes: pr.Options().MemoryBytes}
	}
	p.SolveMS = float64(time.Since(start).Microseconds()) / 1000
	return p, nil
}

// Unconstrained returns the smallest period of a contiguous allocation without a memory
// limit (spec §4.6): min over partitions into at most P stages of the largest stage load
// U(i,j) or boundary load C(i−1), by the classic min-max DP. O(L²·P). Every plan's
// UnconstrainedPeriod (the reference of what its memory limit costs) is this.
func Unconstrained(pr *pipeline.Problem) float64 { return unconstrained(pr) }

// MinMemoryAt returns the smallest memory per device at which a contiguous plan has a
// period of at most T (with headroom, the memory whose Limit holds it), and false when no
// memory gives one (T is below Unconstrained). Feasibility at a fixed T only grows with
// the memory, so it is a bisection over bytes with the exact DP. O(L²·P·log M).
func MinMemoryAt(pr *pipeline.Problem, T float64) (int64, bool) {
	if T < unconstrained(pr)*(1-1e-12) {
		return 0, false
	}
	lo, _ := MinMemory(pr)
	lo--
	hi := max(lo+1, 1)
	for feasible(pr.WithMemory(hi), T) == nil {
		if hi > 1<<52 {
			return 0, false
		}
		lo, hi = hi, 2*hi
	}
	for hi-lo > 1 { // feasible at hi, not at lo
		mid := lo + (hi-lo)/2
		if feasible(pr.WithMemory(mid), T) != nil {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, true
}

// unconstrained returns the smallest period of a contiguous allocation without memory
// limit (spec §4.6): min over partitions into at most P stages of the largest stage load
// U(i,j) or boundary load C(i−1), by the classic min-max DP. O(L²·P).
func unconstrained(pr *pipeline.Problem) float64 {
	l, p := pr.L(), min(pr.Options().GPUs, pr.L())
	inf := pr.TotalWork() * 4
	for k := 1; k < l; k++ {
		inf += 4 * pr.Comm(k)
	}
	inf += 1
	return minMax(l, p, inf, func(i, j int) float64 { return max(pr.U(i, j), pr.Comm(i-1)) })
}

// MinMemory returns the smallest memory per device at which a contiguous plan exists
// (pr's own memory is ignored; with headroom, the memory whose Limit holds the plan):
// with T large enough every stage stores one mini-batch, so it is the min over partitions
// into at most P stages of the largest memory of a stage with one mini-batch in flight
// (StageMemory(i,j,1), or with checkpointing the smaller of that and its smallest
// recomputing memory), by a min-max DP. O(L²·P). Errors: a *chainplan.SizeError when pr
// is too large to plan (pipeline.Problem.CheckPlanning).
func MinMemory(pr *pipeline.Problem) (int64, error) {
	if err := pr.CheckPlanning(); err != nil {
		return 0, err
	}
	l, p := pr.L(), min(pr.Options().GPUs, pr.L())
	need := minMax(l, p, int64(1)<<62, func(i, j int) int64 {
		return min(pr.StageMemory(i, j, 1), pr.RecomputeMinMemory(i, j))
	})
	return pr.MemoryFor(need), nil
}

// minMax returns the min, over the partitions of layers 1..l into at most p contiguous
// stages, of the largest cost(i, j) of a stage of layers i..j (inf when there is none), by
// the classic min-max DP. O(l²·p) calls of cost.
func minMax[T int64 | float64](l, p int, inf T, cost func(i, j int) T) T {
	// best[q][j]: layers 1..j in q stages.
	best := make([][]T, p+1)
	for q := range best {
		best[q] = make([]T, l+1)
		for j := range best[q] {
			best[q][j] = inf
		}
	}
	best[0][0] = 0
	for q := 1; q <= p; q++ {
		for j := 1; j <= l; j++ {
			for i := 1; i <= j; i++ {
				best[q][j] = min(best[q][j], max(best[q-1][i-1], cost(i, j)))
			}
		}
	}
	out := inf
	for q := 1; q <= p; q++ {
		out = min(out, best[q][l])
	}
	return out
}
