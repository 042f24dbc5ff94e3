package paradl

import (
	"fmt"

	"github.com/chainplan/chainplan/planner/cluster"
	"github.com/chainplan/chainplan/planner/workload"
)

// serial is one device (spec §2.5.1):
//
//	T_comp = D·Σ(FW+BW) + I·ΣWU,  M = γδΣ(2B(|x|+|y|) + 2|w| + |bi|).
func (e *evaluator) serial() Candidate {
	c := e.base(Serial, 1)
	b := float64(c.GlobalBatch)
	c.SamplesPerDevice = b
	for i := range e.m.Layers {
		c.Compute.ForwardBackwardS += float64(e.o.DatasetSize) * e.perSample(&e.m.Layers[i], b)
	}
	c.Compute.WeightUpdateS = float64(c.Iterations) * e.updates(one)
	e.memory(&c, e.activations(b, one), e.weights(1), 1)
	return c
}

// data is data parallelism over p devices (spec §2.5.2): each device runs B/p samples
// and holds every weight; the weight gradients are all-reduced every iteration.
//
//	T_comp = ⌈D/p⌉·Σ(FW+BW) + I·ΣWU,  T_comm = I·T_ar(p, δΣ|w|),
//	M = γδΣ(2(B/p)(|x|+|y|) + 2|w| + |bi|),  p ≤ B.
func (e *evaluator) data(p int) Candidate {
	c := e.base(Data, p)
	if int64(p) > c.GlobalBatch {
		c.Infeasible = fmt.Sprintf("p = %d exceeds the global batch B = %d (limit p ≤ B)", p, c.GlobalBatch)
	}
	bp := float64(c.GlobalBatch) / float64(p)
	c.SamplesPerDevice = bp
	for i := range e.m.Layers {
		c.Compute.ForwardBackwardS += e.share(p) * e.perSample(&e.m.Layers[i], bp)
	}
	c.Compute.WeightUpdateS = float64(c.Iterations) * e.updates(one)
	c.Comm.GradientS = float64(c.Iterations) * cluster.RingAllReduce(p, e.sumW, e.group(p))
	e.memory(&c, e.activations(bp, one), e.weights(1), 1)
	return c
}

// spatial is spatial parallelism over p devices (spec §2.5.3): the split layers' maps are
// cut into p slices (the last spatial dimension, as the authors' script does); every
// partitioned module with a kernel wider than 1 exchanges halos of its input forward and
// of its output gradient backward; the weight gradients are all-reduced; after the last
// split layer an all-gather rebuilds full maps for the layers that follow, which run on
// the full batch on every device (001:L505).
//
//	T_comm = 2·I·[(p−1)(α + δΣ|w|/p·β) + Σ_halo (2α + B(halo_x + halo_dy)δβ)]
//	         + I·2(p−1)(α + B·δ|y_split|·β/p)    when layers follow the split,
//	M = γδ[Σ_split 2B(|x|+|y|)/p + Σ_rest 2B(|x|+|y|) + Σ(2|w| + |bi|)],  p ≤ min W·H.
func (e *evaluator) spatial(p int) Candidate {
	c := e.base(Spatial, p)
	b := float64(c.GlobalBatch)
	c.SamplesPerDevice = b / float64(p)
	link := e.group(p)
	iters := float64(c.Iterations)
	limit, lastSplit := e.spatialLimit()
	if limit > 0 && int64(p) > limit {
		c.Infeasible = fmt.Sprintf("p = %d exceeds the smallest split map W·H = %d (limit p ≤ min W·H)", p, limit)
	}
	e.splitLayers(&c, b, 1, p, lastSplit, link)
	c.Compute.WeightUpdateS = iters * e.updates(one)
	c.Comm.GradientS = iters * cluster.RingAllReduce(p, e.sumW, link)
	e.memory(&c, e.activations(b, e.spatialDiv(float64(p))), e.weights(1), 1)
	return c
}

// splitLayers adds the terms of spatial splitting for p1 groups of p2 devices, each group
// computing bg samples (spatial: p1 = 1, bg = B; data + spatial: bg = B/p1): a split layer
// computes bg/p2 samples per device and exchanges its halos over the group's link, a layer
// after the split computes the group's whole bg samples, and when such layers follow, an
// all-gather over the group rebuilds the last split layer's full maps.
func (e *evaluator) splitLayers(c *Candidate, bg float64, p1, p2, lastSplit int, link cluster.Link) {
	iters := float64(c.Iterations)
	for i := range e.m.Layers {
		l := &e.m.Layers[i]
		if l.Spatial {
			c.Compute.ForwardBackwardS += e.share(p1*p2) * e.perSample(l, bg/float64(p2))
			c.Comm.HaloS += iters * halos(l, bg, link)
		} else {
			c.Compute.ForwardBackwardS += e.share(p1) * e.perSample(l, bg)
		}
	}
	if lastSplit < len(e.m.Layers)-1 {
		y := bg * float64(e.m.Layers[lastSplit].OutBytes) / float64(e.m.BatchSize)
		c.Comm.GatherS = iters * 2 * float64(p2-1) * link.Time(y/float64(p2))
	}
}

