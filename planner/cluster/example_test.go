package cluster_test

import (
	"fmt"

	"github.com/chainplan/chainplan/planner/cluster"
)

// Two nodes of two devices: a pair inside a node talks over the node's link, a group
// across nodes at the slower network interface and the inter-node latency.
func ExampleParse() {
	c, err := cluster.Parse([]byte(`name: two
nodes:
  - {name: a, gpu: A100, gpus: 2, gpu_mem: 80GiB, intra_bw: 300GB/s, inter_bw_gbps: 200}
  - {name: b, gpu: A100, gpus: 2, gpu_mem: 80GiB, intra_bw: 300GB/s, inter_bw_gbps: 100}
latency: {intra_s: 3e-6, inter_s: 1e-5}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	in, across := c.Pair(0, 1), c.Group([]int{0, 1, 2, 3})
	fmt.Printf("%d devices; inside a node %.0f GB/s, α %.0f µs; the group %.1f GB/s, α %.0f µs\n",
		c.NumDevices(), in.Bandwidth/1e9, in.LatencyS*1e6, across.Bandwidth/1e9, across.LatencyS*1e6)
	// A 100 MB gradient all-reduced over the four devices.
	fmt.Printf("all-reduce of 100 MB: %.2f ms\n", 1e3*cluster.RingAllReduce(4, 100e6, across))
	_, err = cluster.Parse([]byte("name: bad\nnodes: [{gpu: A100, gpus: 2, gpu_mem: 80GiB}]"))
	fmt.Println(err)
	// Output:
	// 4 devices; inside a node 300 GB/s, α 3 µs; the group 12.5 GB/s, α 10 µs
	// all-reduce of 100 MB: 12.06 ms
	// cluster description: line 2: nodes[0].intra_bw: missing: a node of 2 devices needs its intra-node bandwidth (intra_bw_gbps or intra_bw)
}
