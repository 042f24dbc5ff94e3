package offload

import (
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/offload/internal/units"
)

// POFO's default discretization (DYNPROG's is DynProgSlots). POFO uses the same
// grid of N levels for the stored data A and for both backlogs Δ_F and Δ_B.
// Its time grows as L²N³ + L³N² (Theorem 12) and its tables as L·N³ (tableBytes), so its
// default is the finest grid whose time stays within that of the
// thesis's N = 50 on 50 stages (about 0.7 s on the 2-core reference machine) and whose
// table stays under maxTableBytes, and never coarser than N = 50 (minSlots). Short chains
// thus get a finer grid: the rounding of the states is the only loss of the discretized DP,
// and it shrinks as N grows (docs/pofo.md).
const (
	minSlots      = 50
	maxTableBytes = 336 << 20
)

// POFOSlots returns the number of slots POFO uses for a chain of l stages (the loss not
// counted) when Options.Slots is 0.
func POFOSlots(l int) int64 {
	work := func(n, slots float64) float64 { return n*n*slots*slots*slots + n*n*n*slots*slots }
	limit := work(51, minSlots) // 50 stages and the loss
	n := float64(l + 1)
	slots := int64(minSlots)
	for next := float64(slots + 1); work(n, next) <= limit && tableBytes(n, next) <= maxTableBytes; next++ {
		slots++
	}
	return slots
}

// SolvePOFO returns the fastest schedule of c within budgetBytes that it finds at the link
// bandwidth opts.BandwidthBytesPerS, built around POFO (spec chapter 4): the optimal
// combination of offloading segment inputs during the forward phase and persistent
// rematerialization, under Assumptions 4 (OR.1-OR.5) and up to the discretization.
//
// The DP runs twice, with its new backlogs rounded up (conservative, spec §4.9) and to the
// nearest unit, and each schedule is timed both synchronized at the loss and not. Beside it
// run rotor, AUTOCAPPER and OPPORTUNIST at the same budget and bandwidth. Every candidate
// is replayed by the simulator with the exact sizes in the plan's memory model (fractional
// by default, the model the DP optimizes) and the fastest is returned, the DP's on ties;
// Plan.Chosen names it and Plan.Candidates lists every candidate's makespan
// (docs/pofo.md, "Candidates"). The plan's makespan and peak are the simulator's; with the
// conservative rounding the first DP value is never below its fractional makespan.
//
// When the no-recomputation schedule fits the budget it is returned without transfers:
// its makespan Σ(u_F+u_B) is a lower bound.
//
// Errors: *chainplan.InfeasibleError with the smallest feasible budget; ErrInvalidChain;
// ErrUnsupported for a bad bandwidth, memory model or budget; a *chainplan.SizeError, before
// the tables are allocated, when they would pass chainplan.TableLimit. The time complexity is
// O(L²N³ + L³N²) for N slots (Theorem 12), much less in practice since only reachable
// states are computed, plus AUTOCAPPER's 40 rotor solves.
func SolvePOFO(c *chainplan.Chain, budgetBytes int64, opts Options) (*chainplan.Plan, error) {
	start := time.Now()
	if err := opts.Check(c, budgetBytes); err != nil {
		return nil, err
	}
	slots := opts.SlotsFor(budgetBytes, POFOSlots(c.Len()))
	exact := units.Exact(c)
	if exact.StoreAllPeak() <= float64(budgetBytes) {
		s := StoreAll(exact, make([]bool, exact.N), true)
		p, err := finish("pofo", c, budgetBytes, slots, s, opts, start)
		if err == nil {
			p.Chosen = CandidatePOFO
		}
		return p, err
	}
	if err := checkReplay("pofo", c); err != nil {
		return nil, err
	}
	if err := checkTableSize(c, budgetBytes, slots); err != nil {
		return nil, err
	}
	cands := solveCandidates(c, exact, budgetBytes, slots, opts)
	if err := checkDP(cands, opts.MemoryModel()); err != nil {
		return nil, err
	}
	best := pick(cands)
	if best < 0 {
		return Infeasible(c, "pofo", budgetBytes, opts, start, func() (int64, error) { return MinBudgetPOFO(c, opts) }, SolvePOFO)
	}
	p, err := finish("pofo", c, budgetBytes, slots, cands[best].s, opts, start)
	if err != nil {
		return nil, err
	}
	p.Chosen, p.Candidates = cands[best].name, summaries(cands)
	return p, nil
}

// tableBytes is the memory of the discretized tables for n stages (the loss included) and m
// units: three forward slabs per stage (x = 0, and x = 1 with and without a run) of
// Σ_{A≤m} (m−A+1)² entries of 12 bytes (a value and a choice), and two backward slabs per
// sub-chain of Σ_{A≤m} (m−A+1) entries of 10 bytes.
func tableBytes(n, m float64) float64 {
	return 3*n*(m+1)*(m+2)*(2*m+3)/6*12 + n*n*(m+1)*(m+2)/2*10
}
