package pofo

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/chainplan/chainplan/planner/internal/testchains"
)

// TestFillMatchesRecursion checks the bottom-up fill, whose rows combine the separated
// terms of the candidates (fillAll, fillSegments, fillCDRow), against the recurrences
// themselves: every entry of a filled table equals ocCompute or cdCompute on the same
// state, value and choice, where these read their successors from the filled table, with
// the backlogs rounded up or to the nearest unit. A fill that dropped a candidate,
// pruned one that could win or combined terms of different states would differ.
func TestFillMatchesRecursion(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 5))
	checked := 0
	for i := 0; i < randomCount()/20; i++ {
		l := 2 + rng.IntN(8)
		c := testchains.Random(rng, l, testchains.RandomOptions{MaxSize: 1 << 20, MaxOverhead: 1 << 18, Float: i%2 == 0})
		peak, low := StoreAllPeak(c), LowBudget(c)
		b := low + int64(rng.Float64()*float64(peak-low))
		beta := float64(1<<20) * (0.2 + 3*rng.Float64())
		slots := int64(10 + rng.IntN(30))
		tb := pofoTable(c, b, slots, beta, i%7 == 3)
		tb.nearestDelta = i%3 == 1 // Solve's second rounding of the backlogs
		tb.fill()
		cg := tb.cd.g
		for s := 1; s <= tb.c.n; s++ {
			for u := s; u <= tb.c.n; u++ {
				for _, run := range []bool{false, true} {
					p := tb.cd.slab(s, u, run)
					for a := 0; a <= cg.m; a++ {
						for j := 0; j < cg.w[a]; j++ {
							want := tb.cdCompute(s, u, float64(a), float64(j), run)
							gv, gc := tb.cd.vals[p][cg.off1[a]+j], int32(tb.cd.chs[p][cg.off1[a]+j])
							if want.v != gv && !(math.IsInf(want.v, 1) && math.IsInf(gv, 1)) || !math.IsInf(want.v, 1) && want.ch != gc {
								t.Fatalf("chain %d C_Δ(%d, %d, %d, %d, %v): fill %v/%d, recursion %+v", i, s, u, a, j, run, gv, gc, want)
							}
							checked++
						}
					}
				}
			}
		}
		g := tb.oc.g
		for p, vals := range tb.oc.vals {
			if vals == nil {
				continue
			}
			xr, s := p/(tb.c.n+1), p%(tb.c.n+1)
			for a := 0; a <= g.m; a++ {
				for f := 0; f < g.w[a]; f++ {
					for bb := 0; bb < g.w[a]; bb++ {
						st := ocState{x: xr / 2, run: xr%2 == 1, s: s, a: float64(a), dF: float64(f), dB: float64(bb)}
						j := g.off2[a] + f*g.w[a] + bb
						want := tb.ocCompute(st)
						got := ocEntry{v: vals[j], ch: tb.oc.chs[p][j]}
						if want.v != got.v && !(math.IsInf(want.v, 1) && math.IsInf(got.v, 1)) || !math.IsInf(want.v, 1) && want.ch != got.ch {
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
