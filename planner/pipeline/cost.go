package pipeline

import (
	"fmt"

	"github.com/chainplan/chainplan/pipeplan"
)

// This file is the one definition of what a stage costs in the model: the durations of its
// operations and the memory of each device. The validator checks plans against it and
// planner/pipesim simulates schedules with it, so that a plan and its simulation cannot
// disagree on the model.

// StageCost is what one stage costs its device in the model (docs/pipeline.md, "What a
// device holds"): the durations of its forward and backward, the bytes each mini-batch in
// flight keeps from the start of its forward to the end of its backward, the transient
// bytes its forward and backward hold on top of that while they run, and its static bytes
// (C copies of its weights; buffers depend on its neighbours: Buffers, DeviceStatic).
//
// It is the one definition of a stage's time and memory: the planners, the validator's
// durations and a simulator of the plans (planner/pipesim) read it.
type StageCost struct {
	Fwd, Bwd           float64
	Stored             int64
	FwdExtra, BwdExtra int64
	Weights            int64
}

// Cost returns the cost of stage s in p's model: recording its graph, or recomputing with
// its rotor sequence (whose replay gives the backward's duration; its budget bounds the
// backward's memory above the stage input). Errors: a
// stage out of p's layers, or a recomputing stage whose sequence does not replay within
// its budget (wrapping chainplan.ErrInvalidPlan).
func (p *Problem) Cost(s pipeplan.Stage) (StageCost, error) {
	if s.First < 1 || s.Last < s.First || s.Last > p.L() {
		return StageCost{}, fmt.Errorf("stage %d..%d is not a range of layers 1..%d", s.First, s.Last, p.L())
	}
	c := StageCost{Fwd: p.UF(s.First, s.Last), Weights: int64(p.opts.WeightCopies) * p.Weights(s.First, s.Last)}
	if s.Recompute == nil {
		c.Bwd = p.UB(s.First, s.Last)
		c.Stored = p.Stored(s.First, s.Last)
		c.FwdExtra, c.BwdExtra = p.Transients(s.First, s.Last)
		return c, nil
	}
	rep := p.replay(s)
	if !rep.Valid {
		return StageCost{}, fmt.Errorf("stage %d..%d: its recomputation: %w", s.First, s.Last, rep.Err())
	}
	fwd, lossBwd := p.recomputeExtras(s.First, s.Last)
	c.Bwd = p.lossBwdTime(s.Last) + rep.Makespan
	c.Stored = p.recomputeStored(s.First, s.Last)
	// The budget, not the replay's peak (at most the budget), so that the planners, which
	// decide on budgets, and the document agree.
	c.FwdExtra, c.BwdExtra = fwd, max(s.Recompute.BudgetBytes, lossBwd)
	return c, nil
}

// SoleMemory returns the peak of a device that holds stage s alone with g mini-batches in
// flight: its weights, its buffers, g mini-batches' stored bytes and the larger of its
// transients (the contiguous plans' device memory, StageMemory for a recording stage).
func (p *Problem) SoleMemory(s pipeplan.Stage, g int) (int64, error) {
	c, err := p.Cost(s)
	if err != nil {
		return 0, err
	}
	return c.Weights + p.Buffers(s.First, s.Last) + inFlight(g, c.Stored) + max(c.FwdExtra, c.BwdExtra), nil
}

// DeviceStatic returns each device's static memory under an allocation: the weights of
// its stages and a buffer of 2·a for every boundary it borders (one activation and one
// gradient in transit each way; none at the chain's ends). Stages must name devices in
// 0..GPUs−1.
func (p *Problem) DeviceStatic(stages []pipeplan.Stage) []int64 {
	out := make([]int64, p.opts.GPUs)
	for k, s := range stages {
		out[s.GPU] += int64(p.opts.WeightCopies) * p.Weights(s.First, s.Last)
		if pipeplan.Crosses(stages, k) {
			buf := 2 * p.Out(s.Last)
			out[s.GPU] += buf
			out[stages[k+1].GPU] += buf
		}
	}
	return out
}
