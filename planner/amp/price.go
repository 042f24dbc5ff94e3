package amp

import (
	"math"

	"github.com/chainplan/chainplan/planner/cluster"
)

// layout is a candidate's degrees placed on devices, with what the cost model derives from
// the placement before any cut: the stages' speed classes and the links between stages.
type layout struct {
	g         Degrees
	gas       int
	placement string
	dev       [][]int // dev[j][d·tmp+t]
	// class[j] indexes classes; classes[c] holds the per-block time prefix sums.
	class   []int
	classes []speedClass
	// stageLink[j] is the slowest link between stage j and j+1 over the replicas' pairs.
	stageLink []cluster.Link
}

// speedClass is one (device speed, tensor-group link) combination: the per-block time of
// one micro-batch on it, as prefix sums.
type speedClass struct {
	factor float64 // time multiplier: 1 / the slowest device's relative speed
	link   cluster.Link
	pre    []float64
	// commPre is the part of pre that is tensor-parallel communication (the rest is
	// computation): the split calibration needs (Candidate.CommS).
	commPre []float64
	// slowest is the slowest device type of the first stage of this class, for output.
	slowest string
}

// newLayout places g and derives the stages' classes and links.
func (s *searcher) newLayout(g Degrees, placement string) *layout {
	n := s.c.NumDevices()
	lay := &layout{g: g, gas: int(s.o.GlobalBatch / int64(g.DP*g.MBS)), placement: placement, dev: place(n, g, placement)}
	base := s.baseTimes(g.MBS)
	for j := range g.PP {
		factor, slowest := 0.0, ""
		link := cluster.Link{Bandwidth: math.Inf(1)}
		for d := range g.DP {
			group := lay.dev[j][d*g.TMP : (d+1)*g.TMP]
			for _, dv := range group {
				dt := s.c.Device(dv).Type
				if f := 1 / s.o.speed(dt); f > factor {
					factor, slowest = f, dt
				}
			}
			l := s.c.Group(group)
			link.Bandwidth = math.Min(link.Bandwidth, l.Bandwidth)
			link.LatencyS = math.Max(link.LatencyS, l.LatencyS)
		}
		c := -1
		for i, sc := range lay.classes {
			if sc.factor == factor && sc.link == link {
				c = i
				break
			}
		}
		if c < 0 {
			c = len(lay.classes)
			pre, commPre := s.blockPrefix(base, g, factor, link)
			lay.classes = append(lay.classes, speedClass{factor: factor, link: link, slowest: slowest,
				pre: pre, commPre: commPre})
		}
		lay.class = append(lay.class, c)
	}
	for j := 0; j+1 < g.PP; j++ {
		l := cluster.Link{Bandwidth: math.Inf(1)}
		for r := range lay.dev[j] {
			p := s.c.Pair(lay.dev[j][r], lay.dev[j+1][r])
			l.Bandwidth = math.Min(l.Bandwidth, p.Bandwidth)
			l.LatencyS = math.Max(l.LatencyS, p.LatencyS)
		}
		lay.stageLink = append(lay.stageLink, l)
	}
	return lay
}

// baseTimes returns each layer's forward+backward time for one micro-batch of mbs samples
// on the profiled device, times the calibration's compute scale (cached per mbs).
func (s *searcher) baseTimes(mbs int) []float64 {
	if t, ok := s.times[mbs]; ok {
		return t
	}
	t := make([]float64, s.m.L())
	for i := range s.m.Layers {
		f, b := s.m.Layers[i].TimesAt(s.m.BatchSize, float64(mbs))
		t[i] = (f + b) * s.cal.ComputeScale
	}
	s.times[mbs] = t
	return t
}

// layerTime is one layer's time for a micro-batch on a class, as computation and
// communication: a layer with parameters splits its computation over the tmp devices and
// pays Megatron's four all-reduces of its output within the tensor group (two forward, two
// backward; spec §3.10-4 [EXT]), scaled by the calibration's communication scale; a layer
// without parameters runs whole on each of them.
func (s *searcher) layerTime(i int, base float64, g Degrees, factor float64, link cluster.Link) (compute, comm float64) {
	compute = base * factor
	if g.TMP > 1 && s.m.Layers[i].ParamBytes() > 0 {
		out := float64(s.m.Layers[i].OutBytes) * float64(g.MBS) / float64(s.m.BatchSize)
		compute /= float64(g.TMP)
		comm = 4 * cluster.RingAllReduce(g.TMP, out, link) * s.cal.CommScale
	}
	return compute, comm
}

