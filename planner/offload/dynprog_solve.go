package offload

import (
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/offload/internal/units"
)

// DynProgSlots is DYNPROG's discretization when Options.Slots is 0 (spec §3.4.5).
const DynProgSlots = 500

// dynOptions are the variants of DYNPROG the tests compare.
type dynOptions struct {
	cheap bool // synchronized junction (L1965) instead of (3.16)/(3.17)
}

// SolveDynProg returns the DYNPROG schedule of spec §3.4 (Algorithm 5, Theorem 10): the
// best ordered, no-wait offloading schedule without recomputation, optimal in the model of
// fractional communications up to the discretization (default DynProgSlots
// slots), with the full junction ε_G of (3.16)/(3.17). Saved sizes are rounded by the
// iterative optimistic scheme: when the schedule does not replay with the exact sizes,
// one value rounded down is rounded up and the DP runs again.
//
// Errors: *chainplan.InfeasibleError with the smallest budget at which DYNPROG finds a
// schedule; ErrInvalidChain; ErrUnsupported. The time complexity is O(L·N³) in the worst
// case (Theorem 10); only reachable states are visited.
func SolveDynProg(c *chainplan.Chain, budgetBytes int64, opts Options) (*chainplan.Plan, error) {
	return solve(c, budgetBytes, opts, dynOptions{})
}

func solve(c *chainplan.Chain, budgetBytes int64, opts Options, do dynOptions) (*chainplan.Plan, error) {
	start := time.Now()
	if err := opts.Check(c, budgetBytes); err != nil {
		return nil, err
	}
	slots := opts.SlotsFor(budgetBytes, DynProgSlots)
	exact := units.Exact(c)
	if exact.StoreAllPeak() > float64(budgetBytes) {
		if err := checkReplay("offload", c); err != nil {
			return nil, err
		}
	}
	s, ok, err := dynSchedule(exact, budgetBytes, slots, opts.BandwidthBytesPerS, opts.MemoryModel(), do)
	if err != nil {
		return nil, err
	}
	if !ok {
		return Infeasible(c, "offload", budgetBytes, opts, start, func() (int64, error) {
			return minBudget(c, opts, do, slots)
		}, func(c *chainplan.Chain, b int64, o Options) (*chainplan.Plan, error) {
			return solve(c, b, o, do)
		})
	}
	return finish("offload", c, budgetBytes, slots, s, opts, start)
}

// MinBudgetDynProg returns the smallest budget at which SolveDynProg finds a schedule,
// searched from the need of offloading everything (offloadNeed) to within M_peak/(8·S)
// bytes for S slots (Options.Slots, DynProgSlots when zero, M_peak for exact
// bytes). Errors: ErrInvalidChain, ErrUnsupported for bad options.
func MinBudgetDynProg(c *chainplan.Chain, opts Options) (int64, error) {
	if err := opts.Check(c, 1); err != nil {
		return 0, err
	}
	hi := int64(units.Exact(c).StoreAllPeak())
	return minBudget(c, opts, dynOptions{}, opts.SlotsFor(hi, DynProgSlots))
}

// minBudget searches DYNPROG's smallest budget; the bisection stops within
// M_peak/(8·precSlots) bytes.
func minBudget(c *chainplan.Chain, opts Options, do dynOptions, precSlots int64) (int64, error) {
	if err := checkReplay("offload", c); err != nil {
		return 0, err
	}
	exact := units.Exact(c)
	hi := int64(exact.StoreAllPeak())
	lo := int64(offloadNeed(exact))
	var refused error
	b := searchBudget(lo, hi, max(1, hi/(8*precSlots)), func(b int64) bool {
		if refused != nil {
			return true // ends the search: its answer is not used
		}
		_, ok, err := dynSchedule(exact, b, opts.SlotsFor(b, DynProgSlots), opts.BandwidthBytesPerS, opts.MemoryModel(), do)
		refused = err
		return ok || err != nil
	})
	return b, refused
}

// dynSchedule runs DYNPROG with the iterative rounding and returns a schedule that
// replays within the budget with the exact sizes.
//
// Errors: a *chainplan.SizeError when the DP's states would pass chainplan.TableLimit.
func dynSchedule(c *units.Chain, budget, slots int64, beta float64, model chainplan.MemoryModel, do dynOptions) (Schedule, bool, error) {
	if c.StoreAllPeak() <= float64(budget) {
		return StoreAll(c, make([]bool, c.N), true), true, nil
	}
	d := newDynChain(c, budget, slots, beta)
	for {
		off, _, ok := d.table(do.cheap)
		if d.over != nil {
			return Schedule{}, false, d.over
		}
		if !ok {
			// Rounding more values up cannot make the DP feasible again.
			return Schedule{}, false, nil
		}
		s := StoreAll(c, off, do.cheap)
		if Replay(c, s, SimOptions{BandwidthBytesPerS: beta, LimitBytes: budget, Model: model}).Valid {
			return s, true, nil
		}
		if !d.bump() {
			return Schedule{}, false, nil
		}
	}
}

// offloadNeed is the smallest memory at which some offloading schedule without
// recomputation exists: every ā but the input of the running stage offloaded, (3.8)/(3.9)
// with A = 0 for every stage.
func offloadNeed(c *units.Chain) float64 {
	var need float64
	for i := 1; i <= c.N; i++ {
		mF := c.OF[i] + c.ABar[i]
		mB := c.OB[i] + c.ABar[i] + c.A[i] + c.A[i-1]
		need = max(need, max(mF, mB)+c.ABar[i-1])
	}
	return need
}
