package offload

import (
	"errors"
	"fmt"
	"math"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/baseline"
	"github.com/chainplan/chainplan/planner/internal/discretize"
	"github.com/chainplan/chainplan/planner/offload/internal/units"
)

// The family's limits (docs/pofo.md, "Limits"): every planner checks the memory its tables
// and its replays would take against chainplan.TableLimit before it allocates them, and
// refuses with a *chainplan.SizeError (exit status 2) naming the chain's length, the size
// and the limit.

// pofoBytes is the memory of one filled POFO table for n stages (the loss included) and m
// units: the forward slabs (tableBytes' first term; their slab headers and lower bounds),
// and C_Δ, filled (units.IndexBytes and units.FilledBytes). SolvePOFO builds one at a time.
func pofoBytes(n, m float64) float64 {
	mi := int(math.Min(m, math.MaxInt32))
	return 3*n*(m+1)*(m+2)*(2*m+3)/6*12 + 4*(n+1)*48 + 2*(n+1)*(24+(m+1)*8) +
		units.IndexBytes(int(n), mi) + units.FilledBytes(int(n), mi)
}

// checkTableSize refuses a POFO grid whose tables (pofoBytes) would pass the limit: an
// explicit --slots of a few hundred on a long chain, exact bytes (Slots < 0) on a real
// budget, or any grid on a chain of thousands of stages would otherwise fail allocating.
func checkTableSize(c *chainplan.Chain, budgetBytes, slots int64) error {
	m := float64(budgetBytes / discretize.Unit(budgetBytes, slots))
	n := float64(c.Len() + 1)
	return chainplan.CheckTables("pofo", c.Len(), fmt.Sprintf("its tables at %.0f memory units", m), pofoBytes(n, m),
		func(limit int64) string {
			// The finest grid that fits: pofoBytes grows with m.
			lo, hi := 0.0, m
			for hi-lo > 1 {
				if mid := math.Floor((lo + hi) / 2); pofoBytes(n, mid) <= float64(limit) {
					lo = mid
				} else {
					hi = mid
				}
			}
			if lo >= 2 {
				return fmt.Sprintf("use fewer slots (the default for this chain is %d; at most %.0f fit)", POFOSlots(c.Len()), lo)
			}
			return "no grid fits, since the tables grow with the square of the chain's length; " + baseline.Fallback(c.Len())
		})
}

// analysisBytes bounds the memory of replaying a schedule without recomputation of a chain
// of n stages (the loss included): the analysis lists, for each of its 2n operations, the
// offloaded tensors stored while it runs, at most n (8 bytes each, twice that for the slack
// of growing lists), beside a few slices per operation and tensor. The heuristics and
// POFO replay longer sequences, but their tables refuse such chains first.
func analysisBytes(n int) float64 {
	ops := 2 * float64(n)
	return ops*float64(n)*16 + ops*5*24 + float64(2*n+1)*96
}

// checkReplay refuses a chain whose replays (analysisBytes) would pass the limit: every
// planner of the family replays its schedules in the family's simulator.
func checkReplay(algo string, c *chainplan.Chain) error {
	n := c.Len() + 1
	return chainplan.CheckTables(algo, c.Len(),
		fmt.Sprintf("the replay of its schedules (the offloaded tensors stored during each of %d operations)", 2*n),
		analysisBytes(n), func(int64) string {
			return "the simulator's memory grows with the square of the chain's length; " + baseline.Fallback(c.Len())
		})
}

// rematError turns the refusal of the rotor tables a heuristic's rematerialization builds
// into the heuristic's own: its slots are never fewer than 2(N+4) (rematSlots), so rotor's
// advice of fewer slots does not apply. Other errors are returned as they are.
func rematError(algo string, c *chainplan.Chain, err error) error {
	var se *chainplan.SizeError
	if !errors.As(err, &se) {
		return err
	}
	out := *se
	out.Algo = algo
	out.What = "the rotor tables of its rematerialization (" + se.What + ", at least 2(L+5) slots)"
	out.Fix = "use --algo greedy or --algo offload (offloading without recomputation, no rotor table), or " +
		baseline.Fallback(c.Len())
	return &out
}

// overflowError is the refusal of a heuristic whose rematerialization table (units.Table,
// filled top-down) passed the limit while it ran.
func overflowError(algo string, c *chainplan.Chain, tb *units.Table) error {
	limit, err := chainplan.TableLimit()
	if err != nil {
		return err
	}
	return &chainplan.SizeError{Algo: algo, Stages: c.Len(),
		What:      fmt.Sprintf("the table of its rematerialization (%d units)", int64(tb.M)),
		NeedBytes: int64(tb.OverflowBytes()), AtLeast: true, LimitBytes: limit,
		Fix: "use --algo greedy or --algo offload (offloading without recomputation), or " + baseline.Fallback(c.Len())}
}

// sizeRefusal reports whether err is a refusal for size, which a planner returns as it is
// rather than reading it as an infeasible budget.
func sizeRefusal(err error) bool {
	var se *chainplan.SizeError
	return errors.As(err, &se)
}

// DYNPROG keeps the states of every stage for its backtrack; their number depends on
// which are reachable, so they are counted as they are created rather than bounded
// beforehand: a state takes dynStateBytes in its stage's list and, while its stage is
// built, a map entry and the list's slack, dynStageFactor states' worth in all.
const (
	dynStateBytes  = 40
	dynStageFactor = 3.5
)

// maxDynStates is the number of DYNPROG states chainplan.TableLimit holds.
func maxDynStates() float64 {
	limit, err := chainplan.TableLimit()
	if err != nil {
		limit = chainplan.DefaultTableLimitBytes // reported by checkReplay first
	}
	return float64(limit) / dynStateBytes
}

// statesError is DYNPROG's refusal once its states would pass the limit.
func (d *dynChain) statesError(states float64) error {
	limit, err := chainplan.TableLimit()
	if err != nil {
		return err
	}
	return &chainplan.SizeError{Algo: "offload", Stages: d.n - 1,
		What:      fmt.Sprintf("its states (offloading DP at %d memory units)", d.m),
		NeedBytes: int64(states * dynStateBytes), AtLeast: true, LimitBytes: limit,
		Fix: fmt.Sprintf("use fewer slots (--slots %d; the default is %d) or --algo greedy", max(2, d.m/4), DynProgSlots)}
}
