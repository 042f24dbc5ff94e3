package units

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/chainplan/chainplan/planner/internal/testchains"
)

// TestFillCDMatchesRecursion checks the bottom-up fill of C_Δ, whose rows try the split
// points for every Δ at once (fillCDRow), against the recurrence itself: every entry of a
// filled table equals cdCompute on the same state, value and choice, where cdCompute reads
// its sub-chains from the filled table, with the backlogs rounded up or to the nearest
// unit. A fill that dropped a candidate, pruned one that could win or combined terms of
// different states would differ.
func TestFillCDMatchesRecursion(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 5))
	n := 400
	if testing.Short() {
		n = 100
	}
	checked := 0
	for i := 0; i < n; i++ {
		l := 2 + rng.IntN(8)
		c := testchains.Random(rng, l, testchains.RandomOptions{MaxSize: 1 << 20, MaxOverhead: 1 << 18, Float: i%2 == 0})
		peak := int64(Exact(c).StoreAllPeak())
		b := peak/4 + int64(rng.Float64()*float64(peak-peak/4))
		beta := float64(1<<20) * (0.2 + 3*rng.Float64())
		tb := TableForBudget(c, b, int64(10+rng.IntN(30)), beta)
		tb.NearestDelta = i%3 == 1 // POFO's second rounding of the backlogs
		tb.FillCD()
		g := tb.Grid
		for s := 1; s <= tb.C.N; s++ {
			for u := s; u <= tb.C.N; u++ {
				for _, run := range []bool{false, true} {
					p := tb.cdSlab(s, u, run)
					for a := 0; a <= g.M; a++ {
						for j := 0; j < g.W[a]; j++ {
							want := tb.cdCompute(s, u, float64(a), float64(j), run)
							gv, gc := tb.cd.Vals[p][g.Off1[a]+j], tb.cd.Chs[p][g.Off1[a]+j]
							if want.V != gv && !(math.IsInf(want.V, 1) && math.IsInf(gv, 1)) || !math.IsInf(want.V, 1) && want.Ch != gc {
								t.Fatalf("chain %d C_Δ(%d, %d, %d, %d, %v): fill %v/%d, recursion %+v", i, s, u, a, j, run, gv, gc, want)
							}
							checked++
						}
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no state checked")
	}
}
