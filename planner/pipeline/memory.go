package pipeline

import (
	"math"

	"github.com/chainplan/chainplan/pipeplan"
)

// What a device holds (docs/pipeline.md, "What a device holds"). A device keeps, for its
// whole life, C copies of the weights of its stages and the buffers of the boundaries it
// borders (static memory); each mini-batch in flight on one of its stages keeps that
// stage's stored bytes from the start of its forward to the end of its backward; and while
// an operation runs, its transient memory comes on top:
//
//   - the forward of a stage that records its graph (the default) needs the largest of its
//     layers' forward temporaries o_F: its input and what it saves are already counted in
//     its stored bytes;
//   - a backward holds the gradient it received and the one it computes next to what is
//     stored: the largest a_ℓ + a_{ℓ−1} + o_B(ℓ) over its layers (the first stage computes
//     no gradient for the chain input); the last stage also runs the loss's backward,
//     a_L + o_B(loss), and keeps what the loss saved, o_F(loss), from its forward on;
//   - a recomputing stage (recompute.go) stores only its input; its forward runs without
//     a graph, holding one layer's input and output and o_F at a time, and its backward
//     holds what the replay of its rotor sequence measures above the input.
//
// With Options.NoTemporaries the transient terms and the loss are left out: the paper's
// model (spec §1.5 item 4).

// rangeMax answers the largest of v[i..j] in O(1) (a sparse table, O(n log n) to build).
type rangeMax struct{ t [][]int64 }

func newRangeMax(v []int64) rangeMax {
	n := len(v)
	t := [][]int64{append([]int64(nil), v...)}
	for w := 1; 2*w <= n; w *= 2 {
		prev := t[len(t)-1]
		row := make([]int64, n-2*w+1)
		for i := range row {
			row[i] = max(prev[i], prev[i+w])
		}
		t = append(t, row)
	}
	return rangeMax{t}
}

// of returns max v[i..j] (0-based, inclusive), 0 for an empty range.
func (r rangeMax) of(i, j int) int64 {
	if j < i {
		return 0
	}
	k := 0
	for 1<<(k+1) <= j-i+1 {
		k++
	}
	return max(r.t[k][i], r.t[k][j-(1<<k)+1])
}

// transients builds the range tables of the per-layer transient terms (index ℓ−1).
func (p *Problem) transients() {
	l := len(p.layers)
	fa, ba, fc := make([]int64, l), make([]int64, l), make([]int64, l)
	for i, ly := range p.layers {
		fa[i] = ly.FwdTmp
		ba[i] = ly.Out + p.Out(i) + ly.BwdTmp
		fc[i] = p.Out(i) + ly.Out + ly.FwdTmp
	}
	p.fwdAll, p.bwdAll, p.fwdCk = newRangeMax(fa), newRangeMax(ba), newRangeMax(fc)
}

// temporaries reports whether the model counts transient memory.
func (p *Problem) temporaries() bool { return !p.opts.NoTemporaries }

// lossKeep returns what the last stage keeps per mini-batch for the loss's backward,
// o_F(loss), when j is the last layer and the model counts it.
func (p *Problem) lossKeep(j int) int64 {
	if j < len(p.layers) || !p.temporaries() {
		return 0
	}
	return p.chain.Loss.FwdTmpBytes
}

// Stored returns the bytes one mini-batch in flight keeps on the device of stage (i..j)
// when the stage records its graph: Σ_{ℓ=i..j} a_{ℓ−1} under ActivationsInput, a_{i−1} +
// Σ saved_bytes under ActivationsSaved, less the outputs of layers i..j−1 that neither
// they nor the next layer saved (Layer.Freed; the stage's own output stays), plus what the
// loss keeps on the last stage.
func (p *Problem) Stored(i, j int) int64 {
	if p.opts.ActivationModel == pipeplan.ActivationsInput {
		return p.sumIn[j] - p.sumIn[i-1] + p.lossKeep(j)
	}
	return p.Out(i-1) + p.sumSav[j] - p.sumSav[i-1] + p.layers[j-1].Freed + p.lossKeep(j)
}

// Transients returns the memory the forward and the backward of stage (i..j) hold on top
// of what is stored when the stage records its graph (0 without temporaries).
func (p *Problem) Transients(i, j int) (fwd, bwd int64) {
	if !p.temporaries() {
		return 0, 0
	}
	fwd = p.fwdAll.of(i-1, j-1)
	bwd = p.bwdAll.of(i, j-1) // layers i+1..j
	first := p.layers[i-1].Out + p.layers[i-1].BwdTmp
	if i > 1 {
		first += p.Out(i - 1) // δ_{i−1}, sent back; the chain input has no gradient
	}
	bwd = max(bwd, first)
	if j == len(p.layers) {
		bwd = max(bwd, p.Out(j)+p.chain.Loss.BwdTmpBytes)
	}
	return fwd, bwd
}

// Buffers returns the communication buffers of stage (i..j) when its neighbours are on
// other devices: 2·a_{i−1} unless i = 1, plus 2·a_j unless j = L (spec §1.5, item 3): one
// activation and one gradient in transit each way.
func (p *Problem) Buffers(i, j int) int64 {
	var b int64
	if i > 1 {
		b += 2 * p.Out(i-1)
	}
	if j < len(p.layers) {
		b += 2 * p.Out(j)
	}
	return b
}

// StageMemory returns 𝓜(i,j,g) of spec §1.5 in this problem's model: C·ΣW + Buffers(i,j)
// + g·Stored(i,j) + the larger of the stage's transients, the peak of a device holding
// stage (i..j) alone, recording its graph, with g mini-batches in flight (the last of them
// running its forward or the oldest its backward). A negative g counts as 0.
func (p *Problem) StageMemory(i, j, g int) int64 {
	fwd, bwd := p.Transients(i, j)
	return p.staticOf(i, j) + inFlight(g, p.Stored(i, j)) + max(fwd, bwd)
}

// staticOf returns C·ΣW + Buffers(i, j): what a device holding stage (i..j) alone keeps
// whatever runs.
func (p *Problem) staticOf(i, j int) int64 {
	return int64(p.opts.WeightCopies)*p.Weights(i, j) + p.Buffers(i, j)
}

// inFlight returns g·stored, saturated.
func inFlight(g int, stored int64) int64 {
	if stored > 0 && int64(g) > saturated/stored {
		return saturated // more memory than any device has, without overflow
	}
	return int64(max(g, 0)) * stored
}

// saturated stands for "more bytes than any device has" in products that could overflow.
const saturated = math.MaxInt64 / 4
