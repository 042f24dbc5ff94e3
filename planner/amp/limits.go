package amp

import (
	"fmt"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/workload"
)

// search3d's limit (docs/parallel.md, "Limits"): a workload of more layers than blocks is
// coarsened first by the bounded min-max DP of partition.go over its L layers, whose
// tables grow with L: the candidate bottlenecks, every segment sum, L(L+1)/2 float64 (and
// the slack of the growing list), and the DP's three rows of L+1 per block. Search checks
// them against chainplan.TableLimit before it starts; the DPs over the blocks, at most
// maxBlocks, stay small.
func checkCoarsen(m *workload.Model, blocks int) error {
	l := m.L()
	if l <= blocks {
		return nil
	}
	bytes := float64(l)*float64(l+1)/2*16 + 3*float64(blocks)*float64(l+1)*8
	return chainplan.CheckTables("search3d", l,
		fmt.Sprintf("the coarsening of its %d layers into %d blocks (every segment sum of the layers)", l, blocks), bytes,
		func(int64) string { return "merge consecutive layers of the workload (a chain of fewer stages)" })
}
