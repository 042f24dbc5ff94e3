package pipeline

import "github.com/chainplan/chainplan/pipeplan"

// MemoryLowerBound returns a memory per device below which no plan of any allocation, any
// pattern and any stage mode exists in pr's model (as a Limit: MemoryFor turns it into a
// memory with headroom): the device holding layer ℓ keeps C·W_ℓ and at least one
// mini-batch's activations of ℓ (a_{ℓ−1} in the input model, saved_bytes of ℓ in the saved
// model), and, with temporaries, ℓ's backward holds δ_ℓ, δ_{ℓ−1} and o_B(ℓ) next to them
// (its forward o_F(ℓ)), whether the stage recorded its graph or recomputes; the last layer
// also keeps what the loss saved. The P devices together keep C·ΣW.
func MemoryLowerBound(pr *Problem) int64 {
	c := int64(pr.opts.WeightCopies)
	total := c * pr.Weights(1, pr.L())
	lb := (total + int64(pr.opts.GPUs) - 1) / int64(pr.opts.GPUs)
	for l := 1; l <= pr.L(); l++ {
		ly := pr.Layer(l)
		act := ly.Saved
		if pr.opts.ActivationModel == pipeplan.ActivationsInput {
			act = pr.Out(l - 1)
		}
		if pr.temporaries() {
			bwd := ly.Out + ly.BwdTmp
			if l > 1 {
				bwd += pr.Out(l - 1)
			}
			if l == pr.L() {
				bwd = max(bwd, ly.Out+pr.chain.Loss.BwdTmpBytes)
			}
			act += pr.lossKeep(l) + max(ly.FwdTmp, bwd)
		}
		lb = max(lb, c*ly.Param+act)
	}
	return lb
}
