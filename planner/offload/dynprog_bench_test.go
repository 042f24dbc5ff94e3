package offload

import (
	"fmt"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/testchains"
	"github.com/chainplan/chainplan/planner/offload/internal/units"
	"github.com/chainplan/chainplan/planner/rotor"
)

// benchChain returns the chain and bandwidth of testchains.Bench and a budget at α = 0.5
// between LowBudget and the store-all peak (spec §6.4).
func benchChain(l int) (*chainplan.Chain, int64, float64) {
	c, beta := testchains.Bench(l)
	return c, (LowBudget(c) + rotor.StoreAllPeak(c)) / 2, beta
}

// BenchmarkOffload measures DYNPROG (SolveDynProg) at its default 500 slots on the chains of
// BenchmarkPOFO.
func BenchmarkOffload(b *testing.B) {
	for _, l := range []int{50, 100} {
		b.Run(fmt.Sprintf("stages=%d", l), func(b *testing.B) {
			c, budget, beta := benchChain(l)
			budget = max(budget, int64(offloadNeed(units.Exact(c)))+1)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := SolveDynProg(c, budget, Options{BandwidthBytesPerS: beta}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
