package amp

import (
	"math"
	"slices"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/launch"
	"github.com/chainplan/chainplan/planner/rotor"
	"github.com/chainplan/chainplan/planner/workload"
)

// CutUniform marks Megatron's layer-count assignment (UniformBoundaries).
const CutUniform = "uniform"

// evaluate prices degrees g placed by placement and cut by cut; nil when that cut has no
// assignment (MadPipe finds none within memory).
func (s *searcher) evaluate(g Degrees, placement, cut string) (*Candidate, error) {
	lay := s.newLayout(g, placement)
	part := s.partition(lay)
	var bounds []int
	switch cut {
	case CutAMP:
		_, bounds = part.Solve()
	case CutMadPipe:
		b, err := s.madpipeCut(lay)
		if err != nil || b == nil {
			return nil, err
		}
		bounds = b
	case CutUniform:
		head, tail := s.repeatedRun()
		bounds = UniformBoundaries(len(s.blocks)-1, g.PP, head, tail)
	}
	return s.price(lay, part, bounds, cut)
}

// price completes a candidate for an assignment: per-stage times and memory (the memory
// filter, which may checkpoint a stage and lengthen it), Eq. 5 with the final stage
// times, the data-parallel synchronisation and Eq. 4.
func (s *searcher) price(lay *layout, part *cutProblem, bounds []int, cut string) (*Candidate, error) {
	g := lay.g
	c := &Candidate{PP: g.PP, DP: g.DP, TMP: g.TMP, MBS: g.MBS, GAS: lay.gas, Placement: lay.placement, Cut: cut,
		Boundaries: slices.Clone(bounds), Fits: true}
	var sum, bottleneck, p2p float64
	comm := make([]float64, g.PP) // each stage's tensor-parallel communication per micro-batch
	slowest := 0
	for j := range g.PP {
		first, last := s.blocks[bounds[j]], s.blocks[bounds[j+1]]
		st := Stage{FirstBlock: bounds[j] + 1, LastBlock: bounds[j+1], FirstLayer: first + 1, LastLayer: last,
			FirstName: s.m.Layers[first].Name, LastName: s.m.Layers[last-1].Name, Devices: slices.Clone(lay.dev[j]),
			DeviceType: lay.classes[lay.class[j]].slowest, TimeS: part.stageTime(j, bounds[j], bounds[j+1]),
			InFlight: s.inFlight(j, g.PP, lay.gas)}
		if err := s.stageMemory(c, &st, lay, j, first, last); err != nil {
			return nil, err
		}
		st.TimeS += st.RecomputeS
		sum += st.TimeS
		if st.TimeS > bottleneck {
			bottleneck, slowest = st.TimeS, j
		}
		cls := lay.classes[lay.class[j]]
		comm[j] = cls.commPre[bounds[j+1]] - cls.commPre[bounds[j]]
		if j+1 < g.PP {
			p2p += s.comm(lay, bounds[j+1], j)
		}
		c.Stages = append(c.Stages, st)
	}
	c.Launch = launchShape(c)
	c.BottleneckS, c.P2PS = bottleneck, p2p
	c.PipelineTimeS = float64(lay.gas-1)*bottleneck + sum + p2p
	c.DPSyncS = part.maxSync(bounds)
	var commSum float64
	for _, k := range comm {
		commSum += k
	}
	c.CommS = float64(lay.gas-1)*comm[slowest] + commSum + p2p + c.DPSyncS
	c.ComputeS = c.PipelineTimeS + c.DPSyncS - c.CommS
	c.OverheadS = s.cal.OverheadS
	c.IterationTimeS = c.PipelineTimeS + c.DPSyncS + c.OverheadS
	return c, nil
}

// inFlight returns the micro-batches stage j (0-based) of pp holds at once: min(pp − j, gas)
// under 1F1B (spec §5.3 step 6, PipeDream-Flush's warm-up), gas under GPipe.
func (s *searcher) inFlight(j, pp, gas int) int {
	if s.o.Schedule == ScheduleGPipe {
		return gas
	}
	return min(pp-j, gas)
}

