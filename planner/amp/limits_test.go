package amp_test

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/amp"
	"github.com/chainplan/chainplan/planner/internal/testchains"
	"github.com/chainplan/chainplan/planner/workload"
)

// TestLongWorkloadRefused: a workload of the 40 000 layers of issue 33 would be coarsened
// into blocks by a DP listing every segment sum of the layers, 12 GiB; search3d refuses it
// with a *chainplan.SizeError before allocating, where it used to die in that list.
func TestLongWorkloadRefused(t *testing.T) {
	m, err := workload.FromChain(testchains.Long(testchains.LongStages), "long", 8, 4)
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = amp.Search(m, readCluster(t, "amp-e1.yaml"), amp.Options{GlobalBatch: 8})
	runtime.ReadMemStats(&after)
	var se *chainplan.SizeError
	if !errors.As(err, &se) || !errors.Is(err, chainplan.ErrUnsupported) {
		t.Fatalf("Search: %v, want a *chainplan.SizeError", err)
	}
	for _, want := range []string{"search3d: a chain of 40000 stages is too large", "the coarsening of its 40000 layers",
		"over the limit of 2.00 GiB", "merge consecutive layers"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > testchains.MaxAllocBytes {
		t.Errorf("allocated %d bytes before refusing", n)
	}
}
