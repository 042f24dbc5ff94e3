package testchains

import (
	"math/rand/v2"

	"github.com/chainplan/chainplan"
)

// Bench returns the seeded random chain of the offloading benchmarks (pofo's BenchmarkPOFO,
// offload's BenchmarkOffload; bench/pofo draws the same chain by hand): l stages with megabyte-sized
// activations and fractional times, and a bandwidth in bytes per time unit that moves the
// mean saved activation in about the mean forward time.
func Bench(l int) (*chainplan.Chain, float64) {
	rng := rand.New(rand.NewPCG(uint64(l), 42))
	c := Random(rng, l, RandomOptions{MaxSize: 64 << 20, MaxOverhead: 8 << 20, Float: true})
	var bytes, secs float64
	for _, s := range c.Stages {
		bytes += float64(s.SavedBytes)
		secs += s.FwdTime
	}
	return c, bytes / secs
}
