package pipeline

import "fmt"

// This file is the one definition of what a stage costs in the model: the durations of its
// operations and the memory of each device. The validator checks plans against it and
// planner/pipesim simulates schedules with it, so that a plan and its simulation cannot
// disagree on the model.

// StageCost is what one stage costs its device in the model: the durations of its forward
// and backward, the bytes each mini-batch in flight keeps from the start of its forward to
// the end of its backward (ā), the transient bytes its forward and backward hold on top of
// that while they run (none in today's model: a simulator adds them while the operation
// runs, so a model that counts them is followed without change), and its static bytes (C
// copies of its weights; buffers depend on its neighbours: DeviceStatic).
type StageCost struct {
	Fwd, Bwd           float64
	Stored             int64
	FwdExtra, BwdExtra int64
	Weights            int64
}

// Cost returns the cost of stage s in p's model: F = Σ u_F and B = Σ u_B over the stage's
// layers (the loss folded into the last layer), Stored = ā (Stored), Weights = C·Σ W. The
// error names a stage that is not a range of p's layers.
func (p *Problem) Cost(s Stage) (StageCost, error) {
	if s.First < 1 || s.Last < s.First || s.Last > p.L() {
		return StageCost{}, fmt.Errorf("stage %d..%d is not a range of layers 1..%d", s.First, s.Last, p.L())
	}
	return StageCost{
		Fwd:     p.UF(s.First, s.Last),
		Bwd:     p.UB(s.First, s.Last),
		Stored:  p.Stored(s.First, s.Last),
		Weights: int64(p.opts.WeightCopies) * p.Weights(s.First, s.Last),
	}, nil
}

// DeviceStatic returns each device's static memory under an allocation: the weights of
// its stages and a buffer of 2·a for every boundary it borders (one activation and one
// gradient in transit each way; none at the chain's ends). Stages must name devices in
// 0..GPUs−1.
func (p *Problem) DeviceStatic(stages []Stage) []int64 {
	out := make([]int64, p.opts.GPUs)
	for k, s := range stages {
		out[s.GPU] += int64(p.opts.WeightCopies) * p.Weights(s.First, s.Last)
		if Crosses(stages, k) {
			buf := 2 * p.Out(s.Last)
			out[s.GPU] += buf
			out[stages[k+1].GPU] += buf
		}
	}
	return out
}
