package paradl

import (
	"fmt"
	"math"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/cluster"
	"github.com/chainplan/chainplan/planner/rotor"
	"github.com/chainplan/chainplan/planner/workload"
)

// evaluator holds what every candidate of one request shares.
type evaluator struct {
	m *workload.Model
	c *cluster.Cluster
	o Options
	// gamma is γ and gammaSource how it was obtained.
	gamma       float64
	gammaSource string
	// optName and optState are the optimizer counted and its state for the whole model.
	optName  string
	optState int64
	notes    []string
	// sumW is Σ δ|w_l|, the weights whose gradients data parallelism all-reduces.
	sumW float64
	// lastPart is the network's last partitioned module when it belongs to the last
	// layer: its output is not gathered (spec §2.9-1); nil otherwise.
	lastPart *workload.Part
}

func newEvaluator(m *workload.Model, c *cluster.Cluster, o Options) (*evaluator, error) {
	e := &evaluator{m: m, c: c, o: o}
	for i := range m.Layers {
		e.sumW += float64(m.Layers[i].WeightBytes)
	}
	if last := &m.Layers[len(m.Layers)-1]; len(last.Parts) > 0 {
		e.lastPart = &last.Parts[len(last.Parts)-1]
	}
	e.optimizer()
	if err := e.calibrate(); err != nil {
		return nil, err
	}
	if !m.Known.Has(workload.FieldOptimizer) {
		e.notes = append(e.notes, fmt.Sprintf("weight-update time not profiled (%s): WU counts as 0",
			workload.FieldName(workload.FieldOptimizer)))
	}
	if !c.Homogeneous() {
		e.notes = append(e.notes, "heterogeneous cluster: every device runs at the profile's speed and candidates use devices 0..p−1; ParaDL assumes identical devices (search3d models device types)")
	}
	if !m.Known.Has(workload.FieldBatchTimes) {
		e.notes = append(e.notes, fmt.Sprintf("times profiled at batch %d only: per-sample times are taken as constant at other batches",
			m.BatchSize))
	}
	return e, nil
}

// optimizer sets the optimizer state counted in memory (spec §2.12-11: the paper omits it).
func (e *evaluator) optimizer() {
	params := e.m.TotalParamBytes()
	switch name := e.o.Optimizer; {
	case name == OptimizerAuto && e.m.Known.Has(workload.FieldOptimizer):
		e.optName, e.optState = e.m.Optimizer.Name+" (profiled)", e.m.Optimizer.StateBytes
	case name == OptimizerAuto, name == OptimizerAdam:
		e.optName, e.optState = OptimizerAdam, 2*params
		if name == OptimizerAuto {
			e.notes = append(e.notes, "optimizer state not profiled: Adam's two moments per parameter assumed (--optimizer to choose)")
		}
	case name == OptimizerMomentum:
		e.optName, e.optState = name, params
	default:
		e.optName, e.optState = name, 0
	}
}

// calibrate sets γ (spec §2.7): the measured memory of one training step on one device at
// the profiled batch b, over the naive sum δΣ(2b(|x|+|y|) + 2|w| + |bi|). The measured
// memory is the chain's store-all peak (activations, replayed by the simulator from the
// measured sizes) plus weights and their gradients.
func (e *evaluator) calibrate() error {
	switch {
	case e.o.Gamma > 0:
		e.gamma, e.gammaSource = e.o.Gamma, "given"
		return nil
	case !e.m.Known.Has(workload.FieldMemory):
		e.gamma, e.gammaSource = 1, "1: the profile has no measured activation sizes to calibrate it"
		return nil
	}
	ch, err := e.m.ChainAt(e.m.BatchSize, "γ calibration")
	if err != nil {
		return err
	}
	b := float64(e.m.BatchSize)
	var weights float64
	for i := range e.m.Layers {
		weights += 2*float64(e.m.Layers[i].WeightBytes) + float64(e.m.Layers[i].BiasBytes)
	}
	naive := e.activations(b, func(int) float64 { return 1 }) + weights
	measured := float64(rotor.StoreAllPeak(ch)) + weights
	e.gamma = measured / naive
	e.gammaSource = fmt.Sprintf("calibrated at batch %d: the measured store-all peak (%s) plus weights and gradients, over the naive sum",
		e.m.BatchSize, chainplan.FormatBytes(rotor.StoreAllPeak(ch)))
	return nil
}