// blockPrefix returns the prefix sums of the blocks' times on a class, and of their
// communication part.
func (s *searcher) blockPrefix(base []float64, g Degrees, factor float64, link cluster.Link) (pre, commPre []float64) {
	pre = make([]float64, len(s.blocks))
	commPre = make([]float64, len(s.blocks))
	for b := 1; b < len(s.blocks); b++ {
		var t, c float64
		for i := s.blocks[b-1]; i < s.blocks[b]; i++ {
			comp, comm := s.layerTime(i, base[i], g, factor, link)
			t += comp + comm
			c += comm
		}
		pre[b] = pre[b-1] + t
		commPre[b] = commPre[b-1] + c
	}
	return pre, commPre
}

// comm returns e: the transfer of the output of block c−1 (the boundary after c blocks)
// from stage j to stage j+1 for one micro-batch, over their slowest link.
func (s *searcher) comm(lay *layout, c, j int) float64 {
	last := s.blocks[c] - 1
	v := float64(s.m.Layers[last].OutBytes) * float64(lay.g.MBS) / float64(s.m.BatchSize)
	return cluster.P2P(v, lay.stageLink[j]) * s.cal.CommScale
}

// partition returns the layout's assignment problem.
func (s *searcher) partition(lay *layout) *cutProblem {
	pre := make([][]float64, len(lay.classes))
	for i := range lay.classes {
		pre[i] = lay.classes[i].pre
	}
	return &cutProblem{Pre: pre, Class: lay.class, GAS: lay.gas, Comm: func(c, j int) float64 { return s.comm(lay, c, j) },
		Sync: s.sync(lay)}
}

// syncLinks returns, per stage, the slowest link of its data-parallel groups (one per
// tensor rank, through the stage's replicas) with contention: all the groups of the
// cluster all-reduce at once, so a group whose devices share a node with k groups' gets
// the cluster's φ for k flows.
func (s *searcher) syncLinks(lay *layout) []cluster.Link {
	g := lay.g
	perNode := map[int]int{} // data groups with a device on each node
	groups := make([][]int, 0, g.PP*g.TMP)
	for j := range g.PP {
		for t := range g.TMP {
			devs := make([]int, g.DP)
			seen := map[int]bool{}
			for d := range g.DP {
				devs[d] = lay.dev[j][d*g.TMP+t]
				seen[s.c.NodeOf(devs[d])] = true
			}
			for n := range seen {
				perNode[n]++
			}
			groups = append(groups, devs)
		}
	}
	links := make([]cluster.Link, g.PP)
	for j := range links {
		links[j] = cluster.Link{Bandwidth: math.Inf(1)}
	}
	for idx, devs := range groups {
		j := idx / g.TMP
		k := 0
		for _, dv := range devs {
			k = max(k, perNode[s.c.NodeOf(dv)])
		}
		l := s.c.Contended(s.c.Group(devs), devs, k)
		links[j].Bandwidth = math.Min(links[j].Bandwidth, l.Bandwidth)
		links[j].LatencyS = math.Max(links[j].LatencyS, l.LatencyS)
	}
	return links
}

// sync returns Eq. 4's synchronisation term as cutProblem takes it: stage j's devices each
// all-reduce the gradients of their share of its parameters (÷ tmp) among the dp replicas,
// a ring of 2(dp−1)(α + bytes/(tmp·dp)·β) (Eq. 3) over the stage's slowest group; nil
// without data parallelism.
func (s *searcher) sync(lay *layout) *syncTerm {
	g := lay.g
	if g.DP == 1 {
		return nil
	}
	y := &syncTerm{Base: make([]float64, g.PP), PerByte: make([]float64, g.PP), Bytes: make([]float64, len(s.blocks))}
	for b := 1; b < len(s.blocks); b++ {
		y.Bytes[b] = float64(s.paramBytes(0, s.blocks[b]))
	}
	links := s.syncLinks(lay)
	for j, l := range links {
		y.Base[j] = 2 * float64(g.DP-1) * l.LatencyS * s.cal.CommScale
		y.PerByte[j] = 2 * float64(g.DP-1) / (float64(g.TMP*g.DP) * l.Bandwidth) * s.cal.CommScale
	}
	return y
}
