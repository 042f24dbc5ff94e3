package offload

import (
	"math"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/offload/internal/units"
	"github.com/chainplan/chainplan/planner/rotor"
)

// autoCapperTries is the number of rematerialization limits M' AUTOCAPPER tries, evenly
// spaced in [M, M_peak] (spec §4.13, L2326).
const autoCapperTries = 40

// SolveAutoCapper returns the AUTOCAPPER schedule of spec §4.13: for 40 limits M' evenly
// spaced between the budget M and M_peak, it takes the optimal rematerialization sequence
// for M' (rotor) and offloads stored activations until the sequence fits M (CAPPER), then
// keeps the fastest. CAPPER replays the sequence with the no-wait rule; at the operation
// that does not fit it offloads the lowest-indexed stored activation that is on the GPU
// then, was produced before the loss, is not read by that operation and is not needed
// again before it (spec §8 reading of L2326), right after it is produced, and prefetches
// it before its next reader after the loss.
//
// The heuristic is not bound by Assumptions 4: its schedules are timed without
// synchronization at the loss. It has no optimality guarantee. Errors: an
// *chainplan.InfeasibleError when no M' works (its smallest budget is searched to 1 %),
// ErrInvalidChain, ErrUnsupported; a *chainplan.SizeError when rotor's tables would pass
// chainplan.TableLimit.
func SolveAutoCapper(c *chainplan.Chain, budgetBytes int64, opts Options) (*chainplan.Plan, error) {
	start := time.Now()
	if err := opts.Check(c, budgetBytes); err != nil {
		return nil, err
	}
	exact := units.Exact(c)
	if exact.StoreAllPeak() > float64(budgetBytes) {
		if err := checkReplay("autocapper", c); err != nil {
			return nil, err
		}
	}
	s, ok, err := autoCapper(c, exact, budgetBytes, opts)
	if err != nil {
		return nil, err
	}
	if !ok {
		return Infeasible(c, "autocapper", budgetBytes, opts, start, func() (int64, error) { return MinBudgetAutoCapper(c, opts) }, SolveAutoCapper)
	}
	return finish("autocapper", c, budgetBytes, rematSlots(opts, budgetBytes, exact.N), s, opts, start)
}

// MinBudgetAutoCapper returns the smallest budget at which SolveAutoCapper finds a
// schedule, searched to 1 % of the store-all peak (each probe runs AUTOCAPPER, 40 rotor
// solves). Errors: ErrInvalidChain, ErrUnsupported for bad options.
func MinBudgetAutoCapper(c *chainplan.Chain, opts Options) (int64, error) {
	return minBudgetByProbes("autocapper", c, opts, func(exact *units.Chain, b int64) (bool, error) {
		_, ok, err := autoCapper(c, exact, b, opts)
		return ok, err
	})
}

// autoCapper returns the best CAPPER schedule over the tried limits at the budget, on c
// and its exact form, and whether one replays: SolveAutoCapper's schedule, which POFO's
// Solve also compares. Errors: a *chainplan.SizeError when rotor refuses its tables
// (rematError).
func autoCapper(c *chainplan.Chain, exact *units.Chain, budget int64, opts Options) (Schedule, bool, error) {
	p := SimOptions{BandwidthBytesPerS: opts.BandwidthBytesPerS, LimitBytes: budget, Model: opts.MemoryModel()}
	hi := int64(exact.StoreAllPeak())
	if hi <= budget {
		return StoreAll(exact, make([]bool, exact.N), true), true, nil
	}
	var best Schedule
	bestT, found := math.Inf(1), false
	seen := map[int64]bool{}
	for i := 0; i < autoCapperTries; i++ {
		mp := budget + int64(float64(i)*float64(hi-budget)/float64(autoCapperTries-1))
		if seen[mp] {
			continue
		}
		seen[mp] = true
		plan, err := rotor.Solve(c, mp, rotor.Options{Slots: rematSlots(opts, mp, exact.N)})
		if sizeRefusal(err) {
			return Schedule{}, false, rematError("autocapper", c, err)
		}
		if err != nil {
			continue
		}
		s, ok := capper(exact, plan.Sequence, p)
		if !ok {
			continue
		}
		if r := Replay(exact, s, p); r.Valid && r.Makespan < bestT {
			best, bestT, found = s, r.Makespan, true
		}
	}
	return best, found, nil
}

// capper offloads stored activations of seq until it fits the limit of p (CAPPER).
func capper(c *units.Chain, seq []chainplan.Op, p SimOptions) (Schedule, bool) {
	lg := Analyze(c, Schedule{Compute: seq})
	if len(lg.Issues) > 0 {
		return Schedule{}, false
	}
	var off []int
	taken := make([]bool, len(lg.Insts))
	for {
		s := withTransfers(lg, off, false)
		// The synchronized timing is valid exactly when some unsynchronized one is, and
		// is cheaper to find.
		probe := s
		probe.SyncAtLoss = true
		r := Replay(c, probe, p)
		if r.Valid {
			return s, true
		}
		k := r.FailOp
		if k < 0 {
			return Schedule{}, false
		}
		x := -1
		for id := range lg.Insts {
			in := &lg.Insts[id]
			if taken[id] || !in.AliveDuring(k) || in.Producer >= lg.Loss || lg.Reads(k, id) {
				continue
			}
			if k > lg.Loss {
				if r := lg.FirstReaderAfter(id, lg.Loss); r >= 0 && r <= k {
					continue // needed on the GPU again before or at k
				}
			}
			if x < 0 || in.Tensor.Stage < lg.Insts[x].Tensor.Stage {
				x = id
			}
		}
		if x < 0 {
			return Schedule{}, false
		}
		taken[x] = true
		off = append(off, x)
	}
}
