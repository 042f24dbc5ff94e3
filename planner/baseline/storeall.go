package baseline

import (
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
	"github.com/chainplan/chainplan/planner/simulate"
)

// StoreAll returns PyTorch's default schedule, F_all 1..L+1 then B L+1..1, if its peak
// fits budgetBytes, and otherwise an *chainplan.InfeasibleError whose smallest feasible
// budget is that peak (spec §4.4, M_peak).
func StoreAll(c *chainplan.Chain, budgetBytes int64) (*chainplan.Plan, error) {
	start := time.Now()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	seq := chainplan.StoreAllSequence(c.Len())
	rep := simulate.Run(discretize.Exact(c), seq, -1)
	if rep.Peak > budgetBytes {
		return nil, &chainplan.InfeasibleError{Algo: "store-all", BudgetBytes: budgetBytes, MinBudgetBytes: rep.Peak}
	}
	return &chainplan.Plan{
		Algo: "store-all", Feasible: true, Makespan: rep.Makespan, PeakBytes: rep.Peak,
		BudgetBytes: budgetBytes, SolveMS: float64(time.Since(start).Microseconds()) / 1000, Sequence: seq,
	}, nil
}
