package pofo

import (
	"fmt"
	"math"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
)

// Default discretizations. DYNPROG uses DefaultOffloadSlots = 500 (spec §3.4.5). POFO
// uses the same grid of N levels for the stored data A and for both backlogs Δ_F and Δ_B.
// Its time grows as L²N³ + L³N² (Theorem 12) and its tables as L·N³ (tableBytes), so its
// default is the finest grid whose time stays within that of the
// thesis's N = 50 on 50 stages (about 0.7 s on the 2-core reference machine) and whose
// table stays under maxTableBytes, and never coarser than N = 50 (MinSlots). Short chains
// thus get a finer grid: the rounding of the states is the only loss of the discretized DP,
// and it shrinks as N grows (docs/pofo.md).
const (
	MinSlots            = 50
	DefaultOffloadSlots = 500
	maxTableBytes       = 336 << 20
)

// DefaultSlots returns the number of slots POFO uses for a chain of l stages (the loss not
// counted) when Options.Slots is 0.
func DefaultSlots(l int) int64 {
	work := func(n, slots float64) float64 { return n*n*slots*slots*slots + n*n*n*slots*slots }
	limit := work(51, MinSlots) // 50 stages and the loss
	n := float64(l + 1)
	slots := int64(MinSlots)
	for next := float64(slots + 1); work(n, next) <= limit && tableBytes(n, next) <= maxTableBytes; next++ {
		slots++
	}
	return slots
}

// Options configures the planners.
type Options struct {
	// BandwidthBytesPerS is β, the GPU↔host bandwidth in bytes per time unit of the
	// chain (bytes per second for profiled chains). It must be positive and finite.
	BandwidthBytesPerS float64
	// Slots is the number of memory slots of the discretization (unit =
	// max(1, floor(budget/slots))). Zero means the algorithm's default (DefaultSlots(L)
	// for POFO, DefaultOffloadSlots for DYNPROG, rotor's default for the heuristics'
	// rematerialization); a negative value means exact bytes (unit 1), which only small
	// budgets can afford.
	Slots int64
	// Model is the memory model of the returned plan's makespan, peak and timing; the
	// zero value means Fractional, the model the dynamic programs optimize. Both
	// models' estimates are in every plan.
	Model chainplan.MemoryModel
}

func (o Options) slots(budget, def int64) int64 {
	switch {
	case o.Slots == 0:
		return def
	case o.Slots < 0:
		return max(budget, 1)
	}
	return o.Slots
}

func (o Options) model() chainplan.MemoryModel {
	if o.Model == "" {
		return chainplan.Fractional
	}
	return o.Model
}

// check validates the options, the chain and the budget.
func (o Options) check(c *chainplan.Chain, budgetBytes int64) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if b := o.BandwidthBytesPerS; math.IsNaN(b) || math.IsInf(b, 0) || b <= 0 {
		return fmt.Errorf("%w: the bandwidth must be a positive, finite number of bytes per second (got %v)",
			chainplan.ErrUnsupported, b)
	}
	if !o.model().Valid() {
		return fmt.Errorf("%w: unknown memory model %q (want fractional or integral)", chainplan.ErrUnsupported, o.Model)
	}
	if budgetBytes <= 0 {
		return fmt.Errorf("%w: the budget must be positive (got %d bytes)", chainplan.ErrUnsupported, budgetBytes)
	}
	return nil
}

// Solve returns the fastest schedule of c within budgetBytes that it finds at the link
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
// ErrUnsupported for a bad bandwidth, memory model or budget. The time complexity is
// O(L²N³ + L³N²) for N slots (Theorem 12), much less in practice since only reachable
// states are computed, plus AUTOCAPPER's 40 rotor solves.
func Solve(c *chainplan.Chain, budgetBytes int64, opts Options) (*chainplan.Plan, error) {
	start := time.Now()
	if err := opts.check(c, budgetBytes); err != nil {
		return nil, err
	}
	slots := opts.slots(budgetBytes, DefaultSlots(c.Len()))
	exact := exactChain(c)
	if exact.storeAllPeak() <= float64(budgetBytes) {
		s := storeAllSchedule(exact, make([]bool, exact.n), true)
		p, err := finishPlan("pofo", c, budgetBytes, slots, s, opts, start)
		if err == nil {
			p.Chosen = CandidatePOFO
		}
		return p, err
	}
	if err := checkTableSize(c, budgetBytes, slots); err != nil {
		return nil, err
	}
	cands := solveCandidates(c, exact, budgetBytes, slots, opts)
	if err := checkDP(cands, opts.model()); err != nil {
		return nil, err
	}
	best := pick(cands)
	if best < 0 {
		return infeasible(c, "pofo", budgetBytes, opts, start, func() (int64, error) { return MinBudget(c, opts) }, Solve)
	}
	p, err := finishPlan("pofo", c, budgetBytes, slots, cands[best].s, opts, start)
	if err != nil {
		return nil, err
	}
	p.Chosen, p.Candidates = cands[best].name, summaries(cands)
	return p, nil
}