// supports returns an error when strategy s needs a field the model lacks, or cannot apply.
func (e *evaluator) supports(s Strategy) error {
	need := func(f workload.Fields) error { return e.m.Need(f, string(s)+" parallelism") }
	switch s {
	case Filter, Channel, DataFilter:
		if err := need(workload.FieldModules); err != nil {
			return err
		}
		if e.parts() == 0 {
			return fmt.Errorf("%w: %s parallelism: the model has no convolution or linear layer to split", chainplan.ErrUnsupported, s)
		}
	case Spatial, DataSpatial:
		if err := need(workload.FieldModules | workload.FieldShapes); err != nil {
			return err
		}
		if !e.m.Layers[0].Spatial {
			return fmt.Errorf("%w: %s parallelism: the model's input has no spatial dimensions to split", chainplan.ErrUnsupported, s)
		}
	case Layer, Pipeline:
		return e.checkPartition(s)
	case DataCheckpoint:
		return need(workload.FieldMemory)
	case DataOffload:
		if err := need(workload.FieldMemory); err != nil {
			return err
		}
		if e.c.Nodes[0].HostBandwidth <= 0 {
			return fmt.Errorf("%w: data+offloading needs the device↔host bandwidth: give host_bw in the cluster file", chainplan.ErrUnsupported)
		}
	}
	return nil
}

func (e *evaluator) parts() int {
	n := 0
	for i := range e.m.Layers {
		n += len(e.m.Layers[i].Parts)
	}
	return n
}

// perSample returns layer l's forward+backward time per sample at batch b.
func (e *evaluator) perSample(l *workload.Layer, b float64) float64 {
	f, w := l.TimesAt(e.m.BatchSize, b)
	return (f + w) / b
}

// xy returns δ(|x_l| + |y_l|), the layer's input and output bytes per sample.
func (e *evaluator) xy(l *workload.Layer) float64 {
	return float64(l.InBytes+l.OutBytes) / float64(e.m.BatchSize)
}

// activations returns Σ_l 2b(|x_l|+|y_l|)δ / div(l): the naive activation memory at batch b.
func (e *evaluator) activations(b float64, div func(l int) float64) float64 {
	var s float64
	for i := range e.m.Layers {
		s += 2 * b * e.xy(&e.m.Layers[i]) / div(i)
	}
	return s
}

// weights returns Σ_l (2δ|w_l|/wdiv + δ|bi_l|): weights, their gradients and biases.
func (e *evaluator) weights(wdiv float64) float64 {
	var s float64
	for i := range e.m.Layers {
		s += 2*float64(e.m.Layers[i].WeightBytes)/wdiv + float64(e.m.Layers[i].BiasBytes)
	}
	return s
}

// memory fills a candidate's memory: γ times activations and weights, the optimizer state
// divided by optDiv (the devices sharing the weights).
func (e *evaluator) memory(c *Candidate, act, weights, optDiv float64) {
	c.Memory.ActivationBytes = int64(math.Ceil(e.gamma * act))
	c.Memory.WeightBytes = int64(math.Ceil(e.gamma * weights))
	c.Memory.OptimizerBytes = int64(math.Ceil(float64(e.optState) / optDiv))
}

// iterations returns I = ⌈D/B⌉.
func (e *evaluator) iterations(b int64) int64 { return (e.o.DatasetSize + b - 1) / b }

// share returns ⌈D/p⌉, the samples one of p devices splitting the dataset processes.
func (e *evaluator) share(p int) float64 {
	return float64((e.o.DatasetSize + int64(p) - 1) / int64(p))
}

// updates returns Σ_l WU_l / div(l), one iteration's weight update.
func (e *evaluator) updates(div func(l int) float64) float64 {
	var s float64
	for i := range e.m.Layers {
		s += e.m.Layers[i].UpdateTimeS / div(i)
	}
	return s
}

func one(int) float64 { return 1 }

// base returns a candidate with the fields every strategy sets.
func (e *evaluator) base(s Strategy, p int) Candidate {
	b := e.o.batch(p)
	return Candidate{Strategy: s, Devices: p, GlobalBatch: b, Iterations: e.iterations(b)}
}

// group returns the link of devices 0..p−1.
func (e *evaluator) group(p int) cluster.Link { return e.c.Group(cluster.Range(0, p)) }

func bytesText(n int64) string { return chainplan.FormatBytes(n) }