// halos returns one iteration's halo exchanges of a split layer on samples samples: per
// module with a kernel wider than 1, a forward halo of its input and a backward halo of its
// output gradient, two directions each (spec §2.5.3: 2·(2α + B(halo_x + halo_dy)δβ)).
func halos(l *workload.Layer, samples float64, link cluster.Link) float64 {
	var t float64
	for _, part := range l.Parts {
		if part.Halo {
			t += 2 * (2*link.LatencyS + samples*(part.HaloXBytes+part.HaloDYBytes)/link.Bandwidth)
		}
	}
	return t
}

// spatialDiv divides the split layers' activations by p.
func (e *evaluator) spatialDiv(p float64) func(int) float64 {
	return func(i int) float64 {
		if e.m.Layers[i].Spatial {
			return p
		}
		return 1
	}
}

// spatialLimit returns the smallest input map W·H of the split layers' modules (0 when no
// module says) and the index of the last split layer.
func (e *evaluator) spatialLimit() (limit int64, lastSplit int) {
	for i := range e.m.Layers {
		l := &e.m.Layers[i]
		if !l.Spatial {
			break
		}
		lastSplit = i
		for _, part := range l.Parts {
			if part.Area > 0 && (limit == 0 || part.Area < limit) {
				limit = part.Area
			}
		}
	}
	return limit, lastSplit
}

// tensor is filter or channel parallelism over p devices (spec §2.5.6-7): every device
// holds 1/p of each partitioned module's filters (or input channels) and the full
// activations; per partitioned module, an all-gather of its output forward and an
// all-reduce of the input gradient backward (filter), or the converse (channel); none for
// the network's last module. Only the partitioned layers' computation and weight update
// are divided by p (§2.9-1).
//
//	T_comm = I·Σ_modules [T_ag(p, B·δ|y|/p) + T_ar(p, B·δ|y|)] = 3·I·(p−1)·Σ(α + B·δ|y|·β/p),
//	M = γδΣ(2B(|x|+|y|) + 2|w|/p + |bi|),  p ≤ min F (filter), p ≤ min C (channel).
func (e *evaluator) tensor(p int, s Strategy) Candidate {
	c := e.base(s, p)
	b := float64(c.GlobalBatch)
	c.SamplesPerDevice = b
	if lim, what := e.tensorLimit(s); int64(p) > lim {
		c.Infeasible = fmt.Sprintf("p = %d exceeds min %s (limit p ≤ %d)", p, what, lim)
	}
	iters := float64(c.Iterations)
	div := e.partitionedDiv(float64(p))
	for i := range e.m.Layers {
		c.Compute.ForwardBackwardS += float64(e.o.DatasetSize) * e.perSample(&e.m.Layers[i], b) / div(i)
	}
	c.Compute.WeightUpdateS = iters * e.updates(div)
	c.Comm.LayerS = iters * e.layerCollectives(p, b, e.group(p))
	e.memory(&c, e.activations(b, one), e.weights(float64(p)), float64(p))
	return c
}

// layerCollectives returns one iteration's filter (or channel) collectives among p devices
// over link: per partitioned module but the network's last, an all-gather of its output
// slices (B·δ|y|/p each) and an all-reduce of the whole gradient (B·δ|y|).
func (e *evaluator) layerCollectives(p int, samples float64, link cluster.Link) float64 {
	var t float64
	for i := range e.m.Layers {
		for j := range e.m.Layers[i].Parts {
			part := &e.m.Layers[i].Parts[j]
			if part == e.lastPart {
				continue
			}
			y := samples * part.OutBytesPerSample
			t += cluster.RingAllGather(p, y/float64(p), link) + cluster.RingAllReduce(p, y, link)
		}
	}
	return t
}

// collectiveCount is the number of modules whose outputs layerCollectives exchanges.
func (e *evaluator) collectiveCount() int {
	n := e.parts()
	if e.lastPart != nil {
		n--
	}
	return n
}

// partitionedDiv divides the partitioned layers by p.
func (e *evaluator) partitionedDiv(p float64) func(int) float64 {
	return func(i int) float64 {
		if len(e.m.Layers[i].Parts) > 0 {
			return p
		}
		return 1
	}
}

// tensorLimit returns the largest p of filter (min F) or channel (min C) parallelism over
// the partitioned modules, and what bounds it (Table 3's limits, which PD-5 checks: the
// authors' experiments ran the first layer unsplit instead, 001:L507, which this model
// does not do).
func (e *evaluator) tensorLimit(s Strategy) (int64, string) {
	lim, name := int64(-1), ""
	for i := range e.m.Layers {
		for _, part := range e.m.Layers[i].Parts {
			v := part.OutChannels
			if s == Channel {
				v = part.InChannels
			}
			if lim < 0 || v < lim {
				lim, name = v, part.Name
			}
		}
	}
	what := "filters"
	if s == Channel {
		what = "channels"
	}
	if name != "" {
		what = fmt.Sprintf("%s (%d, at %s)", what, lim, name)
	}
	return max(lim, 1), what
}
