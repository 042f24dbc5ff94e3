package pipeline

import (
	"fmt"
	"math"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
)

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
	opts   pipeplan.Options
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
// naming the option. The planners check their own sizes (CheckPlanning).
func NewProblem(c *chainplan.Chain, opts pipeplan.Options) (*Problem, error) {
	if c == nil {
		return nil, &chainplan.ChainError{Field: "stages", Msg: "no chain"}
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	o, err := opts.WithDefaults()
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

// WithoutCheckpoint returns the same problem with checkpointing inside stages off: a
// planner that may make stages recompute also plans without it and keeps the better plan,
// so that allowing recomputation never makes a plan worse (docs/pipeline.md).
func (p *Problem) WithoutCheckpoint() *Problem {
	q := *p
	q.opts.Checkpoint = false
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
func (p *Problem) Options() pipeplan.Options { return p.opts }

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
