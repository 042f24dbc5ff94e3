package pipeline

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
	GPUs int
	// MemoryBytes is M, the memory of each device in bytes (≥ 0). The solvers' smallest
	// memory searches ignore it.
	MemoryBytes int64
	// Bandwidth is β, the bandwidth of the link of each device pair, in bytes per time
	// unit of the chain (bytes per second for profiles chainplan takes); positive and
	// finite. One link carries both directions of a boundary, one at a time.
	Bandwidth float64
	// WeightCopies is C, the number of copies of each layer's weights a device keeps
	// (0 means DefaultWeightCopies): weights and gradients (2), plus one per optimizer
	// buffer, or 3 for PipeDream-2BW weight stashing. 1 gives the model of the thesis'
	// chapter 5 proofs.
	WeightCopies int
	// ActivationModel is how stored activations are counted ("" means saved).
	ActivationModel ActivationModel
	// Headroom is the share of each device's memory a plan leaves free, in [0, 1): plans
	// fit MemoryBytes·(1−Headroom) (Limit), for what no profile measures (allocator
	// fragmentation, a CUDA context).
	Headroom float64
	// NoTemporaries leaves out what a rank holds only while an operation runs (the
	// operations' temporaries, the gradients being computed, the loss): the model of the
	// paper, which ignores transient memory (spec §1.5 item 4). By default they count
	// (docs/pipeline.md, "What a device holds").
	NoTemporaries bool
	// Checkpoint lets a stage keep only its input between its forward and its backward and
	// recompute its activations when its gradient arrives, with rotor at the activation
	// memory its device has left (docs/pipeline.md, "Checkpointing inside stages").
	Checkpoint bool
}

// OptionError reports a bad platform or model option; Field is the request field's name
// (gpus, memory, bandwidth, weight_copies, activation_model, headroom). It wraps
// chainplan.ErrUnsupported.
type OptionError struct {
	Field string
	Msg   string
}

func (e *OptionError) Error() string { return fmt.Sprintf("pipeline: %s: %s", e.Field, e.Msg) }

// Unwrap makes errors.Is(err, chainplan.ErrUnsupported) true.
func (e *OptionError) Unwrap() error { return chainplan.ErrUnsupported }

// withDefaults checks the options and fills in the defaults.
func (o Options) withDefaults() (Options, error) {
	if o.GPUs < 1 || o.GPUs > MaxGPUs {
		return o, &OptionError{"gpus", fmt.Sprintf("want 1..%d devices (got %d)", MaxGPUs, o.GPUs)}
	}
	if o.MemoryBytes < 0 {
		return o, &OptionError{"memory", fmt.Sprintf("want bytes ≥ 0 (got %d)", o.MemoryBytes)}
	}
	if b := o.Bandwidth; math.IsNaN(b) || math.IsInf(b, 0) || b <= 0 {
		return o, &OptionError{"bandwidth", fmt.Sprintf("want a positive, finite number of bytes per second (got %v)", b)}
	}
	switch {
	case o.WeightCopies == 0:
		o.WeightCopies = DefaultWeightCopies
	case o.WeightCopies < 0 || o.WeightCopies > maxWeightCopies:
		return o, &OptionError{"weight_copies", fmt.Sprintf("want 1..%d copies: 2 for weights and gradients, one more per optimizer buffer (got %d)", maxWeightCopies, o.WeightCopies)}
	}
	switch o.ActivationModel {
	case "":
		o.ActivationModel = ActivationsSaved
	case ActivationsSaved, ActivationsInput:
	default:
		return o, &OptionError{"activation_model", fmt.Sprintf("want %q or %q (got %q)", ActivationsSaved, ActivationsInput, o.ActivationModel)}
	}
	if h := o.Headroom; math.IsNaN(h) || h < 0 || h >= 1 {
		return o, &OptionError{"headroom", fmt.Sprintf("want a share of the memory in [0, 1), such as 0.1 (got %v)", h)}
	}
	return o, nil
}

// MaxGPUs bounds P: the planners' tables grow with it (PipeDream's DP has a row per
// device even when the chain has fewer layers).
const MaxGPUs = 4096

