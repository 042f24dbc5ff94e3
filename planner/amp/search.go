package amp

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/calibration"
	"github.com/chainplan/chainplan/planner/cluster"
	"github.com/chainplan/chainplan/planner/workload"
)

// searcher holds what every candidate of one search shares.
type searcher struct {
	m      *workload.Model
	c      *cluster.Cluster
	o      Options
	blocks []int // block boundaries over the layers: block b holds layers blocks[b]..blocks[b+1]−1
	// pre sums over layers: parameter bytes.
	preParams []int64
	optState  int64
	times     map[int][]float64 // base layer times per mbs
	stages    map[stageKey]*stageChain
	notes     []string
	cal       calibration.Calibration // Options.Calibration, or the identity
}

// Search runs the 3-D search of spec §5.3 on model m and cluster c and returns the TopK
// candidates by predicted iteration time (Eq. 4, each candidate's cut minimising it
// whole), with Megatron's best for comparison.
// Under MemoryRotor or MemoryDrop only candidates that fit are ranked; under MemoryOff
// every candidate is, and Candidate.Fits says which would run out of memory.
//
// Errors: an *OptionError naming the option; the model's check; a *workload.MissingError
// when the memory filter needs measured activation sizes the model lacks (MemoryOff needs
// none); chainplan.ErrInfeasible when no candidate fits (the message gives the least
// memory any needs).
func Search(m *workload.Model, c *cluster.Cluster, o Options) (*Result, error) {
	start := time.Now()
	if err := m.Check(); err != nil {
		return nil, err
	}
	o, err := o.withDefaults(c.MinDevicesPerNode())
	if err != nil {
		return nil, err
	}
	if cal := o.Calibration; cal != nil && cal.Cluster != "" && cal.Cluster != c.Name {
		return nil, optionError("calibration", fmt.Sprintf("fitted on cluster %q, not %q: a calibration is per cluster", cal.Cluster, c.Name))
	}
	if o.MemoryCheck != MemoryOff || o.Cut != CutAMP {
		if err := m.Need(workload.FieldMemory, "search3d's memory filter"); err != nil {
			return nil, err
		}
	}
	if err := checkCoarsen(m, o.Blocks); err != nil {
		return nil, err
	}
	s := newSearcher(m, c, o)
	res := &Result{Format: Format, Model: m.Name, Cluster: c.Name, Devices: c.NumDevices(), GlobalBatch: o.GlobalBatch,
		Schedule: o.Schedule, MemoryCheck: o.MemoryCheck, Cut: o.Cut, Blocks: len(s.blocks) - 1}
	for b := 1; b < len(s.blocks); b++ {
		res.BlockLayers = append(res.BlockLayers, [2]int{s.blocks[b-1] + 1, s.blocks[b]})
	}
	degrees := Enumerate(c.NumDevices(), c.MinDevicesPerNode(), o.TMPMax, res.Blocks, o.GlobalBatch)
	res.Enumerated = len(degrees)
	placements := []string{PlacementMegatron}
	if !c.Homogeneous() {
		placements = append(placements, PlacementReversed)
	}
	var all []Candidate
	least := int64(math.MaxInt64)
	for _, g := range degrees {
		var best *Candidate
		for _, pl := range placements {
			for _, cut := range s.cuts() {
				cand, err := s.evaluate(g, pl, cut)
				if err != nil {
					return nil, err
				}
				if cand == nil {
					continue
				}
				res.Evaluated++
				if !cand.Fits {
					least = min(least, cand.leastMemory())
				}
				if best == nil || better(cand, best, o.MemoryCheck) {
					best = cand
				}
			}
		}
		if best == nil {
			continue
		}
		s.count(res, best)
		if best.Fits || o.MemoryCheck == MemoryOff {
			all = append(all, *best)
		}
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("%w: search3d: no candidate fits the devices' memory (of %d evaluated, the least demanding stage needs %s)",
			chainplan.ErrInfeasible, res.Evaluated, chainplan.FormatBytes(least))
	}
	slices.SortStableFunc(all, func(a, b Candidate) int { return cmp.Compare(a.IterationTimeS, b.IterationTimeS) })
	for i := range all {
		all[i].Rank = i + 1
	}
	if o.TopK > 0 && len(all) > o.TopK {
		all = all[:o.TopK]
	}
	res.Candidates = all
	mg, err := s.megatron(degrees)
	if err != nil {
		return nil, err
	}
	res.Megatron = mg
	if err := s.checkPipelines(res); err != nil {
		return nil, err
	}
	res.Notes = s.notes
	if res.Notes == nil {
		res.Notes = []string{}
	}
	res.SolveMS = float64(time.Since(start).Microseconds()) / 1000
	return res, nil
}

// better reports whether a beats b: under a memory check a candidate that fits beats one
// that does not, then the faster.
func better(a, b *Candidate, check string) bool {
	if check != MemoryOff && a.Fits != b.Fits {
		return a.Fits
	}
	return a.IterationTimeS < b.IterationTimeS
}

// count records a degree's best candidate in the result's counters.
func (s *searcher) count(res *Result, c *Candidate) {
	if c.overCapacity {
		res.OverCapacity++
	}
	if c.Checkpointed > 0 && c.Fits { // made to fit; one still over capacity counts as dropped
		res.Checkpointed++
	}
	if !c.Fits && s.o.MemoryCheck != MemoryOff {
		res.Dropped++
	}
}

// cuts returns the partitioners Options.Cut asks for.
func (s *searcher) cuts() []string {
	switch s.o.Cut {
	case CutMadPipe:
		return []string{CutMadPipe}
	case CutBest:
		return []string{CutAMP, CutMadPipe}
	}
	return []string{CutAMP}
}

func newSearcher(m *workload.Model, c *cluster.Cluster, o Options) *searcher {
	s := &searcher{m: m, c: c, o: o, times: map[int][]float64{}, stages: map[stageKey]*stageChain{}, cal: calibration.Identity}
	if o.Calibration != nil {
		s.cal = *o.Calibration
		s.notes = append(s.notes, fmt.Sprintf("calibrated: computation ×%.3g, communication ×%.3g, %.3g s overhead per iteration",
			s.cal.ComputeScale, s.cal.CommScale, s.cal.OverheadS))
	}
	s.blocks = coarsen(m, o.Blocks)
	if len(s.blocks)-1 < m.L() {
		s.notes = append(s.notes, fmt.Sprintf("%d layers coarsened into %d blocks of balanced time for the DP", m.L(), len(s.blocks)-1))
	}
	s.preParams = make([]int64, m.L()+1)
	for i := range m.Layers {
		s.preParams[i+1] = s.preParams[i] + m.Layers[i].ParamBytes()
	}
	params := s.preParams[m.L()]
	switch name := o.Optimizer; {
	case name == "auto" && m.Known.Has(workload.FieldOptimizer):
		s.optState = m.Optimizer.StateBytes
	case name == "auto" || name == "adam":
		s.optState = 2 * params
		if name == "auto" {
			s.notes = append(s.notes, "optimizer state not profiled: Adam's two moments per parameter assumed")
		}
	case name == "momentum":
		s.optState = params
	}
	return s
}

// paramBytes returns the parameters of layers first..last−1.
func (s *searcher) paramBytes(first, last int) int64 { return s.preParams[last] - s.preParams[first] }
