package amp_test

import (
	"fmt"

	"github.com/chainplan/chainplan/planner/amp"
	"github.com/chainplan/chainplan/planner/cluster"
	"github.com/chainplan/chainplan/planner/workload"
)

// AMP-E1 (spec §3.9): four layers of 10 ms, 10 MB activations and 200 MB of gradients each,
// on 2 nodes of 2 devices (100 GB/s inside a node, 10 GB/s between), gbs 8. Two stages of
// two replicas win: their gradients synchronise inside a node.
func ExampleSearch() {
	m := &workload.Model{Name: "e1", BatchSize: 1, InputBytes: 10e6}
	for range 4 {
		m.Layers = append(m.Layers, workload.Layer{FwdTimeS: 0.004, BwdTimeS: 0.006, InBytes: 10e6, OutBytes: 10e6, WeightBytes: 200e6})
	}
	c, err := cluster.Parse([]byte(`name: e1
nodes: [{name: n, count: 2, gpu: GPU, gpus: 2, gpu_mem: 16GB, intra_bw: 100GB/s, inter_bw: 10GB/s}]`))
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := amp.Search(m, c, amp.Options{GlobalBatch: 8, TMPMax: 1, MemoryCheck: amp.MemoryOff, Optimizer: "none", TopK: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range r.Candidates {
		fmt.Printf("%d: pp=%d dp=%d mbs=%d gas=%d %.1f ms %v\n", s.Rank, s.PP, s.DP, s.MBS, s.GAS, 1e3*s.IterationTimeS, s.Boundaries)
	}
	// Output:
	// 1: pp=2 dp=2 mbs=1 gas=4 105.0 ms [0 2 4]
	// 2: pp=4 dp=1 mbs=1 gas=8 111.2 ms [0 1 2 3 4]
	// 3: pp=2 dp=2 mbs=2 gas=2 126.0 ms [0 2 4]
}
