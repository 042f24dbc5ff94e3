package pipedream

import (
	"math/bits"
	"sort"
	"time"

	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// Algo is the name of the plans Solve returns.
const Algo = "pipedream"

// Solve partitions pr's chain with PipeDream's DP under pr's memory, then schedules the
// partition with 1F1B* at the smallest period whose memory fits (spec §4.2). The plan's
// PredictedPeriod is the DP's value, the period PipeDream expects; Period is the one its
// partition really reaches. The plan is validated before it is returned.
//
// Errors: a *pipeplan.InfeasibleError with the smallest memory at which Solve succeeds
// (MinMemory) when the DP finds no partition within its estimate, or when its partition
// does not fit the memory even one mini-batch per stage.
func Solve(pr *pipeline.Problem, opts Options) (*pipeplan.Plan, error) {
	start := time.Now()
	if err := pr.CheckPlanning(); err != nil {
		return nil, err
	}
	e := newEstimator(pr, opts)
	stages, predicted := partition(pr, e)
	if stages != nil {
		p, ok, err := pipeline.ScheduleContiguous(pr, stages, Algo)
		if err != nil {
			return nil, err
		}
		if ok {
			p.PredictedPeriod = predicted
			p.SolveMS = float64(time.Since(start).Microseconds()) / 1000
			return p, nil
		}
	}
	need, err := MinMemory(pr, opts)
	if err != nil {
		return nil, err
	}
	return nil, &pipeplan.InfeasibleError{Algo: Algo, MemoryBytes: pr.Options().MemoryBytes, MinMemoryBytes: need}
}

// MinMemory returns the smallest memory per device at which Solve returns a plan (pr's own
// memory is ignored). It is not monotone in the memory: a larger memory can change
// PipeDream's partition into one that 1F1B* cannot schedule within it. Between two
// consecutive values of the estimate (thresholds), the DP admits the same stages and so
// returns the same partition, which succeeds from the memory its one-group schedule
// needs; the search walks these intervals upward from the first where the DP finds a
// partition and no lower than the smallest contiguous memory, and stops at the first that
// succeeds. O(L²·P) per interval visited, after sorting the O(L²·P) thresholds.
//
// Errors: a *chainplan.SizeError when the thresholds or the walk would pass the limits of
// limits.go.
func MinMemory(pr *pipeline.Problem, opts Options) (int64, error) {
	if err := pr.CheckPlanning(); err != nil {
		return 0, err
	}
	if err := checkThresholds(pr); err != nil {
		return 0, err
	}
	e := newEstimator(pr, opts)
	th := thresholds(e)
	floor, err := contiguous.MinMemory(pr)
	if err != nil {
		return 0, err
	}
	// The DP's feasibility only grows with the memory: find the first interval where it
	// has a partition.
	r := sort.Search(len(th), func(r int) bool {
		s, _ := partition(pr.WithMemory(th[r]), e)
		return s != nil
	})
	steps := float64(len(th)) + dpSteps(pr)*float64(bits.Len(uint(len(th)))+1)
	for ; r < len(th); r++ {
		m := max(th[r], floor)
		if r+1 < len(th) && m >= th[r+1] {
			continue // the interval lies below what any contiguous plan needs
		}
		if steps += dpSteps(pr); steps > maxSteps {
			return 0, spend(pr, steps, "give the memory per device (--memory BYTES), or use --algo contiguous")
		}
		stages, _ := partition(pr.WithMemory(m), e)
		need := oneGroup(pr, stages)
		if r+1 == len(th) || max(m, need) < th[r+1] {
			return max(m, need), nil
		}
	}
	return 0, nil // not reached: the last interval is unbounded
}

// oneGroup returns the memory a contiguous partition needs with one mini-batch stored
// per stage, its smallest at any period.
func oneGroup(pr *pipeline.Problem, stages []pipeplan.Stage) int64 {
	var need int64
	for _, s := range stages {
		need = max(need, pr.StageMemory(s.First, s.Last, 1))
	}
	return need
}
