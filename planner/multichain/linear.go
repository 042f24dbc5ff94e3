package multichain

import (
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/rotor"
)

// This file is heuristic H1 of spec §6 (the linearization the thesis proposes as future
// work, L3278): concatenate the towers into one chain, each stage passing the other towers'
// tensors through unchanged, solve it with rotor, and map the schedule back to the towers.

// maxAllOrders is the largest K whose K! concatenation orders are all tried; beyond it only
// the given order and its reverse are.
const maxAllOrders = 4

// linear is the chain of one concatenation order: its stages in order, and for each the
// branch (0-based) and the stage within the branch it stands for.
type linear struct {
	order  []int // branches with stages, 0-based, in concatenation order
	chain  *chainplan.Chain
	branch []int // branch of linear stage t (1-based t, index t−1)
	stage  []int
}

// linearize builds the chain of order (every branch with stages once). Stage q of the i-th
// tower of the order carries what must stay in memory beside it until the loss: the
// outputs of the towers before it, the inputs of the towers after it, and the inputs of the
// towers without stages, which go straight into the loss. So
//
//	out_bytes   = a_q + carry_i        saved_bytes = max(ā_q, a_q) + carry_i
//
// (a saved size below the output, allowed for a tower's last stage, becomes the output: in
// the concatenation that stage is not the last one), and the chain's input is every tower
// input. Rotor's accounting then never counts less than the towers hold at any step of the
// mapped schedule: a carried tensor is counted once in every stored value that carries it,
// at least once while it is live, and the tower inputs are in the chain's input a_0 until
// the last backward (spec §6: conservative).
func linearize(mc *chainplan.MultiChain, order []int) *linear {
	lin := &linear{order: order, chain: &chainplan.Chain{Format: chainplan.ChainFormat, Loss: mc.Loss}}
	var straight int64 // inputs of the towers without stages
	for j := range mc.Branches {
		c := &mc.Branches[j]
		lin.chain.InputBytes += c.InputBytes
		if c.Len() == 0 {
			straight += c.InputBytes
		}
	}
	for i, j := range order {
		carry := straight
		for _, before := range order[:i] {
			c := &mc.Branches[before]
			carry += c.Stages[c.Len()-1].OutBytes
		}
		for _, after := range order[i+1:] {
			carry += mc.Branches[after].InputBytes
		}
		for q, st := range mc.Branches[j].Stages {
			st.Name = fmt.Sprintf("%d.%s", j+1, st.Name)
			st.SavedBytes = max(st.SavedBytes, st.OutBytes) + carry
			st.OutBytes += carry
			lin.chain.Stages = append(lin.chain.Stages, st)
			lin.branch, lin.stage = append(lin.branch, j), append(lin.stage, q+1)
		}
	}
	return lin
}

// orders returns the concatenation orders H1 tries: every permutation of the branches with
// stages for K ≤ maxAllOrders, else the branch order and its reverse; orders whose chains
// are equal (copies of one tower) are tried once.
func orders(mc *chainplan.MultiChain) []*linear {
	var with []int
	for j := range mc.Branches {
		if mc.Branches[j].Len() > 0 {
			with = append(with, j)
		}
	}
	if len(with) == 0 {
		return nil
	}
	var perms [][]int
	if len(with) <= maxAllOrders {
		perms = permutations(with)
	} else {
		rev := slices.Clone(with)
		slices.Reverse(rev)
		perms = [][]int{with, rev}
	}
	var out []*linear
	for _, p := range perms {
		lin := linearize(mc, p)
		if !slices.ContainsFunc(out, func(o *linear) bool { return sameChain(o.chain, lin.chain) }) {
			out = append(out, lin)
		}
	}
	return out
}

// permutations returns every order of xs, the identity first.
func permutations(xs []int) [][]int {
	if len(xs) <= 1 {
		return [][]int{slices.Clone(xs)}
	}
	var out [][]int
	for i := range xs {
		rest := slices.Concat(xs[:i], xs[i+1:])
		for _, p := range permutations(rest) {
			out = append(out, append([]int{xs[i]}, p...))
		}
	}
	return out
}

// sameChain reports whether two chains have the same sizes and times (names aside).
func sameChain(a, b *chainplan.Chain) bool {
	if a.InputBytes != b.InputBytes || a.Loss != b.Loss || len(a.Stages) != len(b.Stages) {
		return false
	}
	for i := range a.Stages {
		x, y := a.Stages[i], b.Stages[i]
		x.Name, y.Name = "", ""
		if !reflect.DeepEqual(x, y) { // the v2 fields are pointers and a slice
			return false
		}
	}
	return true
}

