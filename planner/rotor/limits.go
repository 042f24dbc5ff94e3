package rotor

import (
	"fmt"
	"math"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/baseline"
	"github.com/chainplan/chainplan/planner/internal/discretize"
)

// The sizes of the persistent DP's tables, which every solver of this package checks
// against chainplan.TableLimit before it allocates them (docs/rotor.md, "Limits"). Both
// grow with the square of the chain's length: a 40 000-stage chain needs 24 GiB for the
// feasibility table alone, whatever the slots.

// needTableBytes is the memory of minMemory's table for n stages (the loss included): two
// planes of (n+1)² int64.
func needTableBytes(n int) float64 {
	return 2 * 8 * float64(n+1) * float64(n+1)
}

// tableShape returns the rows (sub-chains, the pinned plane's included) and the columns
// (budgets 0..m and the padding of the credits) of the persistent table of dc for budgets
// up to m units.
func tableShape(dc *discretize.Chain, m int64) (rows int, cols int64) {
	n := dc.N
	rows = n * (n + 1) / 2
	for s := 1; s <= n; s++ {
		if dc.Pinnable(s) {
			rows += n - s + 1
		}
	}
	if m < 0 {
		return rows, 0
	}
	return rows, m + 1 + tablePad(dc)
}

// tablePad is the room the credits of F_all can add to a sub-chain's budget (buildTable).
func tablePad(dc *discretize.Chain) int64 {
	var pad int64
	for s := 1; s <= dc.N; s++ {
		pad += max(0, -held(dc, s, 0, 0))
	}
	return pad
}

// tableBytes is the memory of a persistent table of rows sub-chains and cols budgets: one
// float64 value and one int16 choice per entry.
func tableBytes(rows int, cols int64) float64 {
	return float64(rows) * float64(cols) * 10
}

// needs is how many feasibility tables live at once: a search for the smallest budget
// keeps the one of its best budget while it computes the next.
const (
	oneNeed    = 1
	searchNeed = 2
)

// checkTables refuses (a *chainplan.SizeError) a request whose feasibility tables (needs
// of them) and, when m ≥ 0, persistent table for budgets 0..m would pass
// chainplan.TableLimit. It runs before either is allocated.
func checkTables(dc *discretize.Chain, needs int, m int64, opts Options) error {
	n := dc.N
	need := float64(needs) * needTableBytes(n)
	rows, cols := tableShape(dc, m)
	total := need + tableBytes(rows, cols)
	what := fmt.Sprintf("its feasibility table (%d×%d sub-chains)", n, n)
	if needs > 1 {
		what = fmt.Sprintf("the search for its smallest budget (%d feasibility tables of %d×%d sub-chains)", needs, n, n)
	}
	if m >= 0 {
		what = fmt.Sprintf("its tables (%d sub-chains × %d budgets, and the feasibility table)", rows, cols)
	}
	return chainplan.CheckTables(opts.algo(), n-1, what, total, func(limit int64) string {
		if m >= 0 && opts.Slots >= 0 {
			// The largest budget in units that fits beside the feasibility tables; with S
			// slots a budget is at most about S units.
			top := (float64(limit)-need)/(float64(rows)*10) - 1 - float64(tablePad(dc))
			if top >= 2 {
				return fmt.Sprintf("use --slots %d or fewer (a coarser memory grid)", int64(math.Min(top, math.MaxInt32)))
			}
		}
		if opts.Slots < 0 && need < float64(limit) {
			return "use a number of slots instead of exact bytes (--slots 500)"
		}
		return "no slot count fits, since the tables grow with the square of the chain's length; " + baseline.Fallback(n-1)
	})
}
