package testchains

import (
	"fmt"
	"runtime"

	"github.com/chainplan/chainplan"
)

// LongStages is the length of the chain of issue 33 that crashed the CLI: examples/
// resnet50.json repeated to 40 000 stages, whose rotor tables would need tens of GiB.
const LongStages = 40_000

// Long returns a chain of l stages repeating a residual block of megabyte-sized
// activations (a stand-in for examples/resnet50.json repeated), for the tests that a chain
// too long for a planner is refused before its tables are allocated.
func Long(l int) *chainplan.Chain {
	c := &chainplan.Chain{Format: chainplan.ChainFormat, InputBytes: 12 << 20,
		Loss: chainplan.Loss{FwdTime: 1e-4, BwdTime: 1e-4}}
	c.Stages = make([]chainplan.Stage, l)
	for i := range c.Stages {
		k := int64(i%4 + 1)
		c.Stages[i] = chainplan.Stage{Name: fmt.Sprint("s", i+1), FwdTime: 0.01 * float64(k), BwdTime: 0.02 * float64(k),
			OutBytes: k * 8 << 20, SavedBytes: k * 24 << 20, FwdTmpBytes: 1 << 20, BwdTmpBytes: 2 << 20,
			ParamBytes: k << 20}
	}
	return c
}

// MaxAllocBytes is the allocation bound of those tests: the linear work before a refusal
// (validating, discretizing, replaying the no-recomputation schedule of a 40 000-stage
// chain) takes a few dozen MiB, where the tables refused take GiBs.
const MaxAllocBytes = 256 << 20

// Allocated returns the bytes f allocates (runtime.MemStats.TotalAlloc): the tests that
// call it must not run in parallel with others.
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
