package multichain

import (
	"fmt"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/testchains"
)

// benchBundle joins the seeded random chains of testchains.Bench of the given lengths
// (megabyte-sized activations, fractional times), the first one's loss the joint loss, and
// returns a budget halfway between the smallest feasible one and the no-recomputation
// peak, where every candidate recomputes.
func benchBundle(b *testing.B, lens ...int) (*chainplan.MultiChain, int64) {
	mc := &chainplan.MultiChain{Format: chainplan.MultiChainFormat}
	for i, l := range lens {
		c, _ := testchains.Bench(l + 100*i) // distinct towers of l stages
		c.Stages = c.Stages[:l]
		if i == 0 {
			mc.Loss = c.Loss
		}
		c.Loss = chainplan.Loss{}
		mc.Branches = append(mc.Branches, *c)
	}
	lo, err := MinBudget(mc, Options{})
	if err != nil {
		b.Fatal(err)
	}
	return mc, (lo + storeAllPeak(mc)) / 2
}

// BenchmarkSolve measures Solve with each method on the towers of issue 24's target: K = 2
// of 24 and 12 stages, K = 3 of 16 each. Target: under 1 s each for Best (the dynamic
// program, rotor at 500 slots on every concatenation order, and the replays).
func BenchmarkSolve(b *testing.B) {
	for _, lens := range [][]int{{24, 12}, {16, 16, 16}} {
		for _, m := range []struct {
			name string
			m    Method
		}{{"best", Best}, {"dp", DP}, {"linear", Linear}} {
			b.Run(fmt.Sprintf("towers=%v/%s", lens, m.name), func(b *testing.B) {
				mc, budget := benchBundle(b, lens...)
				b.ResetTimer()
				for range b.N {
					if _, err := Solve(mc, budget, Options{Method: m.m}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkFrontier measures the dynamic program's frontier (one table at K+ΣL slots).
func BenchmarkFrontier(b *testing.B) {
	for _, lens := range [][]int{{24, 12}, {16, 16, 16}, {30, 30, 30}} {
		b.Run(fmt.Sprintf("towers=%v", lens), func(b *testing.B) {
			mc, _ := benchBundle(b, lens...)
			b.ResetTimer()
			for range b.N {
				if _, err := SolveFrontier(mc); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