// stageMemory applies the memory filter to stage j of layers first..last−1. One of its
// devices holds its weights and gradients and its share of the optimizer state (divided
// by tmp), and the activations of the micro-batches in flight: the store-all peak of one
// micro-batch's chain (input, saved tensors, temporaries, gradients) plus what each other
// in-flight micro-batch keeps (input and saved tensors). Activations are not divided by
// tmp (a conservative reading: Megatron replicates some of them). Over capacity, under
// MemoryRotor, the other micro-batches keep only their stage input and the stage runs
// rotor within what is left when the backward reaches it: it forwards once without
// keeping anything, then rotor's schedule; the extra time over a plain forward and
// backward is charged to the stage.
func (s *searcher) stageMemory(c *Candidate, st *Stage, lay *layout, j, first, last int) error {
	st.CapacityBytes = math.MaxInt64
	for _, d := range lay.dev[j] {
		st.CapacityBytes = min(st.CapacityBytes, s.c.Device(d).MemoryBytes)
	}
	if !s.m.Known.Has(workload.FieldMemory) {
		st.MemoryBytes = 0 // not measured: MemoryOff with the AMP cut only (Search checks)
		return nil
	}
	g := lay.g
	params := s.paramBytes(first, last)
	var opt int64
	if total := s.preParams[len(s.preParams)-1]; total > 0 {
		opt = int64(float64(s.optState) * float64(params) / float64(total))
	}
	static := (2*params + opt) / int64(g.TMP)
	sc, err := s.stageChain(first, last, g.MBS, last == s.m.L())
	if err != nil {
		return err
	}
	need := static + int64(st.InFlight-1)*sc.stored + sc.peak
	st.MemoryBytes = need
	c.needBytes = max(c.needBytes, need)
	if need <= st.CapacityBytes {
		return nil
	}
	c.overCapacity = true
	if s.o.MemoryCheck != MemoryRotor {
		c.Fits = false
		return nil
	}
	budget := st.CapacityBytes - static - int64(st.InFlight-1)*sc.in
	ro := rotor.Options{Slots: s.o.Slots}
	if sc.minBudget < 0 {
		if sc.minBudget, err = rotor.MinBudget(sc.chain, ro); err != nil {
			return err
		}
	}
	if budget < sc.minBudget {
		c.Fits = false
		return nil
	}
	plan, err := rotor.Solve(sc.chain, budget, ro)
	if err != nil {
		return err
	}
	st.Checkpoint = &Checkpoint{BudgetBytes: budget, PeakBytes: plan.PeakBytes, MakespanS: plan.Makespan}
	st.MemoryBytes = static + int64(st.InFlight-1)*sc.in + plan.PeakBytes
	// The chain is at the profiled device's speed and undivided: scale the extra time as
	// the stage's own time scales.
	if base := sc.sumF + sc.sumB; base > 0 {
		st.RecomputeS = (plan.Makespan - sc.sumB) * st.TimeS / base
	}
	c.Checkpointed++
	return nil
}

// stageKey names one stage's chain: layers first..last−1 at mbs, with the loss or not.
type stageKey struct {
	first, last, mbs int
	loss             bool
}

// stageChain is a stage's chain for one micro-batch and what the memory filter reads of it.
type stageChain struct {
	chain      *chainplan.Chain
	peak       int64 // the store-all peak, replayed
	in         int64 // the stage input
	stored     int64 // input and saved tensors: what an in-flight micro-batch keeps
	sumF, sumB float64
	minBudget  int64 // rotor's smallest budget, −1 until asked
}

func (s *searcher) stageChain(first, last, mbs int, loss bool) (*stageChain, error) {
	k := stageKey{first, last, mbs, loss}
	if sc, ok := s.stages[k]; ok {
		return sc, nil
	}
	ch, err := s.m.SubChainAt(first, last, int64(mbs), loss, "search3d's memory filter")
	if err != nil {
		return nil, err
	}
	sc := &stageChain{chain: ch, peak: rotor.StoreAllPeak(ch), in: ch.InputBytes, stored: ch.InputBytes, minBudget: -1}
	for _, st := range ch.Stages {
		sc.stored += st.SavedBytes
		sc.sumF += st.FwdTime
		sc.sumB += st.BwdTime
	}
	sc.sumF += ch.Loss.FwdTime
	sc.sumB += ch.Loss.BwdTime
	s.stages[k] = sc
	return sc, nil
}

// leastMemory is the memory of the candidate's most demanding stage before checkpointing.
func (c *Candidate) leastMemory() int64 { return c.needBytes }

// launchShape is what parallelize needs of a priced candidate: the last layer of each
// stage but the last, and the stages' rotor budgets.
func launchShape(c *Candidate) *launch.Shape {
	sh := &launch.Shape{Mesh: launch.Mesh{PP: c.PP, DP: c.DP, TP: c.TMP}, Microbatch: c.MBS, Microbatches: c.GAS,
		Cuts: []int{}}
	for j, st := range c.Stages {
		if j+1 < len(c.Stages) {
			sh.Cuts = append(sh.Cuts, st.LastLayer)
		}
		ck := launch.None
		if st.Checkpoint != nil {
			ck = launch.Checkpoint{BudgetBytes: st.Checkpoint.BudgetBytes}
		}
		sh.Checkpoint = append(sh.Checkpoint, ck)
	}
	return sh
}
