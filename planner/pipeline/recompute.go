package pipeline

import (
	"fmt"
	"math"
	"sort"
	"sync"

	"github.com/chainplan/chainplan/pipeplan"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/rotor"
	"github.com/chainplan/chainplan/planner/simulate"
)

// Checkpointing inside stages (docs/pipeline.md). A stage that records its graph keeps
// everything its backward needs for every mini-batch in flight, and a device short of
// memory then has to keep fewer mini-batches in flight: a longer period, the pipeline
// serialised. A recomputing stage keeps only its input: its forward runs without a graph,
// and when the gradient of its output arrives it recomputes and backpropagates with rotor's
// optimal sequence within the activation memory its device has left (its budget). Its
// backward then lasts C_MP(i, j, budget) of rotor's persistent DP (spec §3.2 of rotor: the
// time of B_j … B_i with a_{i−1} and δ_j in memory), which includes the recomputed
// forward; one table over the whole chain (rotor.SubChains) gives it for every stage and
// budget.

// subTable is the problem's rotor table, built once on first use and shared by the copies
// WithMemory makes.
type subTable struct {
	once sync.Once
	sc   *rotor.SubChains
	err  error
}

// recomputeSlots is the discretization of the table: 500 slots, rotor's default.
const recomputeSlots = rotor.DefaultSlots

// table returns the rotor table of p's chain for budgets up to the largest a stage may
// need to store everything.
func (p *Problem) table() (*rotor.SubChains, error) {
	p.sub.once.Do(func() {
		p.sub.sc, p.sub.err = rotor.NewSubChains(p.chain, p.tableBytes(), recomputeSlots)
	})
	return p.sub.sc, p.sub.err
}

// tableBytes is the largest budget of the table: what a stage may need to store
// everything.
func (p *Problem) tableBytes() int64 {
	var total, maxOut, maxTmp int64
	for _, ly := range p.layers {
		total += ly.Saved
		maxOut = max(maxOut, ly.Out)
		maxTmp = max(maxTmp, ly.FwdTmp, ly.BwdTmp)
	}
	maxOut = max(maxOut, p.input)
	return total + 3*maxOut + maxTmp
}

// recomputeExtras returns the transients of a recomputing stage (i..j) besides its rotor
// sequence: its forward without a graph (layer ℓ's input, output and o_F; the stage input
// is counted as stored) and, on the last stage, the loss's backward (δ_L and o_B(loss)).
func (p *Problem) recomputeExtras(i, j int) (fwd, lossBwd int64) {
	fwd = max(p.layers[i-1].Out+p.layers[i-1].FwdTmp, p.fwdCk.of(i, j-1))
	if j == len(p.layers) {
		lossBwd = p.Out(j) + p.chain.Loss.BwdTmpBytes
	}
	return fwd, lossBwd
}

// recomputeStored returns what one mini-batch in flight keeps on a recomputing stage: its
// input, and on the last stage what the loss saved.
func (p *Problem) recomputeStored(i, j int) int64 { return p.Out(i-1) + p.lossKeep(j) }

// lossBwdTime returns the loss's backward time when j is the last layer: a recomputing last
// stage runs it before its sequence (the loss is not part of the sub-chain).
func (p *Problem) lossBwdTime(j int) float64 {
	if j < len(p.layers) {
		return 0
	}
	return p.chain.Loss.BwdTime
}

