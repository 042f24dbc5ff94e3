package pofo

import (
	"math"
	"time"

	"github.com/chainplan/chainplan"
)

// SolveOpportunist returns the OPPORTUNIST schedule of spec §4.13 (L2322-2324), a
// heuristic that keeps the link busy, in the reading of the spec made concrete for the
// operations of §1.3:
//
//   - Forward: while the rest of the chain g..L+1 cannot run with F_all in the memory
//     left, start a group with F_g^all, offload its input and ā_g, then run F_{g+1}^ck,
//     F_{g+2}^∅, … while the offloads still occupy the link (F_∅ cannot read ā_g, hence
//     the F_ck). The next group starts from the last plain output. The rest of the chain
//     runs with F_all.
//   - Backward: the rest, then each group in reverse: its layers g+1.. by persistent
//     rematerialization from ā_g (the rotor DP, with ā_g and the group input stored), then
//     B_g. Every offloaded tensor is prefetched before its first reader after the loss.
//
// Like AUTOCAPPER it is timed without synchronization at the loss. It can fail at low
// memory (L2348): then the error is an *chainplan.InfeasibleError whose smallest budget is
// searched to 1 %.
func SolveOpportunist(c *chainplan.Chain, budgetBytes int64, opts Options) (*chainplan.Plan, error) {
	start := time.Now()
	if err := opts.check(c, budgetBytes); err != nil {
		return nil, err
	}
	exact := exactChain(c)
	slots := remSlots(opts, budgetBytes, exact.n)
	s, ok := opportunist(c, exact, budgetBytes, slots, opts)
	if !ok {
		return infeasible(c, "opportunist", budgetBytes, opts, start, func() (int64, error) { return MinBudgetOpportunist(c, opts) }, SolveOpportunist)
	}
	return finishPlan("opportunist", c, budgetBytes, slots, s, opts, start)
}

// MinBudgetOpportunist returns the smallest budget at which SolveOpportunist finds a
// schedule, searched to 1 % of the store-all peak. Errors: ErrInvalidChain,
// ErrUnsupported for bad options.
func MinBudgetOpportunist(c *chainplan.Chain, opts Options) (int64, error) {
	if err := opts.check(c, 1); err != nil {
		return 0, err
	}
	exact := exactChain(c)
	hi := int64(exact.storeAllPeak())
	return searchBudget(int64(exact.a[0]), hi, max(1, hi/100), func(b int64) bool {
		_, ok := opportunist(c, exact, b, remSlots(opts, b, exact.n), opts)
		return ok
	}), nil
}

// opportunist builds the OPPORTUNIST schedule for a budget and reports whether it replays.
func opportunist(c *chainplan.Chain, exact *chain, budget, slots int64, opts Options) (Schedule, bool) {
	n := exact.n
	m, beta := float64(budget), opts.BandwidthBytesPerS
	if exact.storeAllPeak() <= m {
		return storeAllSchedule(exact, make([]bool, n), true), true
	}
	// tailFits: stages g..L+1 with F_all from input size in, everything below offloaded.
	tailFits := func(g int, in float64) bool {
		stored := in
		for l := g; l <= n; l++ {
			need := max(exact.oF[l]+exact.abar[l], exact.oB[l]+exact.abar[l]+exact.a[l]+exact.a[l-1])
			if stored+need > m {
				return false
			}
			stored += exact.abar[l]
		}
		return true
	}
	type group struct{ g, e, x int }
	var ops []chainplan.Op
	emit := func(k chainplan.OpKind, s int) { ops = append(ops, chainplan.Op{Kind: k, Stage: s}) }
	var groups []group
	var offTensors []chainplan.Tensor // in offload order
	offloaded := map[chainplan.Tensor]bool{}
	now, link := 0.0, 0.0
	ready := map[chainplan.Tensor]float64{chainplan.Tensor{}: 0} // production time
	offload := func(t chainplan.Tensor, size float64) {
		if offloaded[t] {
			return
		}
		offloaded[t] = true
		offTensors = append(offTensors, t)
		link = max(link, ready[t]) + size/beta
	}
	g, x := 1, 0
	for {
		in := exact.a[g-1]
		if x == 1 {
			in = exact.abar[g-1]
		}
		if tailFits(g, in) {
			break
		}
		if g == n {
			return Schedule{}, false
		}
		emit(chainplan.FAll, g)
		now += exact.uF[g]
		saved := tensorOf(g, true)
		ready[saved] = now
		offload(tensorOf(g-1, x == 1), in)
		offload(saved, exact.abar[g])
		h := g + 1
		for now < link && h < n {
			kind := chainplan.FNone
			if h == g+1 {
				kind = chainplan.FCk
			}
			emit(kind, h)
			now += exact.uF[h]
			ready[tensorOf(h, false)] = now
			h++
		}
		groups = append(groups, group{g, h - 1, x})
		if h == g+1 {
			x = 1
		} else {
			x = 0
		}
		g = h
	}
	for l := g; l <= n; l++ {
		emit(chainplan.FAll, l)
	}
	for l := n; l >= g; l-- {
		emit(chainplan.B, l)
	}
	tb := pofoTable(c, budget, slots, beta, true)
	for i := len(groups) - 1; i >= 0; i-- {
		gr := groups[i]
		if gr.e > gr.g {
			// Rematerialize g+1..e from ā_g with the group input stored too; failing that,
			// with ā_g alone (the input then arrives during the sub-chain).
			in := tb.c.a[gr.g-1]
			if gr.x == 1 {
				in = tb.c.abar[gr.g-1]
			}
			a := tb.qa(tb.c.abar[gr.g]) + tb.qa(in)
			if math.IsInf(tb.cdValue(gr.g+1, gr.e, a, 0, false), 1) {
				a = tb.qa(tb.c.abar[gr.g])
			}
			if math.IsInf(tb.cdValue(gr.g+1, gr.e, a, 0, false), 1) {
				return Schedule{}, false
			}
			ops = append(ops, tb.cdSequence(gr.g+1, gr.e, a, 0)...)
		}
		emit(chainplan.B, gr.g)
	}
	lg := analyze(exact, Schedule{Compute: ops})
	if len(lg.issues) > 0 {
		return Schedule{}, false
	}
	var sel []int
	for _, t := range offTensors {
		if id := lg.instAfter(t, producerIndex(lg, t)); id >= 0 {
			sel = append(sel, id)
		}
	}
	s := withTransfers(lg, ops, sel, false)
	probe := s
	probe.SyncAtLoss = true
	return s, simulate(exact, probe, params{beta: beta, limit: m, model: opts.model()}).Valid
}

// producerIndex returns the forward-phase operation that produces the first instance of
// t (−1 for the chain input).
func producerIndex(lg *logical, t chainplan.Tensor) int {
	for id := range lg.insts {
		if in := &lg.insts[id]; in.t == t {
			return in.producer
		}
	}
	return -1
}
