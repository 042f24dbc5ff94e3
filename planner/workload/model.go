package workload

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/chainplan/chainplan"
)

// Fields is a set of the optional fields a model's source recorded.
type Fields uint

// The optional fields. Times, input/output bytes and parameter bytes are always known.
const (
	// FieldMemory: saved and temporary activation sizes (the chain's ā, o_F, o_B), which
	// rotor, pofo and search3d's memory filter need.
	FieldMemory Fields = 1 << iota
	// FieldShapes: input and output shapes (spatial dimensions for spatial parallelism).
	FieldShapes
	// FieldCounts: parameter elements split into weights and biases.
	FieldCounts
	// FieldModules: the convolutions and linear layers with channels and kernels (the
	// limits of filter, channel and spatial parallelism, and halos).
	FieldModules
	// FieldBatchTimes: layer times at several batch sizes.
	FieldBatchTimes
	// FieldOptimizer: the optimizer's step time and state bytes.
	FieldOptimizer
)

// Has reports whether every field of g is in f.
func (f Fields) Has(g Fields) bool { return f&g == g }

// fieldNames are the profile columns or keys that record each field (docs/formats.md).
var fieldNames = map[Fields]string{
	FieldMemory:     "saved_bytes, fwd_tmp_bytes, bwd_tmp_bytes",
	FieldShapes:     "in_shape, out_shape",
	FieldCounts:     "weight_count, bias_count",
	FieldModules:    "modules_json",
	FieldBatchTimes: "batch_times_json",
	FieldOptimizer:  "optimizer_step_time_s, optimizer_state_bytes",
}

// FieldName names the profile columns or metadata keys that record f.
func FieldName(f Fields) string { return fieldNames[f] }

// MissingError reports that a planner needs a field the model's source did not record.
type MissingError struct {
	Field Fields
	For   string // what needs it: "filter parallelism", "the memory filter", ...
	Model string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("%s needs the profile field %s, which %s does not record", e.For, FieldName(e.Field), e.Model)
}

// Hint says how to get the field.
func (e *MissingError) Hint() string {
	if e.Field == FieldMemory {
		return "profile the model with chainplan.profile (chain files from other tools may lack measured activation sizes)"
	}
	return "profile the model again with chainplan.profile (it records the parallel fields; docs/formats.md, \"Parallel fields\")"
}

// Unwrap makes errors.Is(err, chainplan.ErrUnsupported) true: the request cannot be served
// from this input.
func (e *MissingError) Unwrap() error { return chainplan.ErrUnsupported }

// Model is a network as the parallel planners see it (package comment). Build it with
// FromChain or FromProfile, or set every field and call Check.
type Model struct {
	Name string
	// BatchSize is b, the batch the layer times and activation sizes were measured at.
	BatchSize int64
	// DTypeBytes is δ, the bytes of one element of the compute dtype (reported only: sizes
	// are bytes throughout).
	DTypeBytes int64
	// InputBytes is a_0 at BatchSize (the chain input).
	InputBytes int64
	Layers     []Layer
	// Loss holds the loss's times and temporaries at BatchSize.
	Loss chainplan.Loss
	// Optimizer is the profiled optimizer; the zero value when not profiled (Known).
	Optimizer Optimizer
	// Known lists the optional fields the source recorded.
	Known Fields
}

// Optimizer is the optimizer's cost for the whole model.
type Optimizer struct {
	Name       string
	StepTimeS  float64 // one step over every parameter, seconds
	StateBytes int64   // its state after a step, bytes
}

// Layer is one layer l of ParaDL's abstraction (spec §2.3): element l of the chain.
type Layer struct {
	Name string
	// FwdTimeS and BwdTimeS are the layer's times at Model.BatchSize, seconds.
	FwdTimeS, BwdTimeS float64
	// BatchTimes holds the times at other batch sizes, in batch order (FieldBatchTimes).
	BatchTimes []BatchTime
	// InBytes and OutBytes are the input's and output's sizes at Model.BatchSize.
	InBytes, OutBytes int64
	// SavedBytes, FwdTmpBytes and BwdTmpBytes are the chain's ā, o_F and o_B at
	// Model.BatchSize (FieldMemory).
	SavedBytes, FwdTmpBytes, BwdTmpBytes int64
	// WeightBytes and BiasBytes are the parameters, δ·|w_l| and δ·|bi_l|; without
	// FieldCounts every parameter counts as a weight.
	WeightBytes, BiasBytes int64
	// UpdateTimeS is WU_l, the layer's share of one optimizer step, seconds per iteration
	// (the step time split in proportion to parameter bytes, spec §2.2).
	UpdateTimeS float64
	// Parts are the layer's convolutions and linear layers (FieldModules): what filter and
	// channel parallelism split and where spatial parallelism exchanges halos.
	Parts []Part
	// Spatial marks a layer that spatial parallelism splits (its input has spatial
	// dimensions and so do all layers before it; spec §2.5.3, 001:L505).
	Spatial bool
}

