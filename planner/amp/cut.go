package amp

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/contiguous"
	"github.com/chainplan/chainplan/planner/pipeline"
	"github.com/chainplan/chainplan/planner/workload"
)

// coarsen returns block boundaries over m's layers: every layer its own block when there
// are at most maxBlocks, else maxBlocks contiguous blocks minimising the largest block's
// time at the profiled batch (the min-max partition, found by cutProblem with one class
// and a weight on the bottleneck that dominates the constant Σt).
func coarsen(m *workload.Model, maxBlocks int) []int {
	L := m.L()
	if L <= maxBlocks {
		out := make([]int, L+1)
		for i := range out {
			out[i] = i
		}
		return out
	}
	pre := make([]float64, L+1)
	for i := range m.Layers {
		pre[i+1] = pre[i] + m.Layers[i].FwdTimeS + m.Layers[i].BwdTimeS
	}
	p := &cutProblem{Pre: [][]float64{pre}, Class: make([]int, maxBlocks), GAS: 1 << 20}
	_, bounds := p.Solve()
	return bounds
}

// madpipeCut returns the assignment MadPipe's contiguous partitioner (planner/contiguous)
// picks for the layout: the blocks as a chain at the micro-batch size, pp devices of the
// cluster's smallest memory, the slowest stage link's bandwidth, weights counted with
// their gradients and the optimizer state as extra copies, the memory of a stage's tmp
// devices together (its weights are split over them). It plans at most pp stages;
// fewer are split (the stage of most blocks at its middle, which never adds memory) to
// make pp. nil when no contiguous plan fits the memory.
func (s *searcher) madpipeCut(lay *layout) ([]int, error) {
	g := lay.g
	nb := len(s.blocks) - 1
	if g.PP == 1 {
		return []int{0, nb}, nil
	}
	ch, err := s.blockChain(g.MBS)
	if err != nil {
		return nil, err
	}
	bw := math.Inf(1)
	for _, l := range lay.stageLink {
		bw = math.Min(bw, l.Bandwidth)
	}
	pr, err := pipeline.NewProblem(ch, pipeplan.Options{GPUs: g.PP, MemoryBytes: s.c.MinMemoryBytes() * int64(g.TMP),
		Bandwidth: bw, WeightCopies: s.weightCopies(), ActivationModel: pipeplan.ActivationsSaved})
	if err != nil {
		return nil, err
	}
	plan, err := contiguous.Solve(pr)
	var ie *pipeplan.InfeasibleError
	if errors.As(err, &ie) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	bounds := []int{0}
	for _, st := range plan.Stages {
		bounds = append(bounds, st.Last)
	}
	for len(bounds)-1 < g.PP {
		widest := 0
		for j := 1; j+1 < len(bounds); j++ {
			if bounds[j+1]-bounds[j] > bounds[widest+1]-bounds[widest] {
				widest = j
			}
		}
		mid := (bounds[widest] + bounds[widest+1]) / 2
		bounds = slices.Insert(bounds, widest+1, mid)
	}
	return bounds, nil
}

// weightCopies is the optimizer state as pipeline's weight copies: the weights, their
// gradients and the state rounded up to whole copies (Adam: 4).
func (s *searcher) weightCopies() int {
	copies := 2
	if params := s.preParams[len(s.preParams)-1]; params > 0 {
		copies += int(math.Ceil(float64(s.optState) / float64(params)))
	}
	return copies
}

// blockChain returns the model as a chain of its blocks at mbs: times summed, the last
// layer's output, every saved tensor of the block kept, the largest temporaries, the
// parameters summed.
func (s *searcher) blockChain(mbs int) (*chainplan.Chain, error) {
	full, err := s.m.ChainAt(int64(mbs), "the madpipe cut")
	if err != nil {
		return nil, err
	}
	ch := &chainplan.Chain{Format: chainplan.ChainFormat, InputBytes: full.InputBytes, Loss: full.Loss}
	for b := 1; b < len(s.blocks); b++ {
		var st chainplan.Stage
		for i := s.blocks[b-1]; i < s.blocks[b]; i++ {
			l := full.Stages[i]
			st.Name = l.Name
			st.FwdTime += l.FwdTime
			st.BwdTime += l.BwdTime
			st.OutBytes = l.OutBytes
			st.SavedBytes += l.SavedBytes
			st.FwdTmpBytes = max(st.FwdTmpBytes, l.FwdTmpBytes)
			st.BwdTmpBytes = max(st.BwdTmpBytes, l.BwdTmpBytes)
			st.ParamBytes += l.ParamBytes
		}
		ch.Stages = append(ch.Stages, st)
	}
	return ch, nil
}

// digits matches the numbers in layer names ("transformer.h.11:Block").
var digits = regexp.MustCompile(`[0-9]+`)

// repeatedRun returns the blocks before and after the longest run of repeated blocks (the
// transformer layers): blocks whose names differ only in their numbers and whose
// parameters are equal. Megatron's uniform assignment balances that run; (0, 0) when no
// block repeats.
func (s *searcher) repeatedRun() (head, tail int) {
	nb := len(s.blocks) - 1
	sig := func(b int) string {
		first := s.blocks[b]
		return fmt.Sprintf("%s|%d", digits.ReplaceAllString(s.m.Layers[first].Name, "#"), s.paramBytes(first, s.blocks[b+1]))
	}
	bestStart, bestLen := 0, 1
	for start := 0; start < nb; {
		end := start + 1
		for end < nb && sig(end) == sig(start) && s.blocks[end+1]-s.blocks[end] == s.blocks[start+1]-s.blocks[start] {
			end++
		}
		if end-start > bestLen {
			bestStart, bestLen = start, end-start
		}
		start = end
	}
	if bestLen < 2 {
		return 0, 0
	}
	return bestStart, nb - bestStart - bestLen
}

// megatron returns the best candidate of Megatron's heuristic (spec §3.6): tensor degree
// within a node (Enumerate's bound), uniform layer-count assignment, Megatron's placement,
// every micro-batch size, at the smallest tmp·pp for which a candidate fits (the largest
// data degree that fits). nil when none does.
func (s *searcher) megatron(degrees []Degrees) (*Candidate, error) {
	order := slices.Clone(degrees)
	slices.SortStableFunc(order, func(a, b Degrees) int { return a.TMP*a.PP - b.TMP*b.PP })
	var best *Candidate
	level := -1
	for _, g := range order {
		if best != nil && g.TMP*g.PP != level {
			break
		}
		c, err := s.evaluate(g, PlacementMegatron, CutUniform)
		if err != nil {
			return nil, err
		}
		if !c.Fits && s.o.MemoryCheck != MemoryOff {
			continue
		}
		level = g.TMP * g.PP
		if best == nil || c.IterationTimeS < best.IterationTimeS {
			best = c
		}
	}
	return best, nil
}
