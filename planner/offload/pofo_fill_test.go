package offload

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/chainplan/chainplan/planner/internal/testchains"
	"github.com/chainplan/chainplan/planner/rotor"
)

// TestFillMatchesRecursion checks the bottom-up fill of OC, whose rows combine the
// separated terms of the candidates (fillAll, fillSegments), against the recurrences
// themselves: every entry of a filled table equals ocCompute on the same state, value and
// choice, where it reads its successors from the filled table, with the backlogs rounded
// up or to the nearest unit. A fill that dropped a candidate, pruned one that could win or
// combined terms of different states would differ. units' TestFillCDMatchesRecursion
// checks C_Δ likewise.
func TestFillMatchesRecursion(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 5))
	checked := 0
	for i := 0; i < randomCount()/20; i++ {
		l := 2 + rng.IntN(8)
		c := testchains.Random(rng, l, testchains.RandomOptions{MaxSize: 1 << 20, MaxOverhead: 1 << 18, Float: i%2 == 0})
		peak, low := rotor.StoreAllPeak(c), LowBudget(c)
		b := low + int64(rng.Float64()*float64(peak-low))
		beta := float64(1<<20) * (0.2 + 3*rng.Float64())
		slots := int64(10 + rng.IntN(30))
		tb := pofoTable(c, b, slots, beta, i%7 == 3)
		tb.NearestDelta = i%3 == 1 // SolvePOFO's second rounding of the backlogs
		tb.fill()
		g := tb.Grid
		for p, vals := range tb.oc.Vals {
			if vals == nil {
				continue
			}
			xr, s := p/(tb.C.N+1), p%(tb.C.N+1)
			for a := 0; a <= g.M; a++ {
				for f := 0; f < g.W[a]; f++ {
					for bb := 0; bb < g.W[a]; bb++ {
						st := ocState{x: xr / 2, run: xr%2 == 1, s: s, a: float64(a), dF: float64(f), dB: float64(bb)}
						j := g.Off2[a] + f*g.W[a] + bb
						want := tb.ocCompute(st)
						got := ocEntry{V: vals[j], Ch: tb.oc.Chs[p][j]}
						if want.V != got.V && !(math.IsInf(want.V, 1) && math.IsInf(got.V, 1)) || !math.IsInf(want.V, 1) && want.Ch != got.Ch {
							t.Fatalf("chain %d state %+v: fill %+v, recursion %+v", i, st, got, want)
						}
						checked++
					}
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no state checked")
	}
}
