package pipeplan

import (
	"fmt"
	"math"

	"github.com/chainplan/chainplan"
)

// ActivationModel says how a stage's stored activations are counted (DESIGN.md,
// "Pipeline plan").
type ActivationModel string

// The activation models.
const (
	// ActivationsSaved counts the stage input plus the measured saved_bytes of each of
	// its layers (the chain's ā, which includes each layer's output): what autograd
	// really keeps. The default.
	ActivationsSaved ActivationModel = "saved"
	// ActivationsInput counts each layer's input a_{ℓ−1}, as the paper does (spec §1.5,
	// item 2): ā_s = Σ_{ℓ∈s} a_{ℓ−1}.
	ActivationsInput ActivationModel = "input"
)

// DefaultWeightCopies is the C of spec §1.5 when a request does not say: the weights and
// their gradients, what chainplan's synchronous executor holds (docs/pipeline.md). Add one
// per buffer the optimizer keeps per weight (SGD with momentum: 3, Adam: 4); 3 without an
// optimizer is PipeDream-2BW's weight stashing, the paper's experiments. This constant is
// the one default of the CLI, the bindings and Python.
const DefaultWeightCopies = 2

// Options is the platform of spec §1.2 and the memory model's knobs. The zero value of
// every field but GPUs and Bandwidth means its default, so that a request that leaves a
// field out gets the same plan from the CLI and from Python.
type Options struct {
	// GPUs is P, the number of identical devices (1..MaxGPUs).
	GPUs int `json:"gpus,omitempty"`
	// MemoryBytes is M, the memory of each device in bytes (≥ 0). The solvers' smallest
	// memory searches ignore it.
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	// Bandwidth is β, the bandwidth of the link of each device pair, in bytes per time
	// unit of the chain (bytes per second for profiles chainplan takes); positive and
	// finite. One link carries both directions of a boundary, one at a time.
	Bandwidth float64 `json:"bandwidth,omitempty"`
	// WeightCopies is C, the number of copies of each layer's weights a device keeps
	// (0 means DefaultWeightCopies): weights and gradients (2), plus one per optimizer
	// buffer, or 3 for PipeDream-2BW weight stashing. 1 gives the model of the thesis'
	// chapter 5 proofs.
	WeightCopies int `json:"weight_copies,omitempty"`
	// ActivationModel is how stored activations are counted ("" means saved).
	ActivationModel ActivationModel `json:"activation_model,omitempty"`
	// Headroom is the share of each device's memory a plan leaves free, in [0, 1): plans
	// fit MemoryBytes·(1−Headroom) (Limit), for what no profile measures (allocator
	// fragmentation, a CUDA context).
	Headroom float64 `json:"headroom,omitempty"`
	// NoTemporaries leaves out what a rank holds only while an operation runs (the
	// operations' temporaries, the gradients being computed, the loss): the model of the
	// paper, which ignores transient memory (spec §1.5 item 4). By default they count
	// (docs/pipeline.md, "What a device holds").
	NoTemporaries bool `json:"no_temporaries,omitempty"`
	// Checkpoint lets a stage keep only its input between its forward and its backward and
	// recompute its activations when its gradient arrives, with rotor at the activation
	// memory its device has left (docs/pipeline.md, "Checkpointing inside stages").
	Checkpoint bool `json:"checkpoint,omitempty"`
}

// OptionError reports a bad platform or model option: the shared chainplan.OptionError,
// Planner "pipeline" and Field the request field's name (gpus, memory, bandwidth,
// weight_copies, activation_model, headroom, microbatches, time_limit_s), so that one
// errors.As finds the option errors of every planner. It wraps chainplan.ErrUnsupported.
type OptionError = chainplan.OptionError

// optionError is an *OptionError of the pipeline request ("pipeline: FIELD: MSG").
func optionError(field, msg string) *OptionError {
	return &OptionError{Planner: "pipeline", Field: field, Msg: msg}
}

// WithDefaults checks the options and fills in the defaults; errors are *OptionError.
func (o Options) WithDefaults() (Options, error) {
	if o.GPUs < 1 || o.GPUs > MaxGPUs {
		return o, optionError("gpus", fmt.Sprintf("want 1..%d devices (got %d)", MaxGPUs, o.GPUs))
	}
	if o.MemoryBytes < 0 {
		return o, optionError("memory", fmt.Sprintf("want bytes ≥ 0 (got %d)", o.MemoryBytes))
	}
	if b := o.Bandwidth; math.IsNaN(b) || math.IsInf(b, 0) || b <= 0 {
		return o, optionError("bandwidth", fmt.Sprintf("want a positive, finite number of bytes per second (got %v)", b))
	}
	switch {
	case o.WeightCopies == 0:
		o.WeightCopies = DefaultWeightCopies
	case o.WeightCopies < 0 || o.WeightCopies > maxWeightCopies:
		return o, optionError("weight_copies", fmt.Sprintf("want 1..%d copies: 2 for weights and gradients, one more per optimizer buffer (got %d)", maxWeightCopies, o.WeightCopies))
	}
	switch o.ActivationModel {
	case "":
		o.ActivationModel = ActivationsSaved
	case ActivationsSaved, ActivationsInput:
	default:
		return o, optionError("activation_model", fmt.Sprintf("want %q or %q (got %q)", ActivationsSaved, ActivationsInput, o.ActivationModel))
	}
	if h := o.Headroom; math.IsNaN(h) || h < 0 || h >= 1 {
		return o, optionError("headroom", fmt.Sprintf("want a share of the memory in [0, 1), such as 0.1 (got %v)", h))
	}
	return o, nil
}

// MaxGPUs bounds P: the planners' tables grow with it (PipeDream's DP has a row per
// device even when the chain has fewer layers).
const MaxGPUs = 4096

// maxWeightCopies bounds C: the thesis mentions up to 16 (ZeRO without pipelining, spec
// §1.5); more is a typo, and the bound keeps byte sums far from overflow.
const maxWeightCopies = 64
