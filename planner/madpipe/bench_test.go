package madpipe

import (
	"testing"

	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/contiguous"
)

// BenchmarkSolve plans the largest shared profile, densenet121 (77 layers), on 8 devices
// at 1.5× the smallest contiguous memory, β = 12 GB/s: phase 1, phase 2 and the
// contiguous plan (`make bench`).
func BenchmarkSolve(b *testing.B) {
	pr := mustProblem(b, profile(b, "densenet121"), pipeplan.Options{GPUs: 8, Bandwidth: 12e9})
	need, err := contiguous.MinMemory(pr)
	if err != nil {
		b.Fatal(err)
	}
	pr = pr.WithMemory(need * 3 / 2)
	for b.Loop() {
		if _, err := Solve(pr, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPhase1 is Algorithm 1 alone on the same instance.
func BenchmarkPhase1(b *testing.B) {
	pr := mustProblem(b, profile(b, "densenet121"), pipeplan.Options{GPUs: 8, Bandwidth: 12e9})
	need, err := contiguous.MinMemory(pr)
	if err != nil {
		b.Fatal(err)
	}
	pr = pr.WithMemory(need * 3 / 2)
	for b.Loop() {
		if its, err := phase1(pr, false); err != nil || len(its) == 0 {
			b.Fatal("no allocation", err)
		}
	}
}
