package contiguous_test

import (
	"fmt"

	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/internal/pipechains"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// Spec §2.10 E3: four layers of unit forward and backward time and unit activations on two
// devices of 5 bytes. Balanced halves would run at period 4 but would keep two
// mini-batches of activations on the first device; the memory allows {1},{2,3,4}, whose
// first stage keeps two mini-batches (its 1F1B* group) and the second one. The smallest
// memory of any contiguous plan is 4 bytes: all four layers on one device.
func ExampleSolve() {
	one := []float64{1, 1, 1, 1}
	c := pipechains.Chain(one, one, nil, []int64{1, 1, 1, 1, 1})
	pr, err := pipeline.NewProblem(c, pipeplan.Options{GPUs: 2, MemoryBytes: 5, Bandwidth: 1e6,
		ActivationModel: pipeplan.ActivationsInput, NoTemporaries: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := contiguous.Solve(pr)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("period", p.Period)
	for k, s := range p.Stages {
		fmt.Printf("stage %d: layers %d-%d on gpu %d, %d bytes\n", k, s.First, s.Last, s.GPU, p.MemoryPerGPU[s.GPU])
	}
	m, _ := contiguous.MinMemory(pr)
	_, err = contiguous.Solve(pr.WithMemory(m - 1))
	fmt.Println(err)
	// Output:
	// period 6
	// stage 0: layers 1-1 on gpu 0, 4 bytes
	// stage 1: layers 2-4 on gpu 1, 5 bytes
	// contiguous: no plan fits 3 B per device; the smallest memory per device that fits is 4 B
}
