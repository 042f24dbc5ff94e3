package pofo

import (
	"fmt"
	"math"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
)

// Default discretizations: N = 50 slots for POFO (spec §4.9: "finer grids changed
// nothing") and N = 500 for DYNPROG (spec §3.4.5). POFO keeps the backlogs Δ_F, Δ_B on a
// grid of about deltaLevels steps whatever the slots, which only refine the stored data
// A; the runs of saved activations are rounded through prefix sums (incAbar), without
// which 50 units cost a large share of the budget on long chains (docs/pofo.md).
const (
	DefaultSlots        = 50
	DefaultOffloadSlots = 500
	deltaLevels         = 50
)

// Options configures the planners.
type Options struct {
	// BandwidthBytesPerS is β, the GPU↔host bandwidth in bytes per time unit of the
	// chain (bytes per second for profiled chains). It must be positive and finite.
	BandwidthBytesPerS float64
	// Slots is the number of memory slots of the discretization (unit =
	// max(1, floor(budget/slots))). Zero means the algorithm's default (DefaultSlots for
	// POFO, DefaultOffloadSlots for DYNPROG, rotor's default for the heuristics'
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

// deltaQuantum returns the step of the Δ grid in units for a budget split into slots, so
// that the backlogs have about deltaLevels levels: exact (1) when the options ask for
// exact bytes or the budget has few units.
func (o Options) deltaQuantum(budget, slots int64) int {
	if o.Slots < 0 {
		return 1
	}
	m := budget / discretize.Unit(budget, slots)
	return int(max(1, m/deltaLevels))
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

// Solve returns the POFO schedule of c within budgetBytes (spec chapter 4): the optimal
// combination of offloading segment inputs during the forward phase and persistent
// rematerialization, under Assumptions 4 (OR.1-OR.5) and up to the discretization, with
// the link bandwidth opts.BandwidthBytesPerS. The plan's makespan and peak are the
// simulator's, with the exact sizes; with conservative rounding the DP value is never
// below the fractional makespan (spec §4.9).
//
// When the no-recomputation schedule fits the budget it is returned without transfers:
// its makespan Σ(u_F+u_B) is a lower bound.
//
// Errors: *chainplan.InfeasibleError with the smallest feasible budget; ErrInvalidChain;
// ErrUnsupported for a bad bandwidth, memory model or budget. The time complexity is
// O(L²N³ + L³N²) for N slots (Theorem 12), much less in practice since only reachable
// states are computed.
func Solve(c *chainplan.Chain, budgetBytes int64, opts Options) (*chainplan.Plan, error) {
	start := time.Now()
	if err := opts.check(c, budgetBytes); err != nil {
		return nil, err
	}
	slots := opts.slots(budgetBytes, DefaultSlots)
	exact := exactChain(c)
	if exact.storeAllPeak() <= float64(budgetBytes) {
		s := storeAllSchedule(exact, make([]bool, exact.n), true)
		return finishPlan("pofo", c, budgetBytes, slots, s, opts, start)
	}
	tb := pofoTable(c, budgetBytes, slots, opts.BandwidthBytesPerS, false, opts.deltaQuantum(budgetBytes, slots))
	tb.fill()
	if math.IsInf(tb.solveValue(), 1) {
		return nil, infeasible(c, "pofo", budgetBytes, opts, func() (int64, error) { return MinBudget(c, opts) })
	}
	return finishPlan("pofo", c, budgetBytes, slots, tb.schedule(exact), opts, start)
}

// pofoTable returns the discretized POFO table of c for a budget.
//
// Sizes keep their exact value in units (bytes/unit); only the states are whole units:
// a size joining A is rounded up, and so is every new Δ (spec §4.9). This is
// conservative like rounding every size up, as rotor does, but the requirement terms
// and the inputs that are not kept lose nothing: with the 50 slots of the thesis,
// rounding each of a few dozen stored activations up costs a large share of the budget.
func pofoTable(c *chainplan.Chain, budgetBytes, slots int64, beta float64, noOffload bool, dq int) *table {
	unit := discretize.Unit(budgetBytes, slots)
	return newTable(exactChain(c).scaled(unit), float64(budgetBytes/unit), beta/float64(unit), false, noOffload, dq)
}

// rotorTable is pofoTable with every size rounded up to whole units first, exactly as the
// rotor DP discretizes: with offloading disabled its value is rotor's (spec §4.8).
func rotorTable(c *chainplan.Chain, budgetBytes, slots int64, beta float64, noOffload bool) *table {
	dc := discretize.ForBudget(c, budgetBytes, slots)
	return newTable(fromDiscrete(dc), float64(dc.Units(budgetBytes)), beta/float64(dc.Unit), false, noOffload, 1)
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