// BatchTime is a layer's forward and backward time at one batch size.
type BatchTime struct {
	Batch              int64
	FwdTimeS, BwdTimeS float64
}

// Part is one convolution or linear layer inside a layer.
type Part struct {
	Name string
	// InChannels and OutChannels are C and F (in and out features of a linear layer).
	InChannels, OutChannels int64
	// OutBytesPerSample is δ·|y| of this module, what filter parallelism all-gathers.
	OutBytesPerSample float64
	// Halo says the module exchanges halos when its layer is split spatially (a kernel
	// larger than 1 along the split dimension); HaloXBytes and HaloDYBytes are the bytes of
	// one direction's halo per sample, forward (x) and backward (dL/dy) (spec §2.5.3).
	Halo                    bool
	HaloXBytes, HaloDYBytes float64
	// Area is W·H (·D) of the module's input map, bounding the spatial degree; 0 for a
	// linear layer.
	Area int64
}

// L returns the number of layers.
func (m *Model) L() int { return len(m.Layers) }

// Need returns a *MissingError when the model lacks a field of f, naming what needs it.
func (m *Model) Need(f Fields, what string) error {
	for g := FieldMemory; g <= FieldOptimizer; g <<= 1 {
		if f.Has(g) && !m.Known.Has(g) {
			return &MissingError{Field: g, For: what, Model: m.label()}
		}
	}
	return nil
}

func (m *Model) label() string {
	if m.Name == "" {
		return "this model"
	}
	return fmt.Sprintf("model %q", m.Name)
}

// Check validates the model: at least one layer, positive batch, finite non-negative
// times and sizes. Errors wrap chainplan.ErrInvalidChain and name the layer.
func (m *Model) Check() error {
	if m.BatchSize < 1 {
		return fmt.Errorf("%w: workload batch size %d, want ≥ 1", chainplan.ErrInvalidChain, m.BatchSize)
	}
	if len(m.Layers) == 0 {
		return fmt.Errorf("%w: workload %s has no layers", chainplan.ErrInvalidChain, m.label())
	}
	if m.DTypeBytes < 0 || m.InputBytes < 0 {
		return fmt.Errorf("%w: workload %s: negative dtype or input size", chainplan.ErrInvalidChain, m.label())
	}
	bad := func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) || v < 0 }
	for i, l := range m.Layers {
		where := fmt.Sprintf("layer %d (%q)", i+1, l.Name)
		switch {
		case bad(l.FwdTimeS) || bad(l.BwdTimeS) || bad(l.UpdateTimeS):
			return fmt.Errorf("%w: workload %s: times must be finite and ≥ 0", chainplan.ErrInvalidChain, where)
		case min(l.InBytes, l.OutBytes, l.SavedBytes, l.FwdTmpBytes, l.BwdTmpBytes, l.WeightBytes, l.BiasBytes) < 0:
			return fmt.Errorf("%w: workload %s: sizes must be ≥ 0", chainplan.ErrInvalidChain, where)
		}
		for _, t := range l.BatchTimes {
			if t.Batch < 1 || bad(t.FwdTimeS) || bad(t.BwdTimeS) {
				return fmt.Errorf("%w: workload %s: batch time %+v", chainplan.ErrInvalidChain, where, t)
			}
		}
		if !slices.IsSortedFunc(l.BatchTimes, func(a, b BatchTime) int { return int(a.Batch - b.Batch) }) {
			return fmt.Errorf("%w: workload %s: batch times out of order", chainplan.ErrInvalidChain, where)
		}
	}
	return nil
}

// ParamBytes returns the layer's parameters, weights and biases.
func (l *Layer) ParamBytes() int64 { return l.WeightBytes + l.BiasBytes }

// TotalParamBytes returns Σ over layers of ParamBytes.
func (m *Model) TotalParamBytes() int64 {
	var s int64
	for i := range m.Layers {
		s += m.Layers[i].ParamBytes()
	}
	return s
}

