package pipesim_test

import (
	"testing"

	"github.com/chainplan/chainplan/planner/pipesim"
)

// FuzzSimulate decodes a small case from the fuzzer's bytes (schedule, stages, durations,
// sizes, links, checkpointed stages, N, K, cap) and compares the engine with the naive
// simulation of oracle_test.go, as TestAgainstNaive does on seeded cases.
func FuzzSimulate(f *testing.F) {
	f.Add([]byte{0, 3, 2, 2, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{4, 4, 2, 6, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1})
	f.Add([]byte{3, 2, 4, 3, 1, 2, 5, 1, 3, 0, 2, 9, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		if testing.Short() {
			t.Skip("fuzzing runs in make fuzz")
		}
		next := func(mod int) int {
			if len(data) == 0 {
				return 0
			}
			v := int(data[0])
			data = data[1:]
			return v % mod
		}
		scheds := []pipesim.Schedule{pipesim.GPipe, pipesim.OneFOneBFlush, pipesim.PipeDreamAsync, pipesim.TwoBW, pipesim.TiMePReSt}
		c := ocase{sched: scheds[next(len(scheds))]}
		s := 1 + next(4)
		c.n, c.k, c.links = 1+next(4), 1+next(4), next(2) == 1
		if c.sched == pipesim.TwoBW {
			c.n = max(c.n, s-1)
		}
		if c.sched == pipesim.TiMePReSt {
			c.cap_ = next(3)
		}
		c.a = []int64{int64(next(4))}
		for range s {
			c.f = append(c.f, 1+next(4))
			c.b = append(c.b, 1+next(5))
			c.a = append(c.a, int64(next(4)))
			c.w = append(c.w, int64(next(50)))
			c.ckpt = append(c.ckpt, next(4) == 0)
		}
		compareWithNaive(t, "fuzz", c)
	})
}
