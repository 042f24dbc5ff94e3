package offload

import (
	"fmt"
	"math"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
	"github.com/chainplan/chainplan/planner/offload/internal/units"
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
	if err := opts.Check(c, budgetBytes); err != nil {
		return nil, err
	}
	exact := units.Exact(c)
	slots := rematSlots(opts, budgetBytes, exact.N)
	if exact.StoreAllPeak() > float64(budgetBytes) {
		if err := checkReplay("opportunist", c); err != nil {
			return nil, err
		}
	}
	s, ok, err := Opportunist(c, exact, budgetBytes, slots, opts)
	if err != nil {
		return nil, err
	}
	if !ok {
		return Infeasible(c, "opportunist", budgetBytes, opts, start, func() (int64, error) { return MinBudgetOpportunist(c, opts) }, SolveOpportunist)
	}
	return finish("opportunist", c, budgetBytes, slots, s, opts, start)
}

// MinBudgetOpportunist returns the smallest budget at which SolveOpportunist finds a
// schedule, searched to 1 % of the store-all peak. Errors: ErrInvalidChain,
// ErrUnsupported for bad options.
func MinBudgetOpportunist(c *chainplan.Chain, opts Options) (int64, error) {
	return minBudgetByProbes("opportunist", c, opts, func(exact *units.Chain, b int64) (bool, error) {
		_, ok, err := Opportunist(c, exact, b, rematSlots(opts, b, exact.N), opts)
		return ok, err
	})
}

// Opportunist builds the OPPORTUNIST schedule for a budget, on c and its exact form, with
// the rematerialization at the given slots (rematSlots), and reports whether it replays:
// SolveOpportunist's schedule, which POFO's Solve also compares. Errors: a
// *chainplan.SizeError when the rematerialization's table would pass
// chainplan.TableLimit, checked before its index is allocated and as it fills.
func Opportunist(c *chainplan.Chain, exact *units.Chain, budget, slots int64, opts Options) (Schedule, bool, error) {
	n := exact.N
	m, beta := float64(budget), opts.BandwidthBytesPerS
	if exact.StoreAllPeak() <= m {
		return StoreAll(exact, make([]bool, n), true), true, nil
	}
	// tailFits: stages g..L+1 with F_all from input size in, everything below offloaded.
	tailFits := func(g int, in float64) bool {
		stored := in
		for l := g; l <= n; l++ {
			need := max(exact.OF[l]+exact.ABar[l], exact.OB[l]+exact.ABar[l]+exact.A[l]+exact.A[l-1])
			if stored+need > m {
				return false
			}
			stored += exact.ABar[l]
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
		in := exact.A[g-1]
		if x == 1 {
			in = exact.ABar[g-1]
		}
		if tailFits(g, in) {
			break
		}
		if g == n {
			return Schedule{}, false, nil
		}
		emit(chainplan.FAll, g)
		now += exact.UF[g]
		saved := tensorOf(g, true)
		ready[saved] = now
		offload(tensorOf(g-1, x == 1), in)
		offload(saved, exact.ABar[g])
		h := g + 1
		for now < link && h < n {
			kind := chainplan.FNone
			if h == g+1 {
				kind = chainplan.FCk
			}
			emit(kind, h)
			now += exact.UF[h]
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
	unit := discretize.Unit(budget, slots)
	if err := chainplan.CheckTables("opportunist", c.Len(),
		fmt.Sprintf("the index of its rematerialization table (%d sub-chains at %d units)", 2*(n+1)*(n+1), budget/unit),
		units.IndexBytes(n, int(min(budget/unit, math.MaxInt32))),
		func(int64) string { return "use --algo greedy or --algo offload (no rematerialization table)" }); err != nil {
		return Schedule{}, false, err
	}
	tb := units.TableForBudget(c, budget, slots, beta)
	for i := len(groups) - 1; i >= 0; i-- {
		gr := groups[i]
		if gr.e > gr.g {
			// Rematerialize g+1..e from ā_g with the group input stored too; failing that,
			// with ā_g alone (the input then arrives during the sub-chain).
			in := tb.C.A[gr.g-1]
			if gr.x == 1 {
				in = tb.C.ABar[gr.g-1]
			}
			a := tb.QA(tb.C.ABar[gr.g]) + tb.QA(in)
			if math.IsInf(tb.CD(gr.g+1, gr.e, a, 0, false), 1) {
				a = tb.QA(tb.C.ABar[gr.g])
			}
			if math.IsInf(tb.CD(gr.g+1, gr.e, a, 0, false), 1) {
				if tb.Overflow() {
					return Schedule{}, false, overflowError("opportunist", c, tb)
				}
				return Schedule{}, false, nil
			}
			ops = append(ops, tb.CDSequence(gr.g+1, gr.e, a, 0)...)
		}
		emit(chainplan.B, gr.g)
	}
	lg := Analyze(exact, Schedule{Compute: ops})
	if len(lg.Issues) > 0 {
		return Schedule{}, false, nil
	}
	var sel []int
	for _, t := range offTensors {
		if id := lg.InstAfter(t, producerIndex(lg, t)); id >= 0 {
			sel = append(sel, id)
		}
	}
	s := withTransfers(lg, sel, false)
	probe := s
	probe.SyncAtLoss = true
	return s, Replay(exact, probe, SimOptions{BandwidthBytesPerS: beta, LimitBytes: int64(m), Model: opts.MemoryModel()}).Valid, nil
}

// producerIndex returns the forward-phase operation that produces the first instance of
// t (−1 for the chain input).
func producerIndex(lg *Analysis, t chainplan.Tensor) int {
	for id := range lg.Insts {
		if in := &lg.Insts[id]; in.Tensor == t {
			return in.Producer
		}
	}
	return -1
}
