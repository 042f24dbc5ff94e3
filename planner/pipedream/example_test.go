package pipedream_test

import (
	"fmt"

	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/internal/pipechains"
	"github.com/chainplan/chainplan/planner/pipedream"
	"github.com/chainplan/chainplan/planner/pipeline"
)

// Eight equal layers on four devices with tight memory: PipeDream's estimate admits the
// balanced partition and predicts period 6, but 1F1B* must keep more mini-batches in
// flight than the devices hold at that period (the transfers count as pseudo-stages), so
// the partition runs at 22; the best contiguous plan, which sizes stages for memory, at 16.
func ExampleSolve() {
	uF := []float64{1, 1, 1, 1, 1, 1, 1, 1}
	uB := []float64{2, 2, 2, 2, 2, 2, 2, 2}
	a := []int64{8, 8, 8, 8, 8, 8, 8, 8, 8}
	c := pipechains.Chain(uF, uB, nil, a)
	pr, err := pipeline.NewProblem(c, pipeplan.Options{GPUs: 4, MemoryBytes: 48, Bandwidth: 8,
		ActivationModel: pipeplan.ActivationsInput, NoTemporaries: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := pipedream.Solve(pr, pipedream.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	best, err := contiguous.Solve(pr)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("pipedream: predicted %g, period %g, stages %v\n", p.PredictedPeriod, p.Period, p.Stages)
	fmt.Printf("contiguous: period %g, stages %v\n", best.Period, best.Stages)
	// Output:
	// pipedream: predicted 6, period 22, stages [{1 2 0} {3 4 1} {5 6 2} {7 8 3}]
	// contiguous: period 16, stages [{1 2 0} {3 3 1} {4 4 2} {5 8 3}]
}
