package multichain

import (
	"github.com/chainplan/chainplan"
)

// unitKind is an operation of the thesis's model (spec Table 1.1).
type unitKind uint8

const (
	unitS    unitKind = iota // S_p: replicate a_p (a checkpoint)
	unitF                    // F_p: a_{p−1} → a_p in place
	unitB                    // B_p: {δ_p, a_{p−1}} → δ_{p−1}
	unitLoss                 // Loss: every a_{L_j} → δ_{L_j}
	unitDrop                 // D̄: drop δ_0
)

// unitOp is one operation of Table 1.1 on branch (0-based) at position pos (p of S_p, F_p,
// B_p; 0 for the loss and D̄).
type unitOp struct {
	kind        unitKind
	branch, pos int
}

// schedule reconstructs the plan of Opt(L, m) from the argmins (spec §5.3): the decisions
// (k, i) in order, and the operations of Table 1.1. Decision t replicates the head of
// branch k and forwards it i steps; after the loss, the adjoint chains of the decisions run
// in reverse order, each followed by D̄ when its branch's input gradient is not kept. m
// must be feasible.
func (tb *table) schedule(m int) ([]chainplan.Decision, []unitOp) {
	e := &emitter{tb: tb, r: append([]int(nil), tb.in.L...)}
	e.emit(tb.top(), m)
	return e.decisions, e.ops
}

type emitter struct {
	tb        *table
	r         []int // remaining lengths of the current state
	decisions []chainplan.Decision
	ops       []unitOp
}

// emit writes the schedule of Opt(R, μ), R = e.r at state s.
func (e *emitter) emit(s, mu int) {
	tb, in := e.tb, e.tb.in
	at := min(mu, tb.muMax)*tb.states + s
	k, i := int(tb.argK[at]), int(tb.argI[at])
	if k < 0 {
		if tb.val[at] == inf {
			panic("multichain: schedule of an infeasible state")
		}
		e.ops = append(e.ops, unitOp{kind: unitLoss})
		for j, n := range in.L {
			if n == 0 && !in.b0[j] {
				e.ops = append(e.ops, unitOp{kind: unitDrop, branch: j})
			}
		}
		return
	}
	off := in.L[k] - e.r[k]
	others := 0 // what the other branches hold, taken before b_k becomes 1 (spec §10.2)
	for j := range e.r {
		if j != k {
			others += btoi(in.b0[j] || e.r[j] < in.L[j]) + in.stay(e.r[j], in.L[j])
		}
	}
	keep := in.b0[k] || off > 0
	e.decisions = append(e.decisions, chainplan.Decision{Branch: k + 1, Steps: i})
	e.forward(k, off, i)
	e.r[k] -= i
	e.emit(s-i*tb.stride[k], mu-1)
	e.r[k] += i
	e.revolve(k, off, i-1, mu-others)
	if !keep {
		e.ops = append(e.ops, unitOp{kind: unitDrop, branch: k})
	}
}

// forward replicates a_p of branch k and forwards the copy i steps.
func (e *emitter) forward(k, p, i int) {
	e.ops = append(e.ops, unitOp{kind: unitS, branch: k, pos: p})
	for q := p + 1; q <= p+i; q++ {
		e.ops = append(e.ops, unitOp{kind: unitF, branch: k, pos: q})
	}
}

// revolve writes the adjoint chain AC_k(p, ℓ, μ): from a_p and δ_{p+ℓ+1} to δ_p.
func (e *emitter) revolve(k, p, l, mu int) {
	if l == 0 {
		e.ops = append(e.ops, unitOp{kind: unitB, branch: k, pos: p + 1})
		return
	}
	i := e.tb.ac[k].choice(p, l, mu)
	e.forward(k, p, i)
	e.revolve(k, p+i, l-i, mu-1)
	e.revolve(k, p, i-1, mu)
}

// chainOps converts operations of Table 1.1 into the chain operations of a multichain plan
// (spec §9.3): S_p then F_{p+1} is F_ck of stage p+1 (the emitter always follows S with F);
// F alone is F_none; B_q is F_all then B of stage q (the AD backward needs ā_q, which only
// F_all stores); the loss is F_all then B of branch 0, stage 0; D̄ is free_grad. Branches
// are 1-based in the result.
func chainOps(ops []unitOp) []chainplan.Op {
	out := make([]chainplan.Op, 0, len(ops)+len(ops)/2)
	for i := 0; i < len(ops); i++ {
		o := ops[i]
		j := o.branch + 1
		switch o.kind {
		case unitS:
			i++ // the F that follows
			out = append(out, chainplan.Op{Kind: chainplan.FCk, Branch: j, Stage: ops[i].pos})
		case unitF:
			out = append(out, chainplan.Op{Kind: chainplan.FNone, Branch: j, Stage: o.pos})
		case unitB:
			out = append(out, chainplan.Op{Kind: chainplan.FAll, Branch: j, Stage: o.pos},
				chainplan.Op{Kind: chainplan.B, Branch: j, Stage: o.pos})
		case unitLoss:
			out = append(out, chainplan.Op{Kind: chainplan.FAll}, chainplan.Op{Kind: chainplan.B})
		case unitDrop:
			out = append(out, chainplan.Op{Kind: chainplan.FreeGrad, Branch: j})
		}
	}
	return out
}