// towerOps maps a sequence of the linear chain to the towers: linear stage t is stage q of
// branch j, the loss (stage N) is branch 0. F_none on a tower's first stage becomes F_ck:
// the tower input stays until its B_1 whatever the concatenation does with the boundary
// value it is part of. After B_1 of a branch, and after the loss for a branch without
// stages, free_grad drops an input gradient that is not kept. Forwards that only recompute
// what the concatenation carries (a tower output needed again for a boundary value after
// the loss) are then removed (prune).
func (lin *linear) towerOps(mc *chainplan.MultiChain, seq []chainplan.Op) []chainplan.Op {
	n := lin.chain.Len() + 1
	out := make([]chainplan.Op, 0, len(seq)+mc.K())
	for _, o := range seq {
		if o.Stage == n {
			out = append(out, chainplan.Op{Kind: o.Kind})
			if o.Kind == chainplan.B {
				for j := range mc.Branches {
					if mc.Branches[j].Len() == 0 && !mc.Keep(j+1) {
						out = append(out, chainplan.Op{Kind: chainplan.FreeGrad, Branch: j + 1})
					}
				}
			}
			continue
		}
		j, q := lin.branch[o.Stage-1], lin.stage[o.Stage-1]
		kind := o.Kind
		if kind == chainplan.FNone && q == 1 {
			kind = chainplan.FCk
		}
		out = append(out, chainplan.Op{Kind: kind, Branch: j + 1, Stage: q})
		if kind == chainplan.B && q == 1 && !mc.Keep(j+1) {
			out = append(out, chainplan.Op{Kind: chainplan.FreeGrad, Branch: j + 1})
		}
	}
	return prune(mc, out)
}

// solveLinear is heuristic H1 at budgetBytes: rotor (with slots memory slots) on the chain
// of every order, each schedule mapped to the towers and replayed, the fastest kept. It
// returns nil and no error when no order fits the budget.
func solveLinear(mc *chainplan.MultiChain, budgetBytes, slots int64) (*chainplan.Plan, error) {
	var best *chainplan.Plan
	for _, lin := range orders(mc) {
		opts := rotor.Options{Slots: slots}
		p, err := rotor.Solve(lin.chain, budgetBytes, opts)
		var ie *chainplan.InfeasibleError
		if errors.As(err, &ie) {
			// Rounding sizes to the budget's unit makes rotor's feasibility not quite
			// monotone in the budget: a budget above rotor's smallest may be refused. The
			// plan at the smallest fits it, so H1 is feasible from its MinBudget on.
			if ie.MinBudgetBytes <= 0 || ie.MinBudgetBytes > budgetBytes {
				continue
			}
			p, err = rotor.SolveMin(lin.chain, opts)
		}
		if err != nil {
			return nil, fmt.Errorf("multichain-linear, order %v: %w", oneBased(lin.order), err)
		}
		seq := lin.towerOps(mc, p.Sequence)
		rep, err := replay(mc, seq, budgetBytes)
		if err != nil {
			return nil, fmt.Errorf("multichain-linear, order %v: internal error: %w", oneBased(lin.order), err)
		}
		if best == nil || rep.Makespan < best.Makespan {
			best = &chainplan.Plan{Feasible: true, Makespan: rep.Makespan, PeakBytes: rep.Peak, BudgetBytes: budgetBytes,
				Slots: p.Slots, Sequence: seq, Multichain: &chainplan.MultichainPlan{Branches: mc.K(),
					KeepInputGrad: keeps(mc), Order: oneBased(lin.order)}}
		}
	}
	return best, nil
}

// linearMinBudget returns H1's smallest budget: the smallest of rotor's over the orders.
// Errors: ErrUnsupported when the bundle has no stage at all (nothing to concatenate).
func linearMinBudget(mc *chainplan.MultiChain, slots int64) (int64, error) {
	lins := orders(mc)
	if len(lins) == 0 {
		return 0, fmt.Errorf("%w: multichain-linear: no tower has a stage", chainplan.ErrUnsupported)
	}
	var best int64 = -1
	for _, lin := range lins {
		b, err := rotor.MinBudget(lin.chain, rotor.Options{Slots: slots})
		if err != nil {
			return 0, fmt.Errorf("multichain-linear, order %v: %w", oneBased(lin.order), err)
		}
		if best < 0 || b < best {
			best = b
		}
	}
	return best, nil
}

func oneBased(order []int) []int {
	out := make([]int, len(order))
	for i, j := range order {
		out[i] = j + 1
	}
	return out
}
