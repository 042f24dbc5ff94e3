package paradl_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/cluster"
	"github.com/chainplan/chainplan/planner/internal/testchains"
	"github.com/chainplan/chainplan/planner/paradl"
	"github.com/chainplan/chainplan/planner/workload"
)

// TestLongWorkloadPartition: on a cluster of 65 536 devices the layer and pipeline
// strategies split the 40 000 layers of issue 33 with a min-max DP of 40 001² cells
// (24 GiB): named in the request, the strategy is refused with a *chainplan.SizeError
// before allocating; in the default list it is skipped with a note saying why, and the
// other strategies are ranked.
func TestLongWorkloadPartition(t *testing.T) {
	m, err := workload.FromChain(testchains.Long(testchains.LongStages), "long", 8, 4)
	if err != nil {
		t.Fatal(err)
	}
	nodes := make([]cluster.Node, 256)
	for i := range nodes {
		nodes[i] = cluster.Node{Name: fmt.Sprint("n", i), DeviceType: "G", Devices: 256, MemoryBytes: 80 << 30,
			IntraBandwidth: 1e11, InterBandwidth: 2.5e10, HostBandwidth: 1.2e10, NICs: 1}
	}
	c, err := cluster.New(cluster.Cluster{Name: "huge", Nodes: nodes, IntraLatencyS: 5e-6, InterLatencyS: 2e-5,
		Contention: cluster.Contention{Mode: cluster.ContentionAuto}})
	if err != nil {
		t.Fatal(err)
	}
	o := paradl.Options{DatasetSize: 1000, BatchPerDevice: 1, Strategies: []paradl.Strategy{paradl.Layer},
		Devices: []int{2, 65536}}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = paradl.Advise(m, c, o)
	runtime.ReadMemStats(&after)
	var se *chainplan.SizeError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "advise: a chain of 40000 stages is too large") ||
		!strings.Contains(err.Error(), "the layer strategy's partition of the layers (40001 devices × 40001 layers)") ||
		!strings.Contains(err.Error(), "evaluate at most 3354 devices (--devices)") {
		t.Fatalf("Advise(layer): %v, want a *chainplan.SizeError", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > testchains.MaxAllocBytes {
		t.Errorf("allocated %d bytes before refusing", n)
	}
	o.Strategies = nil
	o.Devices = []int{1, 65536}
	a, err := paradl.Advise(m, c, o)
	if err != nil {
		t.Fatalf("Advise(default strategies): %v", err)
	}
	skipped := 0
	for _, n := range a.Notes {
		if strings.Contains(n, "skipped") && strings.Contains(n, "CHAINPLAN_TABLE_LIMIT") {
			skipped++
		}
	}
	if skipped != 2 || len(a.Candidates) == 0 {
		t.Fatalf("notes %q, %d candidates; want layer and pipeline skipped for size, the others ranked", a.Notes, len(a.Candidates))
	}
}
