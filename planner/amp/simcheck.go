package amp

import (
	"fmt"
	"math"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/pipeline"
	"github.com/chainplan/chainplan/planner/pipesim"
	"github.com/chainplan/chainplan/planner/workload"
)

// SimDivergence is the relative gap between a candidate's predicted pipeline time (Eq. 5)
// and pipesim's simulated one beyond which Search warns (docs/parallel.md, "The pipesim
// check"). Eq. 5 is exact for 1F1B with equal stages and free transfers; uneven stages,
// transfers that the next stage waits for and the flush make up the usual gap, a few per
// cent on the shipped examples.
const SimDivergence = 0.10

// SimCheck is pipesim's event-by-event run of a candidate's pipeline: one iteration (gas
// micro-batches and the flush) under the schedule the search assumes, each stage on a
// device of its own with the candidate's stage times, transfers on one link per
// boundary and direction at that boundary's bandwidth and latency (the slowest pair of
// the two stages' replicas, as Eq. 5's e), and the stages rotor checkpointed recomputing with rotor's sequence within the memory their
// devices have left.
type SimCheck struct {
	// Schedule is pipesim's schedule (1f1b-flush or gpipe); Microbatches the gas simulated.
	Schedule     string `json:"schedule"`
	Microbatches int    `json:"microbatches"`
	// PipelineTimeS is the simulated time of one iteration's pipeline (its makespan), to
	// compare with the candidate's PipelineTimeS; Divergence is (simulated − predicted) /
	// predicted.
	PipelineTimeS float64 `json:"pipeline_time_s"`
	Divergence    float64 `json:"divergence"`
	// Stages are the simulated stages, in order.
	Stages []SimStage `json:"stages"`
	// Fits is false when a stage's simulated peak exceeds its devices' memory.
	Fits bool `json:"fits"`
}

// SimStage is what pipesim measured of one stage.
type SimStage struct {
	// InFlight is the most micro-batches whose activations the stage held at once (the
	// memory filter assumed Stage.InFlight).
	InFlight int `json:"in_flight"`
	// PeakBytes is the most one of its devices held: weights, gradients, optimizer state
	// (split over tmp), boundary buffers, the activations in flight and the transients.
	PeakBytes int64 `json:"peak_bytes"`
	// Bubble is the idle share of its device over the iteration.
	Bubble float64 `json:"bubble"`
	// Recompute says how a stage rotor checkpointed recomputed (RecomputeRotor,
	// RecomputeLeast, RecomputeWhole); empty when the stage keeps its activations.
	Recompute string `json:"recompute,omitempty"`
}

// How a checkpointed stage recomputes in the simulation (SimStage.Recompute).
const (
	// RecomputeRotor: rotor's sequence within the memory its device has left in
	// planner/pipeline's model, as the memory filter planned.
	RecomputeRotor = "rotor"
	// RecomputeLeast: that model leaves no budget any sequence fits (it counts boundary
	// buffers and whole optimizer copies the filter does not): rotor's sequence at its
	// smallest budget, whose peak then exceeds the devices' memory.
	RecomputeLeast = "rotor-least"
	// RecomputeWhole: no rotor sequence exists for the stage (its table cannot be
	// built): the stage recomputes its whole forward before its backward.
	RecomputeWhole = "whole"
)

// checkPipelines runs the pipesim check on every candidate with pp > 1 (and Megatron's
// pick) and returns the warnings of those whose simulation disagrees with the prediction.
// Without measured memory (MemoryOff with the AMP cut) it checks nothing and says so.
func (s *searcher) checkPipelines(res *Result) error {
	if !s.m.Known.Has(workload.FieldMemory) {
		s.notes = append(s.notes, "pipesim check skipped: the model has no measured activation sizes")
		return nil
	}
	check := func(c *Candidate, name string) error {
		if c.PP < 2 {
			return nil
		}
		sc, err := s.simulate(c)
		if err != nil {
			return fmt.Errorf("search3d: the pipesim check of %s: %w", name, err)
		}
		c.Simulated = sc
		res.Warnings = append(res.Warnings, sc.warnings(c, name)...)
		return nil
	}
	for i := range res.Candidates {
		c := &res.Candidates[i]
		if err := check(c, fmt.Sprintf("candidate %d (pp=%d dp=%d tmp=%d mbs=%d)", c.Rank, c.PP, c.DP, c.TMP, c.MBS)); err != nil {
			return err
		}
	}
	if res.Megatron != nil {
		return check(res.Megatron, "Megatron's pick")
	}
	return nil
}

// warnings says where the simulation of c disagrees with its prediction.
func (sc *SimCheck) warnings(c *Candidate, name string) []string {
	var out []string
	if math.Abs(sc.Divergence) > SimDivergence {
		out = append(out, fmt.Sprintf("%s: pipesim's pipeline time %.4g s differs from the predicted %.4g s by %+.1f%% (more than %.0f%%)",
			name, sc.PipelineTimeS, c.PipelineTimeS, 100*sc.Divergence, 100*SimDivergence))
	}
	for j, st := range sc.Stages {
		want := c.Stages[j]
		if st.PeakBytes > want.CapacityBytes {
			out = append(out, fmt.Sprintf("%s: stage %d's simulated peak %s exceeds its devices' %s (the memory filter predicted %s)",
				name, j, chainplan.FormatBytes(st.PeakBytes), chainplan.FormatBytes(want.CapacityBytes), chainplan.FormatBytes(want.MemoryBytes)))
		}
		if st.InFlight > want.InFlight {
			out = append(out, fmt.Sprintf("%s: stage %d held %d micro-batches in flight, the memory filter assumed %d",
				name, j, st.InFlight, want.InFlight))
		}
		switch st.Recompute {
		case RecomputeLeast:
			out = append(out, fmt.Sprintf("%s: stage %d: no rotor budget fits its devices in the simulator's memory model; simulated at rotor's smallest budget", name, j))
		case RecomputeWhole:
			out = append(out, fmt.Sprintf("%s: stage %d: no rotor sequence for the stage; simulated recomputing its forward whole", name, j))
		}
	}
	return out
}

