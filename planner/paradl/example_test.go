package paradl_test

import (
	"fmt"

	golden "github.com/chainplan/chainplan/internal/paradlgolden"
	"github.com/chainplan/chainplan/planner/cluster"
	"github.com/chainplan/chainplan/planner/paradl"
)

// The toy model of spec §2.11 C on one node of four devices (α = 10 µs, 10 GB/s): filter
// parallelism computes fastest but its layer-wise collectives cost more than they save;
// data parallelism wins.
func ExampleAdvise() {
	c, err := cluster.Parse([]byte(`name: node
nodes: [{gpu: X, gpus: 4, gpu_mem: 1TB, intra_bw: 10GB/s}]
latency: {intra_s: 1e-5}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	a, err := paradl.Advise(golden.ToyModel(), c, paradl.Options{DatasetSize: 51200, GlobalBatch: 256, Devices: []int{4},
		Strategies: []paradl.Strategy{paradl.Data, paradl.Filter, paradl.Channel}, Gamma: 1, Optimizer: paradl.OptimizerNone})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range a.Candidates {
		if s.Feasible {
			fmt.Printf("%d %s: %.2f s per epoch (compute %.2f, communication %.2f)\n", s.Rank, s.Strategy, s.EpochTimeS, s.ComputeS, s.CommS)
		} else {
			fmt.Printf("- %s: %s\n", s.Strategy, s.Infeasible)
		}
	}
	// Output:
	// 1 data: 15.14 s per epoch (compute 15.04, communication 0.10)
	// 2 filter: 19.92 s per epoch (compute 13.84, communication 6.08)
	// - channel: p = 4 exceeds min channels (3, at conv1) (limit p ≤ 3)
}
