package contiguous_test

import (
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/internal/pipechains"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// benchProblem is an 80-layer random chain (the size of the largest shared PipeDream
// profile, densenet121 with 77 layers) on 8 devices, with 1.2 times the smallest memory.
var benchProblem = sync.OnceValue(func() *pipeline.Problem {
	rng := rand.New(rand.NewPCG(80, 8))
	pr, err := pipeline.NewProblem(pipechains.Random(rng, 80), pipeplan.Options{GPUs: 8, Bandwidth: 50})
	if err != nil {
		panic(err)
	}
	m, _ := contiguous.MinMemory(pr)
	return pr.WithMemory(m * 6 / 5)
})

func BenchmarkSolve(b *testing.B) {
	pr := benchProblem()
	for b.Loop() {
		if _, err := contiguous.Solve(pr); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMinMemory(b *testing.B) {
	pr := benchProblem()
	for b.Loop() {
		contiguous.MinMemory(pr)
	}
}
