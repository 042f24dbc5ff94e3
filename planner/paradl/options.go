package paradl

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/chainplan/chainplan"
)

// Optimizer names for Options.Optimizer.
const (
	OptimizerAuto     = "auto"     // the profiled optimizer's state, else adam's
	OptimizerAdam     = "adam"     // two fp32 moments per parameter: 2 × parameter bytes
	OptimizerMomentum = "momentum" // SGD with momentum: 1 × parameter bytes
	OptimizerSGD      = "sgd"      // plain SGD: no state
	OptimizerNone     = "none"     // count no optimizer state (the paper's model)
)

// Options is an advise request. The zero value of every field but DatasetSize and the
// batch has a documented default.
type Options struct {
	// DatasetSize is D, the samples of one epoch (required, ≥ 1).
	DatasetSize int64 `json:"dataset_size,omitempty"`
	// GlobalBatch fixes B for every device count (strong scaling); BatchPerDevice sets
	// B = BatchPerDevice × p (weak scaling, ParaDL's default). Give exactly one.
	GlobalBatch    int64 `json:"global_batch,omitempty"`
	BatchPerDevice int64 `json:"batch_per_device,omitempty"`
	// Strategies lists the strategies to evaluate; nil means all of them (data+offloading
	// only when Offload is set, data+checkpointing only when Checkpoint is).
	Strategies []Strategy `json:"strategies,omitempty"`
	// Devices lists the device counts p to evaluate; nil means 1, 2, 4, ... up to the
	// cluster's size. Counts above the cluster's size are refused.
	Devices []int `json:"devices,omitempty"`
	// Goal ranks the candidates ("" means GoalTime).
	Goal Goal `json:"goal,omitempty"`
	// Gamma is γ; 0 calibrates it from the profile (spec §2.7), or 1 without measured
	// activation sizes.
	Gamma float64 `json:"gamma,omitempty"`
	// Optimizer is the optimizer whose state memory counts ("" means OptimizerAuto).
	Optimizer string `json:"optimizer,omitempty"`
	// Checkpoint makes data+checkpointing a candidate: rotor on the per-device chain when
	// data parallelism does not fit. Offload does the same with pofo (data+offloading),
	// which needs the cluster's host bandwidth.
	Checkpoint bool `json:"checkpoint,omitempty"`
	Offload    bool `json:"offload,omitempty"`
	// Segments is S, the pipeline's micro-batches; 0 means min(4p, B).
	Segments int `json:"segments,omitempty"`
	// Slots is the memory discretization of rotor and pofo (0: their defaults).
	Slots int64 `json:"slots,omitempty"`
}

// OptionError reports a bad option of the advise request; Field is the request field's
// name (dataset_size,
// global_batch, strategies, devices, goal, gamma, optimizer, segments, slots). It is the one chainplan.OptionError.
type OptionError = chainplan.OptionError

// optionError is the OptionError of field.
func optionError(field, msg string) error {
	return &OptionError{Planner: "advise", Field: field, Msg: msg}
}

// maxDatasetSize bounds D: epochs of 2⁴⁰ samples keep every product far from overflow.
const maxDatasetSize = 1 << 40

// withDefaults checks o against a cluster of n devices and fills in the defaults.
func (o Options) withDefaults(n int) (Options, error) {
	if o.DatasetSize < 1 || o.DatasetSize > maxDatasetSize {
		return o, optionError("dataset_size", fmt.Sprintf("want the samples of one epoch, 1..%d (got %d)", int64(maxDatasetSize), o.DatasetSize))
	}
	switch {
	case o.GlobalBatch == 0 && o.BatchPerDevice == 0:
		return o, optionError("global_batch", "give the global batch (strong scaling) or the batch per device (weak scaling)")
	case o.GlobalBatch != 0 && o.BatchPerDevice != 0:
		return o, optionError("global_batch", "give the global batch or the batch per device, not both")
	case o.GlobalBatch < 0 || o.GlobalBatch > maxDatasetSize:
		return o, optionError("global_batch", fmt.Sprintf("want ≥ 1 samples (got %d)", o.GlobalBatch))
	case o.BatchPerDevice < 0 || o.BatchPerDevice > maxDatasetSize/(1<<16):
		return o, optionError("batch_per_device", fmt.Sprintf("want ≥ 1 samples (got %d)", o.BatchPerDevice))
	}
	if o.Strategies == nil {
		for _, s := range Strategies {
			if (s == DataCheckpoint && !o.Checkpoint) || (s == DataOffload && !o.Offload) {
				continue
			}
			o.Strategies = append(o.Strategies, s)
		}
	}
	for _, s := range o.Strategies {
		if !slices.Contains(Strategies, s) {
			return o, optionError("strategies", fmt.Sprintf("unknown strategy %q (want one of %s)", s, strategyList()))
		}
	}
	if o.Devices == nil {
		for p := 1; p <= n; p *= 2 {
			o.Devices = append(o.Devices, p)
		}
	}
	for _, p := range o.Devices {
		if p < 1 || p > n {
			return o, optionError("devices", fmt.Sprintf("device count %d is outside 1..%d, the cluster's devices", p, n))
		}
	}
	o.Devices = slices.Compact(slices.Sorted(slices.Values(o.Devices)))
	switch o.Goal {
	case "":
		o.Goal = GoalTime
	case GoalTime, GoalCost, GoalMemory:
	default:
		return o, optionError("goal", fmt.Sprintf("unknown goal %q (want time, cost or memory)", o.Goal))
	}
	if math.IsNaN(o.Gamma) || math.IsInf(o.Gamma, 0) || o.Gamma < 0 {
		return o, optionError("gamma", fmt.Sprintf("want a positive factor, or 0 to calibrate (got %v)", o.Gamma))
	}
	switch o.Optimizer {
	case "":
		o.Optimizer = OptimizerAuto
	case OptimizerAuto, OptimizerAdam, OptimizerMomentum, OptimizerSGD, OptimizerNone:
	default:
		return o, optionError("optimizer", fmt.Sprintf("unknown optimizer %q (want auto, adam, momentum, sgd or none)", o.Optimizer))
	}
	if o.Segments < 0 {
		return o, optionError("segments", fmt.Sprintf("want ≥ 1 micro-batches, or 0 for min(4p, B) (got %d)", o.Segments))
	}
	if o.Slots < 0 {
		return o, optionError("slots", fmt.Sprintf("want ≥ 1 slots, or 0 for the default (got %d)", o.Slots))
	}
	return o, nil
}

// batch returns B at p devices.
func (o *Options) batch(p int) int64 {
	if o.GlobalBatch > 0 {
		return o.GlobalBatch
	}
	return o.BatchPerDevice * int64(p)
}

func (o *Options) scaling() string {
	if o.GlobalBatch > 0 {
		return "strong"
	}
	return "weak"
}

func strategyList() string {
	names := make([]string, len(Strategies))
	for i, s := range Strategies {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// ParseStrategies reads a comma-separated strategy list ("data,pipeline,df"); "all" or
// "" means every strategy (nil).
func ParseStrategies(s string) ([]Strategy, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "all" {
		return nil, nil
	}
	var out []Strategy
	for _, part := range strings.Split(s, ",") {
		st := Strategy(strings.TrimSpace(part))
		if !slices.Contains(Strategies, st) {
			return nil, optionError("strategies", fmt.Sprintf("unknown strategy %q (want one of %s)", st, strategyList()))
		}
		if !slices.Contains(out, st) {
			out = append(out, st)
		}
	}
	return out, nil
}
