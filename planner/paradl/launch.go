package paradl

import "github.com/chainplan/chainplan/planner/launch"

// launchShape is what parallelize needs to run c (planner/launch), or nil for a candidate
// it cannot launch: spatial parallelism (ds, spatial), offloading, a micro-batch that is
// not a whole number of samples, or more pipeline groups asked than the chain has layers.
// Data parallelism runs B/p samples per replica in one micro-batch; a pipeline B/S samples
// per micro-batch, S of them; filter and channel parallelism are tensor parallelism.
func launchShape(c *Candidate, layers int) *launch.Shape {
	var m launch.Mesh
	split := 1 // the devices the global batch is divided over
	micro := 1 // the micro-batches of one iteration
	switch c.Strategy {
	case Serial:
		m = launch.Mesh{PP: 1, DP: 1, TP: 1}
	case Data, DataCheckpoint:
		m, split = launch.Mesh{PP: 1, DP: c.Devices, TP: 1}, c.Devices
	case Layer:
		m = launch.Mesh{PP: c.Devices, DP: 1, TP: 1}
	case Pipeline:
		m, split, micro = launch.Mesh{PP: c.Devices, DP: 1, TP: 1}, c.Segments, c.Segments
	case Filter, Channel:
		m = launch.Mesh{PP: 1, DP: 1, TP: c.Devices}
	case DataFilter:
		m, split = launch.Mesh{PP: 1, DP: c.DataDegree, TP: c.SplitDegree}, c.DataDegree
	default:
		return nil
	}
	if split < 1 || c.GlobalBatch%int64(split) != 0 {
		return nil
	}
	sh := &launch.Shape{Mesh: m, Microbatch: int(c.GlobalBatch / int64(split)), Microbatches: micro, Cuts: []int{}}
	if m.PP > 1 {
		if len(c.Groups) != m.PP {
			return nil
		}
		for _, g := range c.Groups[:len(c.Groups)-1] {
			sh.Cuts = append(sh.Cuts, g[1])
		}
	}
	for range m.PP {
		sh.Checkpoint = append(sh.Checkpoint, launch.None)
	}
	if c.Strategy == DataCheckpoint && c.Saver != nil {
		sh.Checkpoint[0] = launch.Checkpoint{BudgetBytes: c.Saver.BudgetBytes}
	}
	if sh.Check(layers) != nil {
		return nil
	}
	return sh
}
