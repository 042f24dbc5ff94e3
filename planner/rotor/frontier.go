package rotor

import (
	"math"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
)

// FrontierPoint is one step of the budget-versus-makespan trade-off: from BudgetBytes on
// (up to the next point's budget) the optimal makespan is Makespan.
type FrontierPoint struct {
	BudgetBytes int64   `json:"budget_bytes"`
	Makespan    float64 `json:"makespan"`
	// Overhead is Makespan / Σ(u_F+u_B) − 1: the share of time spent recomputing.
	Overhead float64 `json:"overhead"`
}

// Frontier is the whole trade-off of a chain, from its smallest feasible budget to the
// peak of the no-recomputation schedule.
type Frontier struct {
	Algo             string          `json:"algo"`
	Slots            int64           `json:"slots"`
	UnitBytes        int64           `json:"unit_bytes"`
	SumTime          float64         `json:"sum_time"`
	StoreAllPeakByte int64           `json:"store_all_peak_bytes"`
	Points           []FrontierPoint `json:"points"`
	SolveMS          float64         `json:"solve_ms"`
}

// SolveFrontier computes the optimal makespan at every budget from one DP run: the table
// built for the store-all peak holds C(1, N, m) for every smaller budget m too, and the
// frontier is every m where that value drops (by more than float rounding). The unit is
// the one of the store-all peak (peak/S), so all points share one discretization. A Solve
// at a point's budget with S slots uses that budget's own, finer unit, and its sizes round
// differently, so its makespan may differ either way; Solve with budget/unit slots uses the
// frontier's unit and finds the point's makespan. The last point is the store-all peak,
// where no recomputation is needed (Solve returns that schedule in exact bytes).
//
// The cost is that of one Solve at the store-all peak.
func SolveFrontier(c *chainplan.Chain, opts Options) (*Frontier, error) {
	start := time.Now()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	peak := StoreAllPeak(c)
	slots := opts.slots(peak)
	dc := discretize.ForBudget(c, peak, slots)
	top := dc.Units(peak) - dc.A[0]
	if err := checkTables(dc, oneNeed, top, opts); err != nil {
		return nil, err
	}
	need, err := minMemory(dc, opts.variant())
	if err != nil {
		return nil, err
	}
	if opts.Revolve {
		// Sizes rounded up to the peak's unit may need a few units more than the rounded-down
		// peak; revolve has no exact-bytes store-all schedule to fall back on, so its
		// frontier starts at its first feasible budget on this grid even above the peak.
		top = max(top, need.at(1, dc.N, 0))
	}
	f := &Frontier{Algo: opts.algo(), Slots: slots, UnitBytes: dc.Unit, SumTime: c.SumTime(), StoreAllPeakByte: peak}
	tb, err := buildTable(dc, need, top, opts)
	if err != nil {
		return nil, err
	}
	prev := math.Inf(1)
	for m := max(0, tb.need.at(1, dc.N, 0)); m <= top; m++ {
		v := tb.value(1, dc.N, 0, m)
		if drops(v, prev) {
			f.Points = append(f.Points, f.point(dc.Bytes(m+dc.A[0]), v))
			prev = v
		}
	}
	if !opts.Revolve {
		f.Points = endAtStoreAll(f.Points, f, peak)
	}
	f.SolveMS = msSince(start)
	return f, nil
}

// endAtStoreAll makes rotor's frontier end at (peak, Σ): without recomputation the makespan
// is exactly SumTime and Solve accepts the store-all peak in exact bytes, even where the
// sizes rounded up to the peak's unit do not fit in it (then the grid has no point at all,
// or only slower ones). A last point within rounding of Σ takes the exact value instead of
// being followed by a second point one ulp faster.
func endAtStoreAll(points []FrontierPoint, f *Frontier, peak int64) []FrontierPoint {
	for n := len(points); n > 0 && points[n-1].BudgetBytes >= peak; n = len(points) {
		points = points[:n-1]
	}
	if n := len(points); n > 0 && !drops(f.SumTime, points[n-1].Makespan) {
		points[n-1] = f.point(points[n-1].BudgetBytes, f.SumTime)
		return points
	}
	return append(points, f.point(peak, f.SumTime))
}

// drops reports whether makespan v improves on prev by more than float rounding: with
// fractional times two sums of the same operations in another order may differ in the last
// bits, and such a difference is no step of the frontier.
func drops(v, prev float64) bool {
	return v < prev*(1-1e-12)
}

func (f *Frontier) point(budget int64, makespan float64) FrontierPoint {
	over := 0.0
	if f.SumTime > 0 {
		over = makespan/f.SumTime - 1
	}
	return FrontierPoint{BudgetBytes: budget, Makespan: makespan, Overhead: over}
}
