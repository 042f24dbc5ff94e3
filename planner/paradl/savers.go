package paradl

import (
	"errors"
	"fmt"
	"math"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/offload"
	"github.com/chainplan/chainplan/planner/rotor"
)

// dataSaved is data parallelism whose per-device chain a memory saver plans (spec §5.2
// step d, the improvement ParaDL lacks): when plain data parallelism at p devices does not
// fit, rotor (data+checkpointing) or pofo (data+offloading) plans the chain at the
// per-device batch ⌈B/p⌉ within the memory left after weights, gradients and optimizer
// state, and the plan's extra time over a step without recomputation is charged to
// every iteration. ok is false when plain data parallelism fits (the saver would change
// nothing) or breaks a limit (p > B).
func (e *evaluator) dataSaved(p int, s Strategy) (c Candidate, ok bool, err error) {
	plain := e.finish(e.data(p))
	if plain.Feasible || int64(p) > plain.GlobalBatch {
		return Candidate{}, false, nil
	}
	c = e.data(p)
	c.Strategy = s
	c.Warnings = nil
	bp := (c.GlobalBatch + int64(p) - 1) / int64(p)
	ch, err := e.m.ChainAt(bp, string(s))
	if err != nil {
		return Candidate{}, false, err
	}
	static := int64(math.Ceil(e.weights(1))) + e.optState
	capacity := e.capacity(p)
	budget := capacity - static
	c.Memory = Memory{WeightBytes: int64(math.Ceil(e.weights(1))), OptimizerBytes: e.optState}
	sv := &Saver{Algo: "rotor", BudgetBytes: budget, BaseS: ch.SumTime()}
	if s == DataOffload {
		sv.Algo = "pofo"
	}
	c.Saver = sv
	if budget <= 0 {
		c.Infeasible = fmt.Sprintf("weights, gradients and optimizer state alone need %s per device, the devices have %s",
			bytesText(static), bytesText(capacity))
		return c, true, nil
	}
	var plan *chainplan.Plan
	if s == DataCheckpoint {
		ro := rotor.Options{Slots: e.o.Slots}
		if sv.MinBudgetBytes, err = rotor.MinBudget(ch, ro); err != nil {
			return Candidate{}, false, err
		}
		if budget >= sv.MinBudgetBytes {
			plan, err = rotor.Solve(ch, budget, ro)
		}
	} else {
		// pofo's smallest budget is a search of DP runs, each far dearer than rotor's:
		// it is searched only when the budget falls short (Solve's error carries it).
		po := offload.Options{BandwidthBytesPerS: e.hostBandwidth(p), Slots: e.o.Slots}
		plan, err = offload.SolvePOFO(ch, budget, po)
		var short *chainplan.InfeasibleError
		if errors.As(err, &short) {
			plan, err, sv.MinBudgetBytes = nil, nil, short.MinBudgetBytes
		}
	}
	if err != nil {
		return Candidate{}, false, err
	}
	if plan == nil {
		c.Infeasible = fmt.Sprintf("%s needs at least %s of activation memory at %d samples per device; %s is left after weights, gradients and optimizer state",
			sv.Algo, bytesText(sv.MinBudgetBytes), bp, bytesText(budget))
		c.Memory.ActivationBytes = sv.MinBudgetBytes
		return c, true, nil
	}
	sv.PeakBytes, sv.MakespanS = plan.PeakBytes, plan.Makespan
	c.Memory.ActivationBytes = plan.PeakBytes
	c.Compute.RecomputeS = float64(c.Iterations) * math.Max(0, plan.Makespan-sv.BaseS)
	return c, true, nil
}

// hostBandwidth is the smallest device↔host bandwidth of devices 0..p−1.
func (e *evaluator) hostBandwidth(p int) float64 {
	bw := math.Inf(1)
	for i := range p {
		bw = math.Min(bw, e.c.Nodes[e.c.NodeOf(i)].HostBandwidth)
	}
	return bw
}
