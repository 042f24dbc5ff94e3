package pipesim

import (
	"fmt"

	"github.com/chainplan/chainplan/pipeplan"
	"github.com/chainplan/chainplan/planner/internal/minheap"

	"github.com/chainplan/chainplan"
)

var errInvalidPlan = chainplan.ErrInvalidPlan

// sim is one running simulation.
type sim struct {
	su         *Setup
	o          Options
	S, N, K, M int

	// Per stage: its device's resource, the links of the boundary after it (−1: none; the
	// same resource for both directions in a replayed plan), durations, bytes.
	dev                      []int
	fwdLink, bwdLink         []int
	fDur, bDur, rDur         []float64
	cfDur, cbDur             []float64
	stored, input, weights   []int64
	fExtra, bExtra           []int64 // transient bytes of a forward, a backward while it runs
	stageOf                  []int   // per resource: the stage a device runs (−1: none or a link)
	paced                    bool    // a replayed plan without flush: micro-batch b enters at b·period
	planPeriod               float64
	fEnd, bEnd, cfEnd, cbEnd []float64 // per unit and stage: when the task ended (−1: not yet)
	fLastCount               []int32   // per mini-batch: forwards done at the last stage
	bCount                   []int32   // per mini-batch and stage: backward tasks done
	nextF, nextB             []int32   // TiMePReSt: each stage's next forward and backward
	res                      []resource
	events                   minheap.Heap[event]
	seq                      uint64
	now                      float64
	marked                   []bool
	markList, scratch        []int32
	doneTasks, totalTasks    int
	act                      []int64 // per stage: activation bytes held now
	inflight                 []int32 // per stage: micro-batches held now
	dyn, dynPeak             []int64 // per device: bytes above the static memory, now and at peak
	cur                      []int32 // per stage: updates applied (its newest version)
	ref                      []int32 // per stage and version: micro-batches that need it there
	distinct, held           []int32 // per stage: versions referenced, versions held
	ver                      []int32 // per micro-batch: the version its forward uses
	dirty                    []bool  // per stage: touched at this instant
	dirtyList                []int32
	stageBusy                []float64
	stats                    []StageStats
	mb                       []MinibatchStats
	timeline                 []Span
	memory                   []MemorySample
	lastDyn                  []int64 // per device: the last memory sample
}

// Simulate runs schedule o.Schedule on su for o.Minibatches mini-batches of o.Microbatches
// micro-batches, event by event and deterministically, and returns what it measured
// (Result). Every device runs one task at a time; with links, every link one transfer at a
// time while the devices compute. O(T log T) for T tasks, about 4·K·N·S.
//
// Errors: an *OptionError naming a bad option (unknown schedule, N or K below 1, a cap or
// a flush for a schedule without one, periodic without a plan, 2bw with N < S−1); an error
// wrapping chainplan.ErrInvalidPlan when a replayed plan's order deadlocks.
func Simulate(su *Setup, o Options) (*Result, error) {
	if su == nil {
		return nil, optionErr("stages", "no setup")
	}
	o, err := o.check(su)
	if err != nil {
		return nil, err
	}
	s, err := newSim(su, o)
	if err != nil {
		return nil, err
	}
	if err := s.run(); err != nil {
		return nil, err
	}
	return s.result(), nil
}

