// Package pipechains builds the chains of the pipeline planners' tests: the exact anchors of
// the MadPipe specification (shared/specs/madpipe.md §6.4, §2.10) and seeded random chains.
package pipechains

import (
	"math/rand/v2"

	"github.com/chainplan/chainplan"
)

// Chain builds a chain from the spec's per-layer symbols: u_F, u_B, W (param_bytes) and
// a_0..a_L (a[0] is the input). saved_bytes is a_ℓ (the layer keeps only its output) and
// the loss costs nothing. w and a may be nil for zeros.
func Chain(uF, uB []float64, w []int64, a []int64) *chainplan.Chain {
	c := &chainplan.Chain{Format: chainplan.ChainFormat}
	if a != nil {
		c.InputBytes = a[0]
	}
	for l := range uF {
		s := chainplan.Stage{FwdTime: uF[l], BwdTime: uB[l]}
		if w != nil {
			s.ParamBytes = w[l]
		}
		if a != nil {
			s.OutBytes, s.SavedBytes = a[l+1], a[l+1]
		}
		c.Stages = append(c.Stages, s)
	}
	return c
}

// Costs builds a chain whose layer ℓ costs cost[ℓ] split evenly between forward and
// backward, with no weights and no activations: the instances of the thesis' proofs.
func Costs(cost ...float64) *chainplan.Chain {
	h := make([]float64, len(cost))
	for i, c := range cost {
		h[i] = c / 2
	}
	return Chain(h, h, nil, nil)
}

// Random returns a seeded random chain of l layers: times in [0.1, 2), outputs and
// weights in [0, 100) bytes, saved bytes between the output and four times it, the input
// in [0, 100), temporaries in [0, 50) (a third of them 0), and a loss with times and
// temporaries of the same kind. Some outputs and weights are 0, some layers much heavier
// than the others.
func Random(rng *rand.Rand, l int) *chainplan.Chain {
	c := &chainplan.Chain{Format: chainplan.ChainFormat, InputBytes: rng.Int64N(100)}
	for range l {
		s := chainplan.Stage{FwdTime: 0.1 + rng.Float64(), BwdTime: 0.1 + 2*rng.Float64(),
			OutBytes: rng.Int64N(100), ParamBytes: rng.Int64N(100)}
		if rng.IntN(5) == 0 {
			s.OutBytes = 0
		}
		if rng.IntN(4) == 0 {
			s.FwdTime, s.BwdTime = 4*s.FwdTime, 4*s.BwdTime
		}
		s.SavedBytes = s.OutBytes + rng.Int64N(3*s.OutBytes+1)
		s.FwdTmpBytes, s.BwdTmpBytes = tmp(rng), tmp(rng)
		c.Stages = append(c.Stages, s)
	}
	c.Loss = chainplan.Loss{FwdTime: 0.1 * rng.Float64(), BwdTime: 0.1 * rng.Float64(),
		FwdTmpBytes: tmp(rng), BwdTmpBytes: tmp(rng)}
	return c
}

// tmp draws a temporary size: 0 one time in three, else in [0, 50).
func tmp(rng *rand.Rand) int64 {
	if rng.IntN(3) == 0 {
		return 0
	}
	return rng.Int64N(50)
}
