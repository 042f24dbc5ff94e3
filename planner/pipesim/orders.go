package pipesim

import (
	"cmp"
	"math"
	"slices"

	"github.com/chainplan/chainplan/pipeplan"
)

// This file holds the order in which each device runs its tasks: fixed for every schedule
// but TiMePReSt, whose devices choose among the ready tasks (pickTiMePReSt).

// gpipeOrder is stage st's order under GPipe: per mini-batch, every forward, then every
// backward in reverse micro-batch order (spec §5.4).
func (s *sim) gpipeOrder(st int) []task {
	out := make([]task, 0, 2*s.M)
	for k := range s.K {
		for j := range s.N {
			out = append(out, task{kF, int32(st), int32(k*s.N + j)})
		}
		for j := s.N - 1; j >= 0; j-- {
			out = append(out, task{kB, int32(st), int32(k*s.N + j)})
		}
	}
	return out
}

// oneFOneBOrder is stage st's 1F1B order over runs of n micro-batches each (n = N with a
// flush per mini-batch, n = M without): min(S−st, n) forwards, then one backward and one
// forward while forwards remain, then the remaining backwards (PipeDream's 1F1B; torch's
// Schedule1F1B; Megatron's warm-up of S−st−1 forwards followed by forward-backward pairs is
// the same sequence).
func (s *sim) oneFOneBOrder(st, n int) []task {
	out := make([]task, 0, 2*s.M)
	for base := 0; base < s.M; base += n {
		warm := min(s.S-st, n)
		for b := range warm {
			out = append(out, task{kF, int32(st), int32(base + b)})
		}
		for i := range n - warm {
			out = append(out, task{kB, int32(st), int32(base + i)}, task{kF, int32(st), int32(base + warm + i)})
		}
		for b := n - warm; b < n; b++ {
			out = append(out, task{kB, int32(st), int32(base + b)})
		}
	}
	return out
}

// pickTiMePReSt is the choice of the device of stage st under nF1B (spec §4.5, rule 4): a
// ready backward first (the oldest mini-batch; backwards reach a stage in mini-batch
// order), else the oldest ready forward. The first stage injects micro-batches in order
// whenever it has nothing else to do, while the cap on mini-batches in flight allows.
func (s *sim) pickTiMePReSt(r int) (task, bool) {
	st := s.stageOf[r]
	if k := int(s.nextB[st]); k < s.K {
		if t := (task{kB, int32(st), int32(k)}); s.ready(t, r) {
			s.nextB[st]++
			return t, true
		}
	}
	m := int(s.nextF[st])
	if m >= s.M {
		return task{}, false
	}
	if st == 0 && m%s.N == 0 && s.o.MaxInflight > 0 && m/s.N-int(s.cur[0]) >= s.o.MaxInflight {
		return task{}, false // the cap: wait for the oldest mini-batch's backward
	}
	if t := (task{kF, int32(st), int32(m)}); s.ready(t, r) {
		s.nextF[st]++
		return t, true
	}
	return task{}, false
}

// planOp is one operation of a replayed plan's pattern, normalised so that its start lies
// in [0, T): micro-batch b runs it in period b + shift.
type planOp struct {
	kind  opKind
	stage int
	start float64
	zero  bool // it takes no time (an empty transfer)
	shift int
	topo  int // its position in one micro-batch's dependency order
}

// planOrders returns the order of each device and link of a replayed plan: the plan's
// operations in the order of their planned times, as chainplan's runner lists them
// (docs/pipeline.md: earliest time first, ties broken by micro-batch, then by the
// micro-batch's dependency order, so that no task comes before its input). With a flush,
// mini-batch after mini-batch, each of its N micro-batches numbered from 0 as a step of the
// runner; without, all M micro-batches as one stream. res maps a stage's device and a
// boundary's link to their resources.
func (s *sim) planOrders(p *pipeplan.Plan, linkOf func(k int) int) [][]task {
	T := p.Period
	n := len(p.Stages)
	var ops []planOp
	for _, o := range p.Pattern {
		q := math.Floor(o.Start / T)
		op := planOp{stage: o.Stage, start: o.Start - q*T, shift: o.Shift + int(q),
			zero: s.modelDuration(o.Stage, o.Op) == 0}
		switch o.Op {
		case pipeplan.F:
			op.kind, op.topo = kF, 2*o.Stage
		case pipeplan.CF:
			op.kind, op.topo = kCF, 2*o.Stage+1
		case pipeplan.B:
			op.kind, op.topo = kB, 2*n+2*(n-1-o.Stage)
		case pipeplan.CB:
			op.kind, op.topo = kCB, 2*n+2*(n-1-o.Stage)-1
		}
		ops = append(ops, op)
	}
	// Within one period, ops run in the order of their starts (equal within 1e-9·T); at
	// one start, those that take no time first (they end there, before the others begin:
	// an empty transfer at the start of a long one is not behind it), then the older
	// micro-batch (larger shift), then the dependency order.
	tick := 1e-9 * T
	slices.SortStableFunc(ops, func(a, b planOp) int {
		ta, tb := math.Round(a.start/tick), math.Round(b.start/tick)
		switch {
		case ta != tb:
			return cmp.Compare(ta, tb)
		case a.zero != b.zero:
			if a.zero {
				return -1
			}
			return 1
		case a.shift != b.shift:
			return b.shift - a.shift
		}
		return a.topo - b.topo
	})
	lo, hi := ops[0].shift, ops[0].shift
	for _, o := range ops {
		lo, hi = min(lo, o.shift), max(hi, o.shift)
	}
	resOf := make([]int, len(ops))
	perRes := make([]int, len(s.res))
	for i, o := range ops {
		if o.kind == kF || o.kind == kB {
			resOf[i] = s.dev[o.stage]
		} else {
			resOf[i] = linkOf(o.stage)
		}
		perRes[resOf[i]]++
	}
	orders := make([][]task, len(s.res))
	for r, n := range perRes {
		if n > 0 {
			orders[r] = make([]task, 0, n*s.M)
		}
	}
	run := func(base, count int) {
		// Period q holds micro-batch q − shift of each op.
		for q := lo; q < count+hi; q++ {
			for i, o := range ops {
				if b := q - o.shift; b >= 0 && b < count {
					orders[resOf[i]] = append(orders[resOf[i]], task{o.kind, int32(o.stage), int32(base + b)})
				}
			}
		}
	}
	if s.o.Flush {
		for k := range s.K {
			run(k*s.N, s.N)
		}
	} else {
		run(0, s.M)
	}
	return orders
}

// modelDuration returns how long operation op of stage st lasts in the plan's model
// (pipeline.Problem.Cost for F and B, Transfer for CF and CB), whatever the simulation's
// time units.
func (s *sim) modelDuration(st int, op pipeplan.OpKind) float64 {
	g := s.su.stages[st]
	switch op {
	case pipeplan.F, pipeplan.B:
		c, err := s.su.pr.Cost(g)
		if err != nil { // costs has refused such a stage already
			return math.NaN()
		}
		if op == pipeplan.F {
			return c.Fwd
		}
		return c.Bwd
	}
	return s.su.pr.Transfer(g.Last)
}