// maxTableBytesAllowed bounds the memory of the tables a caller may ask for with
// Options.Slots; the default grid stays under maxTableBytes.
const maxTableBytesAllowed = 4 << 30

// tableBytes is the memory of the discretized tables for n stages (the loss included) and m
// units: three forward slabs per stage (x = 0, and x = 1 with and without a run) of
// Σ_{A≤m} (m−A+1)² entries of 12 bytes (a value and a choice), and two backward slabs per
// sub-chain of Σ_{A≤m} (m−A+1) entries of 10 bytes.
func tableBytes(n, m float64) float64 {
	return 3*n*(m+1)*(m+2)*(2*m+3)/6*12 + n*n*(m+1)*(m+2)/2*10
}

// checkTableSize refuses a grid whose tables (tableBytes) would not fit in memory: an
// explicit --slots of a few hundred on a long chain, or exact bytes (Slots < 0) on a real
// budget, would otherwise fail allocating gigabytes.
func checkTableSize(c *chainplan.Chain, budgetBytes, slots int64) error {
	m := float64(budgetBytes / discretize.Unit(budgetBytes, slots))
	bytes := tableBytes(float64(c.Len()+1), m)
	if bytes <= maxTableBytesAllowed {
		return nil
	}
	return fmt.Errorf("%w: pofo at %.0f memory units on %d stages needs about %s of tables (at most %s): "+
		"use fewer slots (the default for this chain is %d)", chainplan.ErrUnsupported, m, c.Len(),
		chainplan.FormatBytes(int64(bytes)), chainplan.FormatBytes(maxTableBytesAllowed), DefaultSlots(c.Len()))
}

// pofoTable returns the discretized POFO table of c for a budget.
//
// Sizes keep their exact value in units (bytes/unit); only the states are whole units:
// a size joining A is rounded up, and so is every new Δ (spec §4.9). This is
// conservative like rounding every size up, as rotor does, but the requirement terms
// and the inputs that are not kept lose nothing: with the 50 slots of the thesis,
// rounding each of a few dozen stored activations up costs a large share of the budget.
func pofoTable(c *chainplan.Chain, budgetBytes, slots int64, beta float64, noOffload bool) *table {
	unit := discretize.Unit(budgetBytes, slots)
	return newTable(exactChain(c).scaled(unit), float64(budgetBytes/unit), beta/float64(unit), false, noOffload)
}

// rotorTable is pofoTable with every size rounded up to whole units first, exactly as the
// rotor DP discretizes: with offloading disabled its value is rotor's (spec §4.8).
func rotorTable(c *chainplan.Chain, budgetBytes, slots int64, beta float64, noOffload bool) *table {
	dc := discretize.ForBudget(c, budgetBytes, slots)
	return newTable(fromDiscrete(dc), float64(dc.Units(budgetBytes)), beta/float64(dc.Unit), false, noOffload)
}

// finishPlan replays s in both memory models with the exact sizes and assembles the
// plan. A schedule that does not replay in the plan's model is an internal error for the
// dynamic programs; the heuristics check their schedules before.
func finishPlan(algo string, c *chainplan.Chain, budgetBytes, slots int64, s Schedule, opts Options, start time.Time) (*chainplan.Plan, error) {
	exact := exactChain(c)
	var main *Report
	off := &chainplan.Offload{
		BandwidthBytesPerS: opts.BandwidthBytesPerS, MemoryModel: opts.model(), SyncAtLoss: s.SyncAtLoss,
		Transfers: s.Transfers,
	}
	if off.Transfers == nil {
		off.Transfers = []chainplan.Transfer{}
	}
	for _, m := range []chainplan.MemoryModel{chainplan.Fractional, chainplan.Integral} {
		r := simulate(exact, s, params{beta: opts.BandwidthBytesPerS, limit: float64(budgetBytes), model: m})
		off.Estimates = append(off.Estimates, chainplan.Estimate{MemoryModel: m, Valid: r.Valid, Makespan: r.Makespan, PeakBytes: r.PeakBytes})
		if m == opts.model() {
			main = r
		}
	}
	if !main.Valid {
		return nil, fmt.Errorf("%s: internal error: the schedule does not replay in the %s model: %w", algo, opts.model(), main.Err())
	}
	off.OffloadedBytes = main.OffloadedBytes
	off.Timing = main.Timing
	return &chainplan.Plan{
		Algo: algo, Feasible: true, Makespan: main.Makespan, PeakBytes: main.PeakBytes,
		BudgetBytes: budgetBytes, Slots: slots, SolveMS: msSince(start),
		Sequence: s.Compute, Offload: off,
	}, nil
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }
