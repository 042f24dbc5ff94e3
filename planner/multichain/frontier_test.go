package multichain

import (
	"math/rand/v2"
	"testing"
)

// TestFrontier: the frontier's makespans fall strictly with the budget, start at H0's
// smallest budget (or the no-recomputation peak when that is smaller) and end at the
// no-recomputation makespan; Solve at each point's budget is at least as fast as the
// point, and H0 alone exactly as fast.
func TestFrontier(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 12))
	n := 60
	if testing.Short() {
		n = 20
	}
	for i := range n {
		mc := randomBundle(rng, 6)
		f, err := SolveFrontier(mc)
		if err != nil {
			t.Fatal(err)
		}
		pts := f.Points
		if len(pts) == 0 || pts[0].BudgetBytes != min(dpMinBudget(mc), storeAllPeak(mc)) {
			t.Fatalf("bundle %d: frontier starts at %v, want H0's smallest budget %d", i, pts, dpMinBudget(mc))
		}
		if last := pts[len(pts)-1]; last.Makespan != mc.SumTime() || last.BudgetBytes > f.StoreAllPeakByte {
			t.Fatalf("bundle %d: frontier ends at %+v, want %v by %d", i, last, mc.SumTime(), f.StoreAllPeakByte)
		}
		for k, p := range pts {
			if k > 0 && !(p.Makespan < pts[k-1].Makespan && p.BudgetBytes > pts[k-1].BudgetBytes) {
				t.Fatalf("bundle %d: point %d %+v does not improve on %+v", i, k, p, pts[k-1])
			}
			best, err := Solve(mc, p.BudgetBytes, Options{})
			if err != nil || best.Makespan > p.Makespan {
				t.Fatalf("bundle %d: Solve at %d: %v, %v; frontier %v", i, p.BudgetBytes, best, err, p.Makespan)
			}
			if p.BudgetBytes < f.StoreAllPeakByte {
				dp, err := Solve(mc, p.BudgetBytes, Options{Method: DP})
				if err != nil || dp.Makespan != p.Makespan {
					t.Fatalf("bundle %d: H0 at %d: %v, %v; frontier %v", i, p.BudgetBytes, dp, err, p.Makespan)
				}
			}
		}
	}
}
