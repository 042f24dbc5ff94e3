package pofo

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/testchains"
)

// benchChain returns a seeded random chain of l stages with megabyte-sized activations,
// a budget at α = 0.5 between LowBudget and the store-all peak (spec §6.4), and a bandwidth
// that moves the mean saved activation in about the mean forward time.
func benchChain(l int) (*chainplan.Chain, int64, float64) {
	rng := rand.New(rand.NewPCG(uint64(l), 42))
	c := testchains.Random(rng, l, testchains.RandomOptions{MaxSize: 64 << 20, MaxOverhead: 8 << 20, Float: true})
	var bytes, secs float64
	for _, s := range c.Stages {
		bytes += float64(s.SavedBytes)
		secs += s.FwdTime
	}
	return c, (LowBudget(c) + StoreAllPeak(c)) / 2, bytes / secs
}

// BenchmarkPOFO measures Solve (table, reconstruction, replay in both memory models) at the
// default discretization. Target on the 2-core reference machine: 50 stages under 5 s; the
// thesis reports seconds to a few minutes (spec §6.5, C4-10).
func BenchmarkPOFO(b *testing.B) {
	for _, l := range []int{50, 100} {
		b.Run(fmt.Sprintf("stages=%d", l), func(b *testing.B) {
			c, budget, beta := benchChain(l)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := Solve(c, budget, Options{BandwidthBytesPerS: beta}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkOffload measures DYNPROG (SolveOffload) at its default 500 slots.
func BenchmarkOffload(b *testing.B) {
	for _, l := range []int{50, 100} {
		b.Run(fmt.Sprintf("stages=%d", l), func(b *testing.B) {
			c, budget, beta := benchChain(l)
			budget = max(budget, int64(offloadNeed(exactChain(c)))+1)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := SolveOffload(c, budget, Options{BandwidthBytesPerS: beta}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
