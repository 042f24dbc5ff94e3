package pofo

import (
	"math"
	"time"

	"github.com/chainplan/chainplan"
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
// ErrInvalidChain, ErrUnsupported.
func SolveAutoCapper(c *chainplan.Chain, budgetBytes int64, opts Options) (*chainplan.Plan, error) {
	start := time.Now()
	if err := opts.check(c, budgetBytes); err != nil {
		return nil, err
	}
	exact := exactChain(c)
	s, ok := autoCapper(c, exact, budgetBytes, opts)
	if !ok {
		return infeasible(c, "autocapper", budgetBytes, opts, start, func() (int64, error) { return MinBudgetAutoCapper(c, opts) }, SolveAutoCapper)
	}
	return finishPlan("autocapper", c, budgetBytes, remSlots(opts, budgetBytes, exact.n), s, opts, start)
}

// MinBudgetAutoCapper returns the smallest budget at which SolveAutoCapper finds a
// schedule, searched to 1 % of the store-all peak (each probe runs AUTOCAPPER, 40 rotor
// solves). Errors: ErrInvalidChain, ErrUnsupported for bad options.
func MinBudgetAutoCapper(c *chainplan.Chain, opts Options) (int64, error) {
	if err := opts.check(c, 1); err != nil {
		return 0, err
	}
	exact := exactChain(c)
	hi := int64(exact.storeAllPeak())
	return searchBudget(int64(exact.a[0]), hi, max(1, hi/100), func(b int64) bool {
		_, ok := autoCapper(c, exact, b, opts)
		return ok
	}), nil
}

// remSlots returns the slots of the heuristics' rematerialization for a budget: rotor's
// default unless set, and never fewer than 2(N+4) for N stages. With fewer, the rounding
// of the terms of one memory check can exceed the whole budget at any budget, and rotor's
// smallest-budget search, which an infeasible budget starts, does not stop.
func remSlots(opts Options, budget int64, n int) int64 {
	s := opts.slots(budget, rotor.DefaultSlots)
	if opts.Slots < 0 {
		return s // exact bytes
	}
	return max(s, int64(2*(n+4)))
}

// autoCapper returns the best CAPPER schedule over the tried limits.
func autoCapper(c *chainplan.Chain, exact *chain, budget int64, opts Options) (Schedule, bool) {
	p := params{beta: opts.BandwidthBytesPerS, limit: float64(budget), model: opts.model()}
	hi := int64(exact.storeAllPeak())
	if hi <= budget {
		return storeAllSchedule(exact, make([]bool, exact.n), true), true
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
		plan, err := rotor.Solve(c, mp, rotor.Options{Slots: remSlots(opts, mp, exact.n)})
		if err != nil {
			continue
		}
		s, ok := capper(exact, plan.Sequence, p)
		if !ok {
			continue
		}
		if r := simulate(exact, s, p); r.Valid && r.Makespan < bestT {
			best, bestT, found = s, r.Makespan, true
		}
	}
	return best, found
}

// capper offloads stored activations of seq until it fits the limit of p (CAPPER).
func capper(c *chain, seq []chainplan.Op, p params) (Schedule, bool) {
	lg := analyze(c, Schedule{Compute: seq})
	if len(lg.issues) > 0 {
		return Schedule{}, false
	}
	var off []int
	taken := make([]bool, len(lg.insts))
	for {
		s := withTransfers(lg, seq, off, false)
		// The synchronized timing is valid exactly when some unsynchronized one is, and
		// is cheaper to find.
		probe := s
		probe.SyncAtLoss = true
		r := simulate(c, probe, p)
		if r.Valid {
			return s, true
		}
		k := r.FailOp
		if k < 0 {
			return Schedule{}, false
		}
		x := -1
		for id := range lg.insts {
			in := &lg.insts[id]
			if taken[id] || !in.aliveDuring(k) || in.producer >= lg.loss || inputOf(lg, k, id) {
				continue
			}
			if k > lg.loss {
				if r := lg.firstReaderAfter(id, lg.loss); r >= 0 && r <= k {
					continue // needed on the GPU again before or at k
				}
			}
			if x < 0 || in.t.Stage < lg.insts[x].t.Stage {
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

// inputOf reports whether operation k reads the instance.
func inputOf(lg *logical, k, id int) bool {
	for _, v := range lg.inputs[k] {
		if v == id {
			return true
		}
	}
	return false
}