// TimesAt returns the layer's forward and backward times at batch b (b > 0), given its
// time at base (the model's batch): linear between profiled batch sizes, proportional to
// the batch beyond the smallest and largest.
func (l *Layer) TimesAt(base int64, b float64) (fwd, bwd float64) {
	pts := l.points(base)
	if len(pts) == 1 || b <= float64(pts[0].Batch) {
		p := pts[0]
		r := b / float64(p.Batch)
		return p.FwdTimeS * r, p.BwdTimeS * r
	}
	last := pts[len(pts)-1]
	if b >= float64(last.Batch) {
		r := b / float64(last.Batch)
		return last.FwdTimeS * r, last.BwdTimeS * r
	}
	for i := 1; i < len(pts); i++ {
		lo, hi := pts[i-1], pts[i]
		if b <= float64(hi.Batch) {
			w := (b - float64(lo.Batch)) / float64(hi.Batch-lo.Batch)
			return lo.FwdTimeS + w*(hi.FwdTimeS-lo.FwdTimeS), lo.BwdTimeS + w*(hi.BwdTimeS-lo.BwdTimeS)
		}
	}
	panic("workload: TimesAt: unreachable")
}

// points returns the profiled (batch, times) points, the base batch's included, in order.
func (l *Layer) points(base int64) []BatchTime {
	pts := []BatchTime{{Batch: base, FwdTimeS: l.FwdTimeS, BwdTimeS: l.BwdTimeS}}
	for _, t := range l.BatchTimes {
		if t.Batch != base {
			pts = append(pts, t)
		}
	}
	slices.SortFunc(pts, func(a, b BatchTime) int { return int(a.Batch - b.Batch) })
	return pts
}

// ProfiledBatches returns the smallest and largest batch any layer was timed at.
func (m *Model) ProfiledBatches() (lo, hi int64) {
	lo, hi = m.BatchSize, m.BatchSize
	for _, l := range m.Layers {
		for _, t := range l.BatchTimes {
			lo, hi = min(lo, t.Batch), max(hi, t.Batch)
		}
	}
	return lo, hi
}

// scale returns size·b/base rounded up: a size measured at batch base, at batch b.
func scale(size int64, base int64, b float64) int64 {
	return int64(math.Ceil(float64(size) * b / float64(base)))
}

// ChainAt returns the model's chain at batch b: times from TimesAt, activation sizes
// scaled with the batch (rounded up), weights unchanged. It needs FieldMemory.
func (m *Model) ChainAt(b int64, what string) (*chainplan.Chain, error) {
	return m.SubChainAt(0, len(m.Layers), b, true, what)
}

// SubChainAt returns the chain of layers first..last−1 (0-based, half-open) at batch b,
// the loss included only with withLoss (a pipeline stage before the last ends with a
// free loss: the gradient of its output comes from the next stage). It needs FieldMemory.
func (m *Model) SubChainAt(first, last int, b int64, withLoss bool, what string) (*chainplan.Chain, error) {
	if err := m.Need(FieldMemory, what); err != nil {
		return nil, err
	}
	fb := float64(b)
	c := &chainplan.Chain{Format: chainplan.ChainFormat, InputBytes: scale(m.InputBytes, m.BatchSize, fb)}
	if first > 0 {
		c.InputBytes = scale(m.Layers[first-1].OutBytes, m.BatchSize, fb)
	}
	for i := first; i < last; i++ {
		l := &m.Layers[i]
		f, bw := l.TimesAt(m.BatchSize, fb)
		c.Stages = append(c.Stages, chainplan.Stage{Name: l.Name, FwdTime: f, BwdTime: bw,
			OutBytes: scale(l.OutBytes, m.BatchSize, fb), SavedBytes: scale(l.SavedBytes, m.BatchSize, fb),
			FwdTmpBytes: scale(l.FwdTmpBytes, m.BatchSize, fb), BwdTmpBytes: scale(l.BwdTmpBytes, m.BatchSize, fb),
			ParamBytes: l.ParamBytes()})
	}
	if withLoss {
		r := fb / float64(m.BatchSize)
		c.Loss = chainplan.Loss{FwdTime: m.Loss.FwdTime * r, BwdTime: m.Loss.BwdTime * r,
			FwdTmpBytes: scale(m.Loss.FwdTmpBytes, m.BatchSize, fb), BwdTmpBytes: scale(m.Loss.BwdTmpBytes, m.BatchSize, fb)}
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("workload %s at batch %d: %w", strings.TrimSpace(m.Name), b, err)
	}
	return c, nil
}
