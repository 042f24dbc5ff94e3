package rotor

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
	"github.com/chainplan/chainplan/planner/internal/testchains"
)

// benchChain returns a seeded random chain of l stages with megabyte-sized activations and
// a budget halfway between its smallest feasible budget and its store-all peak, so the DP
// works on a full 500-slot table and the answer recomputes.
func benchChain(b *testing.B, l int) (*chainplan.Chain, int64) {
	rng := rand.New(rand.NewPCG(uint64(l), 42))
	c := testchains.Random(rng, l, testchains.RandomOptions{MaxSize: 64 << 20, MaxOverhead: 8 << 20, Float: true})
	lo, err := MinBudget(c, Options{})
	if err != nil {
		b.Fatal(err)
	}
	return c, (lo + StoreAllPeak(c)) / 2
}

// BenchmarkSolve measures Solve (table, backtrack and replay) at 500 slots. Targets on the
// 2-core reference machine: 100 stages ≤ 150 ms, 339 stages ≤ 5 s.
func BenchmarkSolve(b *testing.B) {
	for _, l := range []int{50, 100, 200, 339} {
		b.Run(fmt.Sprintf("stages=%d/slots=500", l), func(b *testing.B) {
			c, budget := benchChain(b, l)
			dc := discretize.ForBudget(c, budget, DefaultSlots)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := Solve(c, budget, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(tableBytes(dc.N, dc.Units(budget)-dc.A[0])/(1<<20), "table-MiB")
		})
	}
}

// BenchmarkMinBudget measures the table-free smallest-budget search at 500 slots.
func BenchmarkMinBudget(b *testing.B) {
	for _, l := range []int{100, 339} {
		b.Run(fmt.Sprintf("stages=%d", l), func(b *testing.B) {
			c, _ := benchChain(b, l)
			for i := 0; i < b.N; i++ {
				if _, err := MinBudget(c, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
