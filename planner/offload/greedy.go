package offload

import (
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/offload/internal/units"
)

// SolveGreedy returns the GREEDY schedule of spec §3.3 (L1757), the heuristic for
// offloading without recomputation: with Q = M_peak − M bytes to offload (Prop. 2), it
// offloads the shortest prefix ā_0, ā_1, …, ā_k with Σ_{ℓ≤k} ā_ℓ ≥ Q, each right after the
// forward that produces it, and prefetches them in reverse order as late as possible
// (no-wait, ordered). Rounding the prefix up to whole tensors can offload too much.
//
// The plan is timed without synchronization at the loss (offloads may run into the
// backward phase). Errors: *chainplan.InfeasibleError when even the longest prefix does
// not fit (with the smallest budget at which GREEDY works), ErrInvalidChain,
// ErrUnsupported. The time complexity is O(L²) plus the replay.
func SolveGreedy(c *chainplan.Chain, budgetBytes int64, opts Options) (*chainplan.Plan, error) {
	start := time.Now()
	if err := opts.Check(c, budgetBytes); err != nil {
		return nil, err
	}
	exact := units.Exact(c)
	if exact.StoreAllPeak() > float64(budgetBytes) {
		if err := checkReplay("greedy", c); err != nil {
			return nil, err
		}
	}
	s, ok := greedySchedule(exact, float64(budgetBytes), opts.BandwidthBytesPerS, opts.MemoryModel())
	if !ok {
		return Infeasible(c, "greedy", budgetBytes, opts, start, func() (int64, error) { return MinBudgetGreedy(c, opts) }, SolveGreedy)
	}
	return finish("greedy", c, budgetBytes, 0, s, opts, start)
}

// MinBudgetGreedy returns the smallest budget at which SolveGreedy finds a schedule, by
// bisection on the replay of GREEDY's schedule (to the byte where that is monotone).
// Errors: ErrInvalidChain, ErrUnsupported for bad options.
func MinBudgetGreedy(c *chainplan.Chain, opts Options) (int64, error) {
	if err := opts.Check(c, 1); err != nil {
		return 0, err
	}
	if err := checkReplay("greedy", c); err != nil {
		return 0, err
	}
	exact := units.Exact(c)
	hi := int64(exact.StoreAllPeak())
	return searchBudget(1, hi, 1, func(b int64) bool {
		_, ok := greedySchedule(exact, float64(b), opts.BandwidthBytesPerS, opts.MemoryModel())
		return ok
	}), nil
}

// greedySchedule builds the GREEDY schedule for limit m and reports whether it replays.
func greedySchedule(c *units.Chain, m, beta float64, model chainplan.MemoryModel) (Schedule, bool) {
	off := make([]bool, c.N)
	q := c.StoreAllPeak() - m
	var sum float64
	for k := 0; k < c.N && sum < q; k++ {
		off[k] = true
		sum += c.ABar[k]
	}
	if sum < q {
		return Schedule{}, false
	}
	s := StoreAll(c, off, false)
	return s, Replay(c, s, SimOptions{BandwidthBytesPerS: beta, LimitBytes: int64(m), Model: model}).Valid
}
