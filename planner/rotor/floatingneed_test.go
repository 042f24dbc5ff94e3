package rotor

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/chainplan/chainplan/planner/internal/discretize"
	"github.com/chainplan/chainplan/planner/internal/testchains"
)

// TestFloatingNeedMatchesTable checks floatingNeed against the floating table itself: on
// random chains and units, every row C_FL(s, t, ℓ, ·) is infinite below the row's need
// and finite from it on.
func TestFloatingNeedMatchesTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 3))
	for i := range 300 {
		c := testchains.Random(rng, 1+rng.IntN(5), testchains.RandomOptions{MaxSize: 12})
		dc := discretize.WithUnit(c, 1+rng.Int64N(3))
		const m = 80
		tb := newFloatingTable(dc, m)
		tb.fill()
		n := dc.N
		key := func(s, l, t int) int { return (s*(n+1)+l)*(n+1) + t }
		need := make([]int64, (n+1)*(n+1)*(n+1))
		at := func(s, l, t int) int64 { return need[key(s, l, t)] }
		for d := 0; d < n; d++ {
			for s := 1; s+d <= n; s++ {
				for l := s; l <= s+d; l++ {
					want := floatingRowNeed(dc, s, l, s+d, at)
					need[key(s, l, s+d)] = want
					for b, v := range tb.at(s, l, s+d) {
						if finite := !math.IsInf(v, 1); finite != (int64(b) >= want) {
							t.Fatalf("chain %d unit %d: C(%d,%d,%d,%d) = %v, but the need is %d", i, dc.Unit, s, s+d, l, b, v, want)
						}
					}
				}
			}
		}
		if got := floatingNeed(dc); got != at(1, 1, n) || got > m {
			t.Fatalf("chain %d: floatingNeed = %d, rows say %d (table up to %d)", i, got, at(1, 1, n), m)
		}
	}
}
