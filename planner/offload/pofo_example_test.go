package offload_test

import (
	"fmt"

	"github.com/chainplan/chainplan/planner/internal/testchains"
	"github.com/chainplan/chainplan/planner/offload"
)

// Example plans the worked example of the pofo spec (§5.8) at a budget of 22 bytes and a
// link of 1 byte per time unit, in exact bytes: the chain input is offloaded while the
// forward phase runs and prefetched before its recomputation.
func Example() {
	c := testchains.PofoExample(1)
	p, err := offload.SolvePOFO(c, 22, offload.Options{BandwidthBytesPerS: 1, Slots: -1})
	if err != nil {
		panic(err)
	}
	fmt.Printf("makespan %g (sequential %g), peak %d bytes\n", p.Makespan, c.SumTime(), p.PeakBytes)
	for _, t := range p.Offload.Transfers {
		fmt.Println(t)
	}
	// Output:
	// makespan 20 (sequential 19), peak 21 bytes
	// offload a0 after -1
	// prefetch a0 before 9
}
