package multichain

import (
	"fmt"
	"math"

	"github.com/chainplan/chainplan"
)

// dpMinBudget returns H0's smallest budget: m_min(L, b⁰) slots of Lemma 2 and the reserve,
// m_min·s + R. It takes O(ΣL_j) time and builds no table.
func dpMinBudget(mc *chainplan.MultiChain) int64 {
	in := instanceOf(mc)
	return slotModelOf(mc).budget(minSlots(in.L, in.L, in.b0, in.keepInputs))
}

// solveDP is heuristic H0 at budgetBytes: the exact dynamic program on slots of the
// largest activation, its schedule converted to chain operations (spec §9.3). It returns
// nil and no error when the budget leaves fewer slots than m_min.
func solveDP(mc *chainplan.MultiChain, budgetBytes int64) (*chainplan.Plan, error) {
	in := instanceOf(mc)
	sm := slotModelOf(mc)
	m64 := sm.slots(budgetBytes)
	if m64 < int64(minSlots(in.L, in.L, in.b0, in.keepInputs)) {
		return nil, nil
	}
	m := int(min(m64, int64(in.k()+in.sumL()+in.bare()))) // more slots change nothing (spec §5.2, clamp)
	tb, err := newTable(in, m)
	if err != nil {
		return nil, err
	}
	value := tb.value(m)
	if value == inf {
		panic("multichain: no schedule at or above m_min")
	}
	dec, ops := tb.schedule(m)
	return &chainplan.Plan{Feasible: true, Makespan: value, BudgetBytes: budgetBytes, Slots: m64,
		Sequence: chainOps(ops), Multichain: &chainplan.MultichainPlan{Branches: mc.K(), KeepInputGrad: keeps(mc),
			UnitBytes: sm.UnitBytes, ReserveBytes: sm.ReserveBytes, Decisions: dec}}, nil
}

// dpFrontier returns H0's optimal makespan at every slot count from m_min to K+ΣL, from
// one table, as (budget, makespan) pairs where the makespan drops.
func dpFrontier(mc *chainplan.MultiChain) ([]int64, []float64, error) {
	in := instanceOf(mc)
	sm := slotModelOf(mc)
	top := in.k() + in.sumL() + in.bare()
	tb, err := newTable(in, top)
	if err != nil {
		return nil, nil, err
	}
	var budgets []int64
	var spans []float64
	prev := math.Inf(1)
	for m := minSlots(in.L, in.L, in.b0, in.keepInputs); m <= top; m++ {
		if v := tb.value(m); v < prev*(1-1e-12) {
			budgets, spans = append(budgets, sm.budget(m)), append(spans, v)
			prev = v
		}
	}
	if len(budgets) == 0 {
		return nil, nil, fmt.Errorf("multichain: no feasible slot count up to %d", top)
	}
	return budgets, spans, nil
}

// keeps returns KeepInputGrad with one value per branch.
func keeps(mc *chainplan.MultiChain) []bool {
	b := make([]bool, mc.K())
	for j := range b {
		b[j] = mc.Keep(j + 1)
	}
	return b
}
