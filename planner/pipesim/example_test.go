package pipesim_test

import (
	"fmt"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/pipeline"
	"github.com/chainplan/chainplan/planner/pipesim"
)

// The spec's example of §5.4 S-3: two stages with f = [1, 3], b = [3, 1] and 4
// micro-batches. GPipe takes 26, between AMP's Eq. 5 (20) and ParaDL's Eq. 12 (30); 1F1B
// with a flush reaches AMP's 20 here (Eq. 5 is the usual 1F1B approximation) and holds
// fewer micro-batches on the first stage.
func Example() {
	c := &chainplan.Chain{Format: chainplan.ChainFormat, Stages: []chainplan.Stage{
		{FwdTime: 1, BwdTime: 3}, {FwdTime: 3, BwdTime: 1}}}
	pr, err := pipeline.NewProblem(c, pipeplan.Options{GPUs: 2, Bandwidth: 1})
	if err != nil {
		panic(err)
	}
	su, err := pipesim.NewSetup(pr, []pipeplan.Stage{{First: 1, Last: 1, GPU: 0}, {First: 2, Last: 2, GPU: 1}}, pipesim.SetupOptions{})
	if err != nil {
		panic(err)
	}
	for _, s := range []pipesim.Schedule{pipesim.GPipe, pipesim.OneFOneBFlush} {
		r, err := pipesim.Simulate(su, pipesim.Options{Schedule: s, Microbatches: 4, Minibatches: 1})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: makespan %g, %d micro-batches in flight on stage 0\n", s, r.Makespan, r.PerStage[0].PeakInflight)
	}
	f, b := []float64{1, 3}, []float64{3, 1}
	fmt.Println("AMP", pipesim.AMPMakespan(f, b, 4), "ParaDL", pipesim.ParaDLMakespan(f, b, 4))
	// Output:
	// gpipe: makespan 26, 4 micro-batches in flight on stage 0
	// 1f1b-flush: makespan 20, 2 micro-batches in flight on stage 0
	// AMP 20 ParaDL 30
}
