package pipedream_test

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/internal/pipechains"
	"github.com/chainplan/chainplan/planner/pipedream"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// benchProblem is an 80-layer random chain (the size of the largest shared PipeDream
// profile) on 8 devices, with memory where PipeDream's partition can be scheduled.
var benchProblem = sync.OnceValue(func() *pipeline.Problem {
	rng := rand.New(rand.NewPCG(80, 8))
	pr, err := pipeline.NewProblem(pipechains.Random(rng, 80), pipeplan.Options{GPUs: 8, Bandwidth: 50})
	if err != nil {
		panic(err)
	}
	m, err := pipedream.MinMemory(pr, pipedream.Options{})
	if err != nil {
		panic(err)
	}
	return pr.WithMemory(m)
})

func BenchmarkSolve(b *testing.B) {
	pr := benchProblem()
	for b.Loop() {
		if _, err := pipedream.Solve(pr, pipedream.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMinMemory(b *testing.B) {
	pr := benchProblem()
	for b.Loop() {
		if _, err := pipedream.MinMemory(pr, pipedream.Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