// maxWeightCopies bounds C: the thesis mentions up to 16 (ZeRO without pipelining, spec
// §1.5); more is a typo, and the bound keeps byte sums far from overflow.
const maxWeightCopies = 64

// maxTotalBytes bounds every byte total of a chain (1 PiB): products with the copy count
// and group numbers then stay far within int64.
const maxTotalBytes = 1 << 50

// Layer is one layer of the model of spec §1.1: layer ℓ of the chain, the loss folded
// into layer L.
type Layer struct {
	Fwd    float64 // u_F
	Bwd    float64 // u_B
	Out    int64   // a_ℓ, the output (and its gradient δ_ℓ)
	Saved  int64   // the measured saved_bytes (output included)
	Param  int64   // W_ℓ, one copy of the weights
	FwdTmp int64   // o_F, the forward's temporaries on top of its input and ā
	BwdTmp int64   // o_B, the backward's temporaries on top of ā and both gradients
	// Freed is a_ℓ when neither this layer nor the next saved it (chainplan.chain/v2): a
	// stage that goes on past ℓ does not keep it for its backward. 0 otherwise.
	Freed int64
}

// Problem is the model of spec §1: a chain of L layers and a platform of P devices of
// memory M linked pairwise at bandwidth β, with the memory model's options. Build it with
// NewProblem; it is immutable, and its range sums cost O(1).
type Problem struct {
	layers []Layer
	input  int64 // a_0
	opts   Options
	chain  *chainplan.Chain // as given, the loss apart (recomputing stages replay on it)
	// Prefix sums over layers 1..ℓ (index 0 is 0).
	sumF, sumB          []float64
	sumW, sumIn, sumSav []int64
	// The transient memory of the operations (memory.go), one range-maximum table each.
	fwdAll, bwdAll, fwdCk rangeMax
	// sub is the rotor table of the recomputing stages, built on first use (recompute.go).
	sub *subTable
}

