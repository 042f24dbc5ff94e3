package main

import (
	"fmt"
	"math/rand/v2"

	"github.com/chainplan/chainplan"
)

// randomChain returns the chain of BenchmarkPOFO in planner/offload/pofo_bench_test.go: the draw of
// testchains.Random (planner/internal/testchains, which this command cannot import) with
// seed (l, 42), sizes up to 64 MiB, overheads up to 8 MiB and fractional times, and a
// bandwidth that moves the mean saved activation in about the mean forward time.
func randomChain(l int) (*chainplan.Chain, float64) {
	rng := rand.New(rand.NewPCG(uint64(l), 42))
	const maxSize, maxOverhead, maxTime = int64(64 << 20), int64(8 << 20), 5
	t := func() float64 { return rng.Float64() * maxTime }
	sz := func(m int64) int64 { return rng.Int64N(m + 1) }
	c := &chainplan.Chain{Format: chainplan.ChainFormat, InputBytes: 1 + sz(maxSize-1)}
	for i := 1; i <= l; i++ {
		a := 1 + sz(maxSize-1)
		abar := a + sz(maxSize-a)
		c.Stages = append(c.Stages, chainplan.Stage{Name: fmt.Sprintf("s%d", i), FwdTime: t(), BwdTime: t(),
			OutBytes: a, SavedBytes: abar, FwdTmpBytes: sz(maxOverhead), BwdTmpBytes: sz(maxOverhead)})
	}
	c.Loss = chainplan.Loss{FwdTime: t(), BwdTime: t(), FwdTmpBytes: sz(maxOverhead), BwdTmpBytes: sz(maxOverhead)}
	var bytes, secs float64
	for _, s := range c.Stages {
		bytes += float64(s.SavedBytes)
		secs += s.FwdTime
	}
	return c, bytes / secs
}
