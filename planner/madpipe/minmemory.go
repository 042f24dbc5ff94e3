package madpipe

import (
	"errors"
	"math"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// minMemoryTolerance is the relative precision of MinMemory's bisection.
const minMemoryTolerance = 1e-3

// MinMemory returns a small memory per device at which MadPipe found a plan during the
// search (Solve finds it again unless a time-limited ILP ends differently). MadPipe plans at every memory where the contiguous planner
// does, so contiguous.MinMemory is an answer; below it only a non-contiguous schedule of a
// phase-1 allocation can fit, and whether one does is not monotone in the memory (phase 1's
// allocations change with it). MinMemory bisects between the lower bound valid for every
// plan (pipeline.MemoryLowerBound) and the contiguous minimum on "phase 2 schedules a
// phase-1 allocation", to 0.1 % of the contiguous minimum, each probe with opts' time
// limit; so it is the smallest memory found, not a proven smallest. On the shared
// PipeDream profiles it takes up to about 20 s (densenet121, P = 8).
//
// Errors: a *pipeline.InfeasibleError (no memory fits: the contiguous planner's own
// verdict, which only happens for a chain no device count can hold); with
// opts.RequireSolver, an error wrapping milp.ErrNoSolver when no solver is found.
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
	tol := max(1, int64(math.Ceil(minMemoryTolerance*float64(hi))))
	for hi-lo > tol {
		mid := lo + (hi-lo)/2
		ok, err := schedulable(pr.WithMemory(mid), opts)
		switch {
		case err != nil:
			return 0, err
		case ok:
			hi = mid
		default:
			lo = mid
		}
	}
	return hi, nil
}

// schedulable reports whether Solve finds a plan at pr's memory, where the contiguous
// planner finds none: whether phase 2 schedules one of phase 1's allocations. Errors:
// phase 1's refusal for size.
func schedulable(pr *pipeline.Problem, opts Options) (bool, error) {
	if _, err := contiguous.Solve(pr); err == nil {
		return true, nil
	} else if !errors.Is(err, chainplan.ErrInfeasible) {
		return false, nil
	}
	its, err := phase1(pr, false)
	if err != nil {
		return false, err
	}
	p, _ := phase2(pr, its, nil, opts, &Trace{})
	return p != nil, nil
}
