package madpipe

import (
	"slices"

	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// MinMemory returns the smallest memory per device at which Solve plans, to the byte
// (opts' time limit for each probe's ILPs; with checkpointing, plans with and without
// recomputation, as Solve does). MadPipe plans at every memory where the contiguous
// planner does, so contiguous.MinMemory is an answer; below it only a non-contiguous
// schedule of a phase-1 allocation can fit. MinMemory asks "does Solve plan?" one byte
// below the contiguous minimum (one probe where nothing below it plans, the common case),
// then bisects, to one byte, down to the lower bound valid for every plan
// (pipeline.MemoryLowerBound); a plan found at a probe often needs less than the probe (its
// memory_per_gpu), and that memory is probed next. Success below the contiguous minimum
// depends on phase 1's allocations, which change with the memory (its grid of m_P spans
// [0, M]), so the search assumes it monotone there: a byte-by-byte scan of random small chains finds no memory below the
// answer where Solve plans (TestMinMemoryIsSmallest), the property the search relies on.
// Where MadPipe plans below the contiguous minimum it takes about 30 probes, each with
// the time limit of its ILPs.
//
// Errors: a *pipeplan.InfeasibleError (no memory fits: the contiguous planner's own
// verdict, which only happens for a chain no device count can hold); with
// opts.RequireSolver, an error wrapping milp.ErrNoSolver when no solver is found; an
// internal error of a probe.
func MinMemory(pr *pipeline.Problem, opts Options) (int64, error) {
	if err := requireSolver(opts); err != nil {
		return 0, err
	}
	if err := checkProblem(pr); err != nil {
		return 0, err
	}
	hi, err := contiguous.MinMemory(pr)
	if err != nil {
		return 0, err
	}
	lo := pr.MemoryFor(pipeline.MemoryLowerBound(pr)) - 1 // no plan at lo
	if pr.Options().GPUs == 1 || lo >= hi-1 {
		return hi, nil
	}
	if opts.TimeLimit <= 0 {
		opts.TimeLimit = defaultTimeLimit()
	}
	// fits reports whether Solve plans at m, and the memory its plan needs.
	fits := func(m int64) (int64, bool, error) {
		p, err := plan(pr.WithMemory(m), opts, &Trace{})
		if err != nil || p == nil {
			return 0, false, err
		}
		return pr.MemoryFor(slices.Max(p.MemoryPerGPU)), true, nil
	}
	// Most often nothing plans below the contiguous minimum: the first probe, one byte
	// below it, says so (the search assumes success monotone, as the bisection does).
	for mid := hi - 1; hi-lo > 1; mid = lo + (hi-lo)/2 {
		need, ok, err := fits(mid)
		if err != nil {
			return 0, err
		}
		if !ok {
			lo = mid
			continue
		}
		hi = mid
		if need > lo && need < hi {
			// The plan found at mid fits in less; MadPipe plans there too, as a rule.
			if _, ok, err := fits(need); err != nil {
				return 0, err
			} else if ok {
				hi = need
			}
		}
	}
	return hi, nil
}