// RecomputeFit returns how stage (i..j) runs as a recomputing stage on a device of its own
// with g mini-batches in flight within limit bytes: the budget its backward gets (all the
// memory left once the weights, buffers, the inputs in flight and its forward are counted,
// lowered to the smallest budget that is as fast) and its load U_F + backward. ok is false
// when checkpointing is off, the table cannot be built, or no sequence fits.
func (p *Problem) RecomputeFit(i, j, g int, limit int64) (load float64, budget int64, ok bool) {
	if !p.opts.Checkpoint {
		return 0, 0, false
	}
	sc, err := p.table()
	if err != nil {
		return 0, 0, false
	}
	fwd, lossBwd := p.recomputeExtras(i, j)
	left := limit - p.staticOf(i, j) - inFlight(g, p.recomputeStored(i, j))
	if left < max(fwd, lossBwd) {
		return 0, 0, false
	}
	need := sc.Need(i, j)
	if need < 0 || left < need {
		return 0, 0, false
	}
	t := sc.Time(i, j, left)
	// The smallest budget with the same time: the row is non-increasing in the budget.
	unit := sc.Unit()
	lo, hi := need/unit, left/unit
	k := sort.Search(int(hi-lo+1), func(k int) bool { return sc.Time(i, j, (lo+int64(k))*unit) <= t })
	budget = (lo + int64(k)) * unit
	return p.UF(i, j) + p.lossBwdTime(j) + t, budget, true
}

// RecomputeMinMemory returns the smallest memory (a Limit) of a device holding stage (i..j)
// alone, recomputing, with one mini-batch in flight: weights, buffers, its input and the
// largest of its forward, the loss's backward and its smallest budget. It is saturated
// when checkpointing is off or no sequence fits.
func (p *Problem) RecomputeMinMemory(i, j int) int64 {
	if !p.opts.Checkpoint {
		return saturated
	}
	sc, err := p.table()
	if err != nil {
		return saturated
	}
	need := sc.Need(i, j)
	if need < 0 {
		return saturated
	}
	fwd, lossBwd := p.recomputeExtras(i, j)
	return p.staticOf(i, j) + p.recomputeStored(i, j) + max(fwd, lossBwd, need)
}

// RecomputeBudgets returns the budgets at which the recomputing backward of stage (i..j)
// gets faster, increasing: the smallest budget of each distinct time, from the smallest
// that fits to the one where nothing is recomputed twice. Empty when checkpointing is off
// or no sequence fits. Every budget a planner gives a stage is one of them.
func (p *Problem) RecomputeBudgets(i, j int) []int64 {
	if !p.opts.Checkpoint {
		return nil
	}
	sc, err := p.table()
	if err != nil {
		return nil
	}
	need := sc.Need(i, j)
	if need < 0 {
		return nil
	}
	var out []int64
	last, fastest := math.Inf(1), sc.Time(i, j, math.MaxInt64)
	for b := need; ; b += sc.Unit() {
		t := sc.Time(i, j, b)
		if t < last {
			out = append(out, b)
			last = t
		}
		if t <= fastest {
			return out
		}
	}
}

// RecomputeStage returns stage (i..j) on device gpu recomputing within budget bytes, with
// the rotor sequence it runs. Errors: checkpointing off or unavailable, or no sequence fits.
func (p *Problem) RecomputeStage(i, j, gpu int, budget int64) (pipeplan.Stage, error) {
	if !p.opts.Checkpoint {
		return pipeplan.Stage{}, fmt.Errorf("%w: checkpointing inside stages is off", chainplan.ErrUnsupported)
	}
	sc, err := p.table()
	if err != nil {
		return pipeplan.Stage{}, err
	}
	seq, err := sc.Sequence(i, j, budget)
	if err != nil {
		return pipeplan.Stage{}, err
	}
	return pipeplan.Stage{First: i, Last: j, GPU: gpu, Recompute: &pipeplan.Recompute{BudgetBytes: budget, Sequence: seq}}, nil
}

// replay replays a recomputing stage's sequence from a_{i−1} and δ_j within its budget.
func (p *Problem) replay(s pipeplan.Stage) *simulate.Report {
	limit := int64(-1)
	if b := s.Recompute.BudgetBytes; b >= 0 && b < math.MaxInt64-p.Out(s.First-1) {
		limit = p.Out(s.First-1) + b
	}
	return simulate.RunFrom(p.chain, s.First, s.Last, s.Recompute.Sequence, limit)
}
