package offload

import (
	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/offload/internal/units"
)

// LowBudget returns M^low of pofo spec §6.4 in bytes: the peak of the sequence that keeps
// only a_0 and recomputes everything from the start before each backward,
//
//	F_1^ck F_2^∅ … F_L^∅ F_{L+1}^all B_{L+1}, then for ℓ = L..1: F_1^ck F_2^∅ … F_{ℓ−1}^∅ F_ℓ^all B_ℓ.
//
// The thesis sweeps budgets between LowBudget and the store-all peak M_peak
// (rotor.StoreAllPeak: the simulator's, which units.Chain.StoreAllPeak equals).
func LowBudget(c *chainplan.Chain) int64 {
	l := c.Len()
	var seq []chainplan.Op
	prefix := func(upto int) {
		for k := 1; k < upto; k++ {
			kind := chainplan.FNone
			if k == 1 {
				kind = chainplan.FCk
			}
			seq = append(seq, chainplan.Op{Kind: kind, Stage: k})
		}
	}
	for s := l + 1; s >= 1; s-- {
		prefix(s)
		seq = append(seq, chainplan.Op{Kind: chainplan.FAll, Stage: s}, chainplan.Op{Kind: chainplan.B, Stage: s})
	}
	return int64(Analyze(units.Exact(c), Schedule{Compute: seq}).PeakNoTransfer())
}
