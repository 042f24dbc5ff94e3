package pipeline

import (
	"fmt"

	"github.com/chainplan/chainplan"
)

// InfeasibleError reports that an algorithm finds no plan within the memory per device,
// with the smallest memory at which it does (MinMemoryBytes), or, when LowerBound is set,
// a memory below which provably no plan of that kind exists (the smallest that works is
// not known). MinMemoryBytes 0 with LowerBound unset means no memory works. An algorithm
// whose success is not monotone in the memory (pipedream) may report a MinMemoryBytes
// below MemoryBytes.
type InfeasibleError struct {
	Algo           string
	MemoryBytes    int64
	MinMemoryBytes int64
	LowerBound     bool
}

func (e *InfeasibleError) Error() string {
	head := fmt.Sprintf("%s: no plan fits %s per device", e.Algo, bytesLabel(e.MemoryBytes))
	switch {
	case e.LowerBound:
		return fmt.Sprintf("%s; every plan needs at least %s per device (a lower bound)", head, bytesLabel(e.MinMemoryBytes))
	case e.MinMemoryBytes <= 0:
		return head + ", and no memory makes one fit"
	case e.MinMemoryBytes < e.MemoryBytes:
		return fmt.Sprintf("%s, though it finds one at %s, its smallest (its plans are not monotone in the memory)",
			head, bytesLabel(e.MinMemoryBytes))
	}
	return fmt.Sprintf("%s; the smallest memory per device that fits is %s", head, bytesLabel(e.MinMemoryBytes))
}

// Hint tells the user what to do.
func (e *InfeasibleError) Hint() string {
	switch {
	case e.MinMemoryBytes <= 0:
		return ""
	case e.MinMemoryBytes < e.MemoryBytes:
		return fmt.Sprintf("try --memory %d", e.MinMemoryBytes)
	}
	return fmt.Sprintf("raise --memory to at least %d", e.MinMemoryBytes)
}

// Unwrap makes errors.Is(err, chainplan.ErrInfeasible) true.
func (e *InfeasibleError) Unwrap() error { return chainplan.ErrInfeasible }

// bytesLabel writes "512 B", or "3221225472 B (3.00 GiB)" for larger counts.
func bytesLabel(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%d B (%s)", n, chainplan.FormatBytes(n))
}

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
		if pr.opts.ActivationModel == ActivationsInput {
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
