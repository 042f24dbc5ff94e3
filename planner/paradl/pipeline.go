package paradl

import (
	"fmt"
	"math"

	"github.com/chainplan/chainplan/planner/cluster"
)

// pipeline is the layer strategy (spec §2.5.4: groups of layers on p devices, one active
// at a time; S = 1) or the GPipe-style pipeline (§2.5.5: the mini-batch split into S
// segments). The groups are contiguous and balance FW+BW (a min-max partition; ParaDL
// leaves the partition to the user). Device i holds group i; boundary i's activation goes
// forward and its gradient back over the link between devices i and i+1.
//
//	T_comp = D·(p+S−1)/S·(max_i FW_Gi + max_i BW_Gi) + I·max_i WU_Gi   (Eq. 12, brackets [R])
//	T_comm = 2·I·(p+S−2)·max_i (α + (B/S)·δ|y_Gi|·β)                    (Eq. 13)
//	M = γδ·max_i Σ_{l∈G_i}(2B(|x|+|y|) + 2|w| + |bi|),  p ≤ G            (Eq. 14)
//
// The layer strategy has no speed-up (Eq. 11: T_comp = D·Σ(FW+BW) + I·ΣWU) and S = 1.
func (e *evaluator) pipeline(p int, s Strategy) Candidate {
	c := e.base(s, p)
	b := float64(c.GlobalBatch)
	S := 1
	if s == Pipeline {
		S = e.o.Segments
		if S == 0 {
			S = int(min(int64(4*p), c.GlobalBatch))
		}
		c.Segments = S
	}
	seg := b / float64(S)
	c.SamplesPerDevice = seg
	L := len(e.m.Layers)
	if p > L {
		c.Infeasible = fmt.Sprintf("p = %d exceeds the %d layers (limit p ≤ G)", p, L)
		p = L // evaluate the best split there, to report the rest
	}
	if int64(S) > c.GlobalBatch {
		c.Infeasible = fmt.Sprintf("S = %d segments exceed the global batch B = %d", S, c.GlobalBatch)
	}
	fw := make([]float64, L)
	bw := make([]float64, L)
	for i := range e.m.Layers {
		f, w := e.m.Layers[i].TimesAt(e.m.BatchSize, seg)
		fw[i], bw[i] = f/seg, w/seg
	}
	bounds := minMaxPartition(fw, bw, p)
	var maxF, maxB, maxWU float64
	var worst struct{ act, wts, opt, total float64 } // the group needing the most memory
	iters := float64(c.Iterations)
	var p2p float64
	for g := 0; g < len(bounds)-1; g++ {
		lo, hi := bounds[g], bounds[g+1]
		c.Groups = append(c.Groups, [2]int{lo + 1, hi})
		var f, w, wu, act, wts, params float64
		for i := lo; i < hi; i++ {
			l := &e.m.Layers[i]
			f += fw[i]
			w += bw[i]
			wu += l.UpdateTimeS
			act += 2 * b * e.xy(l)
			wts += 2*float64(l.WeightBytes) + float64(l.BiasBytes)
			params += float64(l.ParamBytes())
		}
		maxF, maxB, maxWU = math.Max(maxF, f), math.Max(maxB, w), math.Max(maxWU, wu)
		var opt float64
		if total := float64(e.m.TotalParamBytes()); total > 0 {
			opt = float64(e.optState) * params / total
		}
		if t := e.gamma*(act+wts) + opt; t > worst.total {
			worst.act, worst.wts, worst.opt, worst.total = act, wts, opt, t
		}
		if g < len(bounds)-2 {
			y := seg * float64(e.m.Layers[hi-1].OutBytes) / float64(e.m.BatchSize)
			p2p = math.Max(p2p, cluster.P2P(y, e.c.Pair(g, g+1)))
		}
	}
	if s == Layer {
		for i := range e.m.Layers {
			c.Compute.ForwardBackwardS += float64(e.o.DatasetSize) * (fw[i] + bw[i])
		}
		c.Compute.WeightUpdateS = iters * e.updates(one)
	} else {
		c.Compute.ForwardBackwardS = float64(e.o.DatasetSize) * float64(p+S-1) / float64(S) * (maxF + maxB)
		c.Compute.WeightUpdateS = iters * maxWU
	}
	c.Comm.P2PS = 2 * iters * float64(p+S-2) * p2p
	e.memory(&c, worst.act, worst.wts, 1)
	c.Memory.OptimizerBytes = int64(math.Ceil(worst.opt))
	return c
}

// minMaxPartition splits layers 0..L−1 into k contiguous groups minimising the largest
// Σ(fw+bw) of a group, ties to the earliest cuts; it returns the k+1 boundaries
// (0 = b_0 < b_1 < ... < b_k = L). O(k·L²).
func minMaxPartition(fw, bw []float64, k int) []int {
	L := len(fw)
	pre := make([]float64, L+1)
	for i := range fw {
		pre[i+1] = pre[i] + fw[i] + bw[i]
	}
	inf := math.Inf(1)
	// best[j][i]: the smallest max over i layers in j groups; cut[j][i] the last cut.
	best := make([][]float64, k+1)
	cut := make([][]int, k+1)
	for j := range best {
		best[j] = make([]float64, L+1)
		cut[j] = make([]int, L+1)
		for i := range best[j] {
			best[j][i] = inf
		}
	}
	best[0][0] = 0
	for j := 1; j <= k; j++ {
		for i := j; i <= L-(k-j); i++ {
			for c := j - 1; c < i; c++ {
				if v := math.Max(best[j-1][c], pre[i]-pre[c]); v < best[j][i] {
					best[j][i], cut[j][i] = v, c
				}
			}
		}
	}
	bounds := make([]int, k+1)
	bounds[k] = L
	for j := k; j > 0; j-- {
		bounds[j-1] = cut[j][bounds[j]]
	}
	return bounds
}
