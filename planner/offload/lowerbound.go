package offload

import (
	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/offload/internal/units"
)

// LowerBound returns the lower bound of Proposition 3 (spec §3.1) on the makespan of any
// schedule without recomputation within budgetBytes at bandwidth β (bytes per time unit):
//
//	LB = max( Σ_{ℓ=1}^{L+1} (u_F(ℓ)+u_B(ℓ)), 2·(M_peak − M)/β ),
//
// since at least M_peak − M bytes must be offloaded (Prop. 2) and each of them crosses the
// link twice. The thesis prints the second term as a power of two; the proof says twice
// (spec §8, L1672). The chain is assumed valid.
func LowerBound(c *chainplan.Chain, budgetBytes int64, beta float64) float64 {
	ex := units.Exact(c)
	return lowerBound(ex, float64(budgetBytes), beta)
}

func lowerBound(c *units.Chain, m, beta float64) float64 {
	return max(c.SumTime(), 2*(c.StoreAllPeak()-m)/beta)
}
