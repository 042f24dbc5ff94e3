package paradl

import (
	"fmt"

	"github.com/chainplan/chainplan/planner/cluster"
)

// hybridGroups returns the devices of the hybrids' two kinds of groups on devices
// 0..p1·p2−1: split groups of p2 consecutive devices (inside a node), and data groups of
// p1 devices one per split group (stride p2), whose p2 groups share each node's network
// interfaces (ParaDL's segmented all-reduce, 001:L507).
func hybridGroups(p1, p2 int) (split, data []int) {
	data = make([]int, p1)
	for i := range data {
		data[i] = i * p2
	}
	return cluster.Range(0, p2), data
}

// dataFilter is the data + filter hybrid (spec §2.5.8): p1 data-parallel groups across
// nodes, each of p2 devices in filter parallelism inside a node; each group processes B/p1
// samples per iteration.
//
//	T_comp = ⌈D/p1⌉·Σ(FW+BW)/p2 + I·ΣWU/p2   (partitioned layers divided by p2),
//	T_comm = 3·I·(p2−1)·Σ(α + B·δ|y|·β/p) + I·T_ar(p1, δΣ|w|/p2) with φ on the data groups,
//	M = γδΣ(2B(|x|+|y|)/p1 + 2|w|/p2 + |bi|),  p1 ≤ B, p2 ≤ min F.
func (e *evaluator) dataFilter(p1, p2 int) Candidate {
	p := p1 * p2
	c := e.base(DataFilter, p)
	c.DataDegree, c.SplitDegree = p1, p2
	b := float64(c.GlobalBatch)
	bg := b / float64(p1) // the samples of one group
	c.SamplesPerDevice = bg
	if lim, what := e.tensorLimit(Filter); int64(p2) > lim {
		c.Infeasible = fmt.Sprintf("p2 = %d exceeds min %s (limit p2 ≤ %d)", p2, what, lim)
	} else if int64(p1) > c.GlobalBatch {
		c.Infeasible = fmt.Sprintf("p1 = %d exceeds the global batch B = %d (limit p1 ≤ B)", p1, c.GlobalBatch)
	}
	iters := float64(c.Iterations)
	div := e.partitionedDiv(float64(p2))
	for i := range e.m.Layers {
		c.Compute.ForwardBackwardS += e.share(p1) * e.perSample(&e.m.Layers[i], bg) / div(i)
	}
	c.Compute.WeightUpdateS = iters * e.updates(div)
	split, data := hybridGroups(p1, p2)
	c.Comm.LayerS = iters * e.layerCollectives(p2, bg, e.c.Group(split))
	dl := e.c.Group(data)
	c.Comm.GradientS = iters * cluster.RingAllReduce(p1, e.sumW/float64(p2), e.c.Contended(dl, data, p2))
	e.memory(&c, e.activations(bg, one), e.weights(float64(p2)), float64(p2))
	return c
}

// dataSpatial is the data + spatial hybrid (spec §2.5.9, [D]): p1 data-parallel groups
// across nodes, each of p2 devices in spatial parallelism inside a node. Gradients are
// reduced hierarchically: an all-reduce inside each node, then one among the nodes'
// leaders (one flow per node).
//
//	T_comm = 2·I·Σ_halo(2α + (B/p1)(halo_x + halo_dy)δβ) + I·[T_ar(p2, δΣ|w|) + T_ar(p1, δΣ|w|)]
//	         + I·2(p2−1)(α + (B/p1)·δ|y_split|·β/p2)    when layers follow the split,
//	M = γδ[Σ_split 2B(|x|+|y|)/p + Σ_rest 2B(|x|+|y|)/p1 + Σ(2|w| + |bi|)].
func (e *evaluator) dataSpatial(p1, p2 int) Candidate {
	p := p1 * p2
	c := e.base(DataSpatial, p)
	c.DataDegree, c.SplitDegree = p1, p2
	b := float64(c.GlobalBatch)
	bg := b / float64(p1)
	c.SamplesPerDevice = bg / float64(p2)
	limit, lastSplit := e.spatialLimit()
	if limit > 0 && int64(p2) > limit {
		c.Infeasible = fmt.Sprintf("p2 = %d exceeds the smallest split map W·H = %d", p2, limit)
	} else if int64(p1) > c.GlobalBatch {
		c.Infeasible = fmt.Sprintf("p1 = %d exceeds the global batch B = %d (limit p1 ≤ B)", p1, c.GlobalBatch)
	}
	iters := float64(c.Iterations)
	split, data := hybridGroups(p1, p2)
	sl := e.c.Group(split)
	e.splitLayers(&c, bg, p1, p2, lastSplit, sl)
	c.Compute.WeightUpdateS = iters * e.updates(one)
	c.Comm.GradientS = iters * (cluster.RingAllReduce(p2, e.sumW, sl) + cluster.RingAllReduce(p1, e.sumW, e.c.Group(data)))
	act := e.activations(b, func(i int) float64 {
		if e.m.Layers[i].Spatial {
			return float64(p)
		}
		return float64(p1)
	})
	e.memory(&c, act, e.weights(1), 1)
	return c
}
