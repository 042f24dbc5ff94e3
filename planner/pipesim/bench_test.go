package pipesim_test

import (
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/internal/pipechains"
	"github.com/chainplan/chainplan/planner/pipeline"
	"github.com/chainplan/chainplan/planner/pipesim"
)

// benchSetup is an 8-stage pipeline of a random 32-layer chain with links (built once).
var benchSetup = sync.OnceValues(func() (*pipesim.Setup, error) {
	rng := rand.New(rand.NewPCG(25, 99))
	c := pipechains.Random(rng, 32)
	pr, err := pipeline.NewProblem(c, pipeplan.Options{GPUs: 8, Bandwidth: 50})
	if err != nil {
		return nil, err
	}
	var stages []pipeplan.Stage
	for k := range 8 {
		stages = append(stages, pipeplan.Stage{First: 4*k + 1, Last: 4*k + 4, GPU: k})
	}
	return pipesim.NewSetup(pr, stages, pipesim.SetupOptions{Links: true, AlphaS: 1e-3})
})

// BenchmarkSimulate simulates 1,000 mini-batches of 8 micro-batches on 8 stages with links
// (64,000 micro-batches: about 230,000 tasks) under every schedule but periodic; the
// target is under 100 ms each (docs/pipesim.md).
func BenchmarkSimulate(b *testing.B) {
	su, err := benchSetup()
	if err != nil {
		b.Fatal(err)
	}
	for _, sched := range []pipesim.Schedule{pipesim.GPipe, pipesim.OneFOneBFlush, pipesim.PipeDreamAsync, pipesim.TwoBW, pipesim.TiMePReSt} {
		b.Run(string(sched), func(b *testing.B) {
			loop(b, func() error {
				_, err := pipesim.Simulate(su, pipesim.Options{Schedule: sched, Microbatches: 8, Minibatches: 1000})
				return err
			})
		})
	}
	b.Run("periodic", func(b *testing.B) {
		pr := su.Problem().WithMemory(1 << 50)
		T, _ := pipeline.BestPeriod(pr, su.Stages())
		p, err := pipeline.OneFOneBStar(pr, su.Stages(), T)
		if err != nil {
			b.Fatal(err)
		}
		ps, err := pipesim.PlanSetup(pr, p)
		if err != nil {
			b.Fatal(err)
		}
		loop(b, func() error {
			_, err := pipesim.Simulate(ps, pipesim.Options{Schedule: pipesim.Periodic, Microbatches: 8, Minibatches: 1000})
			return err
		})
	})
}

// cpuTime is the process's user and system time so far: on a shared machine the wall
// time per operation grows with the load, the CPU time much less.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loop runs f b.N times and reports the CPU time per run beside the wall time.
func loop(b *testing.B, f func() error) {
	start := cpuTime()
	for b.Loop() {
		if err := f(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N)/1e6, "cpu-ms/op")
}
