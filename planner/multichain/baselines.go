package multichain

import (
	"github.com/chainplan/chainplan"
)

// StoreAllSequence returns the schedule without recomputation: every tower forward with
// F_all, branch after branch, the joint loss, then the backwards, the last branch first,
// each input gradient that is not kept dropped as soon as its tower is done. Its makespan
// is Σ(u_F+u_B) plus the loss, a lower bound for every schedule.
func StoreAllSequence(mc *chainplan.MultiChain) []chainplan.Op {
	return towerSequence(mc, func(j, q int) []chainplan.Op {
		return []chainplan.Op{{Kind: chainplan.FAll, Branch: j, Stage: q}}
	}, func(j, q int) []chainplan.Op {
		return []chainplan.Op{{Kind: chainplan.B, Branch: j, Stage: q}}
	})
}

// PerBlockSequence returns the schedule of checkpointing every stage on its own, as
// torch.utils.checkpoint around each block does: the forward keeps every stage's input
// (F_ck), and each backward first recomputes its stage (F_all, then B).
func PerBlockSequence(mc *chainplan.MultiChain) []chainplan.Op {
	return towerSequence(mc, func(j, q int) []chainplan.Op {
		return []chainplan.Op{{Kind: chainplan.FCk, Branch: j, Stage: q}}
	}, func(j, q int) []chainplan.Op {
		return []chainplan.Op{{Kind: chainplan.FAll, Branch: j, Stage: q}, {Kind: chainplan.B, Branch: j, Stage: q}}
	})
}

// towerSequence writes fwd(j, q) for every stage of branches 1..K, the loss, then bwd(j, q)
// for branches K..1 and stages L_j..1, with the free_grad of each input gradient not kept.
func towerSequence(mc *chainplan.MultiChain, fwd, bwd func(j, q int) []chainplan.Op) []chainplan.Op {
	var seq []chainplan.Op
	for j := 1; j <= mc.K(); j++ {
		for q := 1; q <= mc.Branches[j-1].Len(); q++ {
			seq = append(seq, fwd(j, q)...)
		}
	}
	seq = append(seq, chainplan.Op{Kind: chainplan.FAll}, chainplan.Op{Kind: chainplan.B})
	for j := mc.K(); j >= 1; j-- {
		for q := mc.Branches[j-1].Len(); q >= 1; q-- {
			seq = append(seq, bwd(j, q)...)
		}
		if !mc.Keep(j) {
			seq = append(seq, chainplan.Op{Kind: chainplan.FreeGrad, Branch: j})
		}
	}
	return seq
}

// storeAllPeak returns the exact peak of StoreAllSequence: above it no recomputation is
// needed.
func storeAllPeak(mc *chainplan.MultiChain) int64 {
	rep, _ := replay(mc, StoreAllSequence(mc), -1)
	return rep.Peak
}

// storeAllPlan returns the no-recomputation plan when its exact peak fits the budget, nil
// otherwise.
func storeAllPlan(mc *chainplan.MultiChain, budgetBytes int64) *chainplan.Plan {
	seq := StoreAllSequence(mc)
	rep, err := replay(mc, seq, budgetBytes)
	if err != nil {
		return nil
	}
	return &chainplan.Plan{Feasible: true, Makespan: rep.Makespan, PeakBytes: rep.Peak, BudgetBytes: budgetBytes,
		Sequence: seq, Multichain: &chainplan.MultichainPlan{Branches: mc.K(), KeepInputGrad: keeps(mc)}}
}