// simulate runs pipesim on candidate c (pp > 1).
func (s *searcher) simulate(c *Candidate) (*SimCheck, error) {
	g := Degrees{PP: c.PP, DP: c.DP, TMP: c.TMP, MBS: c.MBS}
	lay := s.newLayout(g, c.Placement)
	ch, err := s.simChain(c)
	if err != nil {
		return nil, err
	}
	// Each boundary on its own link, the slowest pair of the two stages' replicas (Eq. 5's
	// e); the problem's bandwidth then only sizes nothing.
	bounds := make([]pipesim.BoundaryLink, len(lay.stageLink))
	for k, l := range lay.stageLink {
		bounds[k] = pipesim.BoundaryLink{Bandwidth: math.Min(l.Bandwidth, math.MaxFloat64), LatencyS: l.LatencyS}
	}
	checkpointed := c.Checkpointed > 0
	pr, err := pipeline.NewProblem(ch, pipeplan.Options{GPUs: c.PP, Bandwidth: 1, WeightCopies: s.weightCopies(),
		ActivationModel: pipeplan.ActivationsSaved, Checkpoint: checkpointed})
	if err != nil {
		return nil, err
	}
	sc := &SimCheck{Schedule: string(pipesim.OneFOneBFlush), Microbatches: c.GAS, Fits: true,
		Stages: make([]SimStage, c.PP)}
	if s.o.Schedule == ScheduleGPipe {
		sc.Schedule = string(pipesim.GPipe)
	}
	stages := make([]pipeplan.Stage, c.PP)
	var whole []int
	for j, st := range c.Stages {
		stages[j] = pipeplan.Stage{First: st.FirstLayer, Last: st.LastLayer, GPU: j}
		if st.Checkpoint == nil {
			continue
		}
		// The budget pipeline's model leaves the stage's backward with InFlight inputs kept,
		// and rotor's sequence within it; none: the whole forward recomputed.
		_, budget, ok := pr.RecomputeFit(st.FirstLayer, st.LastLayer, st.InFlight, st.CapacityBytes)
		sc.Stages[j].Recompute = RecomputeRotor
		if !ok {
			budgets := pr.RecomputeBudgets(st.FirstLayer, st.LastLayer)
			if len(budgets) == 0 {
				whole = append(whole, j)
				sc.Stages[j].Recompute = RecomputeWhole
				continue
			}
			budget = budgets[0]
			sc.Stages[j].Recompute = RecomputeLeast
		}
		if stages[j], err = pr.RecomputeStage(st.FirstLayer, st.LastLayer, j, budget); err != nil {
			return nil, err
		}
	}
	su, err := pipesim.NewSetup(pr, stages, pipesim.SetupOptions{Links: true, Boundaries: bounds, Checkpointed: whole})
	if err != nil {
		return nil, err
	}
	r, err := pipesim.Simulate(su, pipesim.Options{Schedule: pipesim.Schedule(sc.Schedule), Microbatches: c.GAS, Minibatches: 1})
	if err != nil {
		return nil, err
	}
	sc.PipelineTimeS = r.Makespan
	if c.PipelineTimeS > 0 {
		sc.Divergence = (r.Makespan - c.PipelineTimeS) / c.PipelineTimeS
	}
	for j := range sc.Stages {
		st := &sc.Stages[j]
		st.InFlight = r.PerStage[j].PeakInflight
		st.Bubble = r.PerStage[j].Bubble
		st.PeakBytes = r.PerDevice[j].PeakBytes
		if st.PeakBytes > c.Stages[j].CapacityBytes {
			sc.Fits = false
		}
	}
	return sc, nil
}

// simChain returns the model's chain at c's micro-batch size with c's stage times: each
// stage's layers (its loss included on the last) scaled so that their forward and
// backward sum to the stage's time per micro-batch before any recomputation (the device
// speed, the tensor split and its all-reduces folded in; the simulation recomputes), and
// their parameters divided over the tmp devices that each hold a share.
func (s *searcher) simChain(c *Candidate) (*chainplan.Chain, error) {
	ch, err := s.m.ChainAt(int64(c.MBS), "search3d's pipesim check")
	if err != nil {
		return nil, err
	}
	for j, st := range c.Stages {
		layers := ch.Stages[st.FirstLayer-1 : st.LastLayer]
		last := j == len(c.Stages)-1
		var sum float64
		for _, l := range layers {
			sum += l.FwdTime + l.BwdTime
		}
		if last {
			sum += ch.Loss.FwdTime + ch.Loss.BwdTime
		}
		want := st.TimeS - st.RecomputeS
		for i := range layers {
			l := &layers[i]
			if sum > 0 {
				l.FwdTime *= want / sum
				l.BwdTime *= want / sum
			} else if i == len(layers)-1 {
				l.BwdTime = want // nothing was measured: the stage's time as one backward
			}
			l.ParamBytes = (l.ParamBytes + int64(c.TMP) - 1) / int64(c.TMP)
		}
		if last && sum > 0 {
			ch.Loss.FwdTime *= want / sum
			ch.Loss.BwdTime *= want / sum
		}
	}
	return ch, nil
}
