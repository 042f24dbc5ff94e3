package paradl

import (
	"fmt"
	"slices"

	"github.com/chainplan/chainplan"
)

// ParaDL's limit (docs/parallel.md, "Limits"): the layer and pipeline strategies split the
// layers with a min-max DP of (p+1)×(L+1) cells, partitionCellBytes each, for p devices
// (at most L); supports checks the largest p requested against chainplan.TableLimit before
// any is evaluated. Named in the request, such a strategy is refused with a
// *chainplan.SizeError; in the default list it is skipped with a note. rotor and pofo,
// the savers of data+checkpointing and data+offloading, check their own tables.
const partitionCellBytes = 16

// checkPartition refuses strategy s when its DP at the largest device count would pass
// the limit.
func (e *evaluator) checkPartition(s Strategy) error {
	l := len(e.m.Layers)
	if len(e.o.Devices) == 0 || l == 0 {
		return nil
	}
	p := min(slices.Max(e.o.Devices), l)
	return chainplan.CheckTables("advise", l,
		fmt.Sprintf("the %s strategy's partition of the layers (%d devices × %d layers)", s, p+1, l+1),
		float64(p+1)*float64(l+1)*partitionCellBytes,
		func(limit int64) string {
			if most := int(float64(limit)/(float64(l+1)*partitionCellBytes)) - 1; most >= 2 {
				return fmt.Sprintf("evaluate at most %d devices (--devices), or merge layers", most)
			}
			return "merge consecutive layers"
		})
}