// newSim lays out the resources, durations, orders and books of one simulation.
func newSim(su *Setup, o Options) (*sim, error) {
	pr := su.pr
	S, N, K := len(su.stages), o.Microbatches, o.Minibatches
	M := K * N
	s := &sim{su: su, o: o, S: S, N: N, K: K, M: M}
	gpus := pr.Options().GPUs
	for g := range gpus {
		s.res = append(s.res, resource{name: fmt.Sprintf("device %d", g), wake: -1})
		s.stageOf = append(s.stageOf, -1)
	}
	s.dev = make([]int, S)
	s.fwdLink, s.bwdLink = make([]int, S), make([]int, S)
	for st, g := range su.stages {
		s.dev[st] = g.GPU
		s.stageOf[g.GPU] = st
		s.fwdLink[st], s.bwdLink[st] = -1, -1
	}
	links := su.links && !o.UnitTime
	pairs := map[[2]int]int{}
	for st := range S - 1 {
		if !links || !pipeplan.Crosses(su.stages, st) {
			continue
		}
		a, b := su.stages[st].GPU, su.stages[st+1].GPU
		if su.plan != nil { // the plan's model: one link per device pair, both directions
			pair := [2]int{min(a, b), max(a, b)}
			r, ok := pairs[pair]
			if !ok {
				r = s.addLink(fmt.Sprintf("link %d-%d", pair[0], pair[1]), fixedOrder)
				pairs[pair] = r
			}
			s.fwdLink[st], s.bwdLink[st] = r, r
			continue
		}
		s.fwdLink[st] = s.addLink(fmt.Sprintf("link %d→%d", a, b), firstCome)
		s.bwdLink[st] = s.addLink(fmt.Sprintf("link %d→%d", b, a), firstCome)
	}
	if err := s.costs(links); err != nil {
		return nil, err
	}

	bUnits := M
	if o.Schedule == TiMePReSt {
		bUnits = K
	}
	s.fEnd, s.cfEnd = filled(M*S, -1), filled(M*S, -1)
	s.bEnd, s.cbEnd = filled(bUnits*S, -1), filled(bUnits*S, -1)
	s.fLastCount, s.bCount = make([]int32, K), make([]int32, K*S)
	s.totalTasks = M*S + bUnits*S
	for st := range S - 1 {
		if s.fwdLink[st] >= 0 {
			s.totalTasks += M + bUnits
		}
	}
	s.orders()

	s.marked = make([]bool, len(s.res))
	s.act, s.inflight = make([]int64, S), make([]int32, S)
	s.dyn, s.dynPeak = make([]int64, gpus), make([]int64, gpus)
	s.cur, s.distinct, s.held = make([]int32, S), make([]int32, S), make([]int32, S)
	s.ref = make([]int32, S*(K+1))
	s.ver = make([]int32, M)
	s.stageBusy = make([]float64, S)
	s.dirty = make([]bool, S)
	s.stats = make([]StageStats, S)
	for st := range S {
		s.held[st] = 1
		s.stats[st].WeightVersions = 1
	}
	s.mb = make([]MinibatchStats, K)
	for k := range s.mb {
		s.mb[k] = MinibatchStats{Index: k + 1, BackwardStart: -1, BackwardVersion: -1,
			ForwardVersions: make([]int, 0, N)}
	}
	if o.Record {
		s.timeline = make([]Span, 0, s.totalTasks)
		s.lastDyn = make([]int64, gpus)
	}
	return s, nil
}

func (s *sim) addLink(name string, p policy) int {
	s.res = append(s.res, resource{name: name, policy: p, wake: -1})
	s.stageOf = append(s.stageOf, -1)
	return len(s.res) - 1
}

// costs sets each stage's durations and bytes: from the model of planner/pipeline (the
// validator's Problem.Cost and Transfer), or one time point per task in unit time.
func (s *sim) costs(links bool) error {
	su, pr := s.su, s.su.pr
	n := float64(s.units())
	s.fDur, s.bDur, s.rDur = make([]float64, s.S), make([]float64, s.S), make([]float64, s.S)
	s.cfDur, s.cbDur = make([]float64, s.S), make([]float64, s.S)
	s.stored, s.input, s.weights = make([]int64, s.S), make([]int64, s.S), make([]int64, s.S)
	s.fExtra, s.bExtra = make([]int64, s.S), make([]int64, s.S)
	for st, g := range su.stages {
		c, err := pr.Cost(g)
		if err != nil {
			return fmt.Errorf("pipesim: stage %d: %w", st, err)
		}
		s.stored[st], s.fExtra[st], s.bExtra[st] = c.Stored, c.FwdExtra, c.BwdExtra
		s.input[st] = pr.Out(g.First - 1)
		s.weights[st] = pr.Weights(g.First, g.Last)
		if s.o.UnitTime {
			s.fDur[st], s.bDur[st] = 1, 1
			if su.ckpt[st] {
				s.rDur[st] = 1
			}
			continue
		}
		s.fDur[st] = c.Fwd
		s.bDur[st] = n * c.Bwd
		if su.ckpt[st] {
			s.rDur[st] = n * s.fDur[st]
		}
		if links && s.fwdLink[st] >= 0 {
			alpha, transfer := su.alphaS, pr.Transfer(g.Last)
			if su.bounds != nil {
				l := su.bounds[st]
				alpha, transfer = l.LatencyS, float64(pr.Out(g.Last))/l.Bandwidth
			}
			s.cfDur[st] = alpha + transfer
			s.cbDur[st] = alpha + n*transfer
		}
	}
	return nil
}

// orders gives every resource its policy and, for fixed orders, its tasks.
func (s *sim) orders() {
	switch s.o.Schedule {
	case Periodic:
		if !s.o.Flush {
			s.paced, s.planPeriod = true, s.su.plan.Period
		}
		for r, order := range s.planOrders(s.su.plan, func(k int) int { return s.fwdLink[k] }) {
			if order != nil {
				s.res[r].order = order
			}
		}
		return
	case TiMePReSt:
		for _, r := range s.dev {
			s.res[r].policy = dynamic
		}
		s.nextF, s.nextB = make([]int32, s.S), make([]int32, s.S)
		return
	}
	for st, r := range s.dev {
		switch s.o.Schedule {
		case GPipe:
			s.res[r].order = s.gpipeOrder(st)
		case OneFOneBFlush:
			s.res[r].order = s.oneFOneBOrder(st, s.N)
		default: // PipeDreamAsync, TwoBW: 1F1B over the whole stream
			s.res[r].order = s.oneFOneBOrder(st, s.M)
		}
	}
}

func filled(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}
