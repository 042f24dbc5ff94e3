package offload

import (
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/offload/internal/units"
)

// Solver is the Solve function of an offloading algorithm.
type Solver func(c *chainplan.Chain, budgetBytes int64, opts Options) (*chainplan.Plan, error)

// Infeasible answers a budget at which algo found no schedule. minBudget searches the
// smallest budget at which it finds one. That is normally above the budget, and the answer
// is an *chainplan.InfeasibleError that states it. But rounding makes feasibility not quite
// monotone in the budget: a smaller budget can get a finer unit (at 12 slots, 23 bytes are
// counted in units of 1 and 24 in units of 2). A schedule found for a smaller budget fits
// this one too, so it is solved there and returned, replayed at this budget.
func Infeasible(c *chainplan.Chain, algo string, budgetBytes int64, opts Options, start time.Time,
	minBudget func() (int64, error), solve Solver) (*chainplan.Plan, error) {
	e := &chainplan.InfeasibleError{Algo: algo, BudgetBytes: budgetBytes}
	mb, err := minBudget()
	switch {
	case sizeRefusal(err):
		return nil, err // the search would need tables over the limit: not an infeasible budget
	case err != nil:
		return nil, e
	case mb > budgetBytes:
		e.MinBudgetBytes = mb
		return nil, e
	case mb == budgetBytes:
		// The search names the budget the solver just refused: solving there again would
		// come back here for ever. Refuse it, naming no smaller budget.
		return nil, e
	}
	p, err := solve(c, mb, opts)
	if sizeRefusal(err) {
		return nil, err
	}
	if err != nil {
		return nil, e
	}
	out, err := finish(algo, c, budgetBytes, p.Slots, ScheduleOf(p), opts, start)
	if err == nil {
		// The candidates' makespans were those at the smaller budget: only the name stays.
		out.Chosen = p.Chosen
	}
	return out, err
}

// searchBudget returns the smallest budget in [lo, hi] at which feasible holds, assuming
// it holds at hi and (almost) monotonically: first upwards from lo by doubling steps, then
// by bisection until the bracket is narrower than prec bytes. The result is always a budget
// feasible answered true for.
func searchBudget(lo, hi, prec int64, feasible func(int64) bool) int64 {
	if lo >= hi || feasible(lo) {
		return min(lo, hi)
	}
	bad, step := lo, max(1, prec)
	good := hi
	for b := lo + step; b < hi; b = lo + step {
		if feasible(b) {
			good = b
			break
		}
		bad, step = b, 2*step
	}
	for good-bad > max(1, prec) {
		mid := bad + (good-bad)/2
		if feasible(mid) {
			good = mid
		} else {
			bad = mid
		}
	}
	return good
}

// minBudgetByProbes returns the smallest budget at which a heuristic's schedule replays,
// searched to 1 % of the store-all peak from the input's size: each probe builds the
// heuristic's schedule at a budget (AUTOCAPPER's, OPPORTUNIST's). A probe's refusal (a
// *chainplan.SizeError) ends the search and is returned. Errors: ErrInvalidChain,
// ErrUnsupported for bad options, or the chain a heuristic cannot replay.
func minBudgetByProbes(algo string, c *chainplan.Chain, opts Options, replays func(exact *units.Chain, budget int64) (bool, error)) (int64, error) {
	if err := opts.Check(c, 1); err != nil {
		return 0, err
	}
	if err := checkReplay(algo, c); err != nil {
		return 0, err
	}
	exact := units.Exact(c)
	hi := int64(exact.StoreAllPeak())
	var refused error
	b := searchBudget(int64(exact.A[0]), hi, max(1, hi/100), func(b int64) bool {
		if refused != nil {
			return true // ends the search: its answer is not used
		}
		ok, err := replays(exact, b)
		refused = err
		return ok || err != nil
	})
	return b, refused
}