// NewProblem builds the model of c on the platform of opts. Layer ℓ is c.Stages[ℓ−1]:
// u_F = fwd_time, u_B = bwd_time, a_ℓ = out_bytes, W_ℓ = param_bytes, the measured
// saved_bytes kept for ActivationsSaved, and a_0 = input_bytes. The loss costs fold into
// layer L (spec §1.1's recommendation: the paper has no loss layer); its temporaries are
// not part of the model. Errors: the chain's *chainplan.ChainError, or an *OptionError
// naming the option.
func NewProblem(c *chainplan.Chain, opts Options) (*Problem, error) {
	if c == nil {
		return nil, &chainplan.ChainError{Field: "stages", Msg: "no chain"}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	l := len(c.Stages)
	p := &Problem{layers: make([]Layer, l), input: c.InputBytes, opts: o, chain: c, sub: &subTable{},
		sumF: make([]float64, l+1), sumB: make([]float64, l+1),
		sumW: make([]int64, l+1), sumIn: make([]int64, l+1), sumSav: make([]int64, l+1)}
	prevOut := c.InputBytes
	for i, s := range c.Stages {
		ly := Layer{Fwd: s.FwdTime, Bwd: s.BwdTime, Out: s.OutBytes, Saved: s.SavedBytes, Param: s.ParamBytes,
			FwdTmp: s.FwdTmpBytes, BwdTmp: s.BwdTmpBytes}
		if i+1 < l && !s.OutputSaved() && !c.Stages[i+1].InputSaved() && s.SavedBytes >= s.OutBytes {
			ly.Freed = s.OutBytes
		}
		if i == l-1 {
			ly.Fwd += c.Loss.FwdTime
			ly.Bwd += c.Loss.BwdTime
		}
		p.layers[i] = ly
		p.sumF[i+1] = p.sumF[i] + ly.Fwd
		p.sumB[i+1] = p.sumB[i] + ly.Bwd
		p.sumW[i+1] = p.sumW[i] + ly.Param
		p.sumIn[i+1] = p.sumIn[i] + prevOut
		p.sumSav[i+1] = p.sumSav[i] + ly.Saved - ly.Freed
		for _, t := range []struct {
			field string
			v     int64
		}{{"param_bytes", p.sumW[i+1]}, {"out_bytes", p.sumIn[i+1]}, {"saved_bytes", p.sumSav[i+1]}} {
			if t.v > maxTotalBytes {
				return nil, &chainplan.ChainError{Stage: i + 1, Name: s.Name, Field: t.field,
					Msg: fmt.Sprintf("the chain's total reaches %d bytes, above the 1 PiB the pipeline planners handle", t.v)}
			}
		}
		prevOut = s.OutBytes
	}
	if math.IsInf(p.sumF[l]+p.sumB[l], 0) {
		return nil, &chainplan.ChainError{Field: "stages", Msg: "the total time overflows"}
	}
	p.transients()
	return p, nil
}

// WithMemory returns the same problem with M = m bytes per device (the searches for the
// smallest memory use it). The copies share the recomputation table.
func (p *Problem) WithMemory(m int64) *Problem {
	q := *p
	q.opts.MemoryBytes = m
	return &q
}

// Limit returns the memory a plan may use on each device: M·(1−Headroom), rounded down.
func (p *Problem) Limit() int64 {
	if p.opts.Headroom == 0 {
		return p.opts.MemoryBytes
	}
	return int64(math.Floor(float64(p.opts.MemoryBytes) * (1 - p.opts.Headroom)))
}

// MemoryFor returns the smallest memory per device M whose Limit is at least need: what a
// smallest-memory search reports for a plan that needs need bytes.
func (p *Problem) MemoryFor(need int64) int64 {
	h := p.opts.Headroom
	if h == 0 || need <= 0 {
		return need
	}
	m := int64(math.Ceil(float64(need) / (1 - h)))
	for m > 0 && p.WithMemory(m-1).Limit() >= need {
		m--
	}
	for p.WithMemory(m).Limit() < need {
		m++
	}
	return m
}

// Chain returns the chain the problem was built from (the loss apart, as given).
func (p *Problem) Chain() *chainplan.Chain { return p.chain }

// Options returns the platform and model options, defaults filled in.
func (p *Problem) Options() Options { return p.opts }

// L returns the number of layers.
func (p *Problem) L() int { return len(p.layers) }

// Layer returns layer ℓ, 1 ≤ ℓ ≤ L.
func (p *Problem) Layer(l int) Layer { return p.layers[l-1] }

// Out returns a_ℓ for 0 ≤ ℓ ≤ L (a_0 is the chain input).
func (p *Problem) Out(l int) int64 {
	if l == 0 {
		return p.input
	}
	return p.layers[l-1].Out
}

// UF returns U_F(i..j) = Σ_{ℓ=i..j} u_F: the forward duration of stage (i..j).
func (p *Problem) UF(i, j int) float64 { return p.sumF[j] - p.sumF[i-1] }

// UB returns U_B(i..j), the backward duration of stage (i..j).
func (p *Problem) UB(i, j int) float64 { return p.sumB[j] - p.sumB[i-1] }

// U returns U(i,j) = U_F + U_B of stage (i..j).
func (p *Problem) U(i, j int) float64 { return p.UF(i, j) + p.UB(i, j) }

// Weights returns Σ_{ℓ=i..j} W_ℓ, one copy of the stage's weights.
func (p *Problem) Weights(i, j int) int64 { return p.sumW[j] - p.sumW[i-1] }

// Transfer returns the duration a_ℓ/β of one direction of boundary ℓ (the CF or CB of
// the stage ending at layer ℓ); 0 at the chain ends ℓ = 0 and ℓ = L, which never
// communicate.
func (p *Problem) Transfer(l int) float64 {
	if l <= 0 || l >= len(p.layers) {
		return 0
	}
	return float64(p.layers[l-1].Out) / p.opts.Bandwidth
}

// Comm returns C(ℓ) = 2a_ℓ/β, the link time of boundary ℓ in both directions (spec §1.2).
func (p *Problem) Comm(l int) float64 { return 2 * p.Transfer(l) }

// TotalWork returns U(1,L), the sequential compute time: the reference of speedups
// (spec §1.4).
func (p *Problem) TotalWork() float64 { return p.sumF[len(p.layers)] + p.sumB[len(p.layers)] }
