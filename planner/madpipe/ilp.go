package madpipe

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/chainplan/chainplan/planner/milp"
)

// schedulingILP is the ILP of spec §3.2 with the allocation fixed (spec §3.3), on the
// stage chain: with z constant, the resource count (6.1)-(6.4), the link variables z̃ and
// the buffers (6.34)-(6.35) are constants, the windows (6.20)-(6.21) need no big-M, and
// σ (6.31)-(6.32) is the sum of the path's shifts, a linear expression. The corrections
// of spec §3.2.9 hold by construction: one order binary per pair of operations of a
// resource (antisymmetry and transitivity through the start times), communications only
// between devices that differ, the loss folded into the last layer.
//
// Times are divided by the period bound hi and memory by M, so that the big-M constants
// are O(1): the non-overlap constant of a pair is hi + d (an operation ends within
// [0, T] and starts at or after −d), the shift constants are hi + d_q and d_q.
//
// Memory is the validator's time-resolved model (spec §3.4.3), checked at the start of
// every forward and backward, each with its transient memory (the model of
// pipeline.Problem.Cost rather than the thesis' task inputs and outputs, spec §1.5 item
// 4), so that MadPipe and the contiguous plans it competes with are held to one model.
type schedulingILP struct {
	g     *graph
	m     *milp.Model
	hi    float64
	T     milp.Var
	tau   []milp.Var
	w     map[[2]int]milp.Var // w[a,b], a < b: a runs before b in its resource's window
	v, v2 []milp.Var          // per path edge: shift ≥ 1, shift = 2
}

// newSchedulingILP builds the model for periods in [lb, hi].
func newSchedulingILP(g *graph, lb, hi float64) *schedulingILP {
	x := &schedulingILP{g: g, m: &milp.Model{}, hi: hi, w: map[[2]int]milp.Var{}}
	m := x.m
	d := func(o int) float64 { return g.ops[o].dur / hi }
	x.T = m.Continuous("T", lb/hi, 1)
	for o, op := range g.ops {
		x.tau = append(x.tau, m.Continuous(fmt.Sprintf("tau %s%d", op.kind, op.stage), -d(o), 1-d(o)))
		// (6.17): every operation ends within [0, T].
		m.AddConstraint("end", milp.Expr{}.Add(1, x.tau[o]).Add(-1, x.T), milp.LE, -d(o))
	}
	m.AddConstraint("origin", milp.Expr{}.Add(1, x.tau[g.f[0]]), milp.EQ, 0) // (6.19)
	for r, ops := range g.res {
		var load float64
		for _, o := range ops {
			load += d(o)
		}
		m.AddConstraint(fmt.Sprint("load ", r), milp.Expr{}.Add(1, x.T), milp.GE, load)
		for i, a := range ops {
			for _, b := range ops[i+1:] {
				w := m.Binary(fmt.Sprintf("w %d %d", a, b))
				x.w[[2]int{a, b}] = w
				// (6.5)-(6.6): w = 1: b starts after a ends; w = 0: a after b.
				m.AddConstraint("after", milp.Expr{}.Add(1, x.tau[b]).Add(-1, x.tau[a]).Add(-(1+d(b)), w), milp.GE, d(a)-(1+d(b)))
				m.AddConstraint("before", milp.Expr{}.Add(1, x.tau[a]).Add(-1, x.tau[b]).Add(1+d(a), w), milp.GE, d(b))
				// (6.20): the window of a resource spans at most T.
				m.AddConstraint("window", milp.Expr{}.Add(1, x.T).Add(-1, x.tau[a]).Add(1, x.tau[b]), milp.GE, d(a))
				m.AddConstraint("window", milp.Expr{}.Add(1, x.T).Add(-1, x.tau[b]).Add(1, x.tau[a]), milp.GE, d(b))
			}
		}
	}
	for i := range len(g.seq) - 1 {
		p, q := g.seq[i], g.seq[i+1]
		v, v2 := m.Binary(fmt.Sprint("v ", i)), m.Binary(fmt.Sprint("v2 ", i))
		x.v, x.v2 = append(x.v, v), append(x.v2, v2)
		// (6.23)-(6.30) as the shift needs them: q starts after p ends, shift·T later.
		m.AddConstraint("shift1", milp.Expr{}.Add(1, x.tau[q]).Add(-1, x.tau[p]).Add(1+d(q), v), milp.GE, d(p))
		m.AddConstraint("shift2", milp.Expr{}.Add(1, x.tau[q]).Add(1, x.T).Add(-1, x.tau[p]).Add(d(q), v2), milp.GE, d(p))
		m.AddConstraint("shift order", milp.Expr{}.Add(1, v2).Add(-1, v), milp.LE, 0)
	}
	x.memory()
	m.Minimize(milp.Expr{}.Add(1, x.T))
	return x
}

// before returns the expression worth 1 when a precedes b in their resource's window.
func (x *schedulingILP) before(a, b int) milp.Expr {
	if a < b {
		return milp.Expr{}.Add(1, x.w[[2]int{a, b}])
	}
	return milp.Expr{}.Add(-1, x.w[[2]int{b, a}]).Plus(1)
}

// memory adds (6.36) in the validator's model, with the operations' transient memory: at
// the start of each forward or backward r of a device, Σ_k stored_k (S_k + [F_k at or
// before r] − [B_k before r]) + transient(r) ≤ M − static, a backward's own mini-batch
// still held.
func (x *schedulingILP) memory() {
	g := x.g
	mem := float64(g.prob.Limit())
	for dev := range g.prob.Options().GPUs {
		var ks []int
		for k, s := range g.stages {
			if s.GPU == dev {
				ks = append(ks, k)
			}
		}
		for _, j := range ks {
			for _, r := range []int{g.f[j], g.b[j]} {
				var e milp.Expr
				for _, k := range ks {
					a := g.stored[k] / mem
					for i := g.pos[g.f[k]]; i < g.pos[g.b[k]]; i++ {
						e = e.Add(a, x.v[i]).Add(a, x.v2[i])
					}
					if g.f[k] == r {
						e = e.Plus(a)
					} else {
						e = addScaled(e, a, x.before(g.f[k], r))
					}
					if g.b[k] != r {
						e = addScaled(e, -a, x.before(g.b[k], r))
					}
				}
				x.m.AddConstraint(fmt.Sprint("memory ", dev), e, milp.LE, 1-(g.static[dev]+g.ops[r].extra)/mem)
			}
		}
	}
}

func addScaled(e milp.Expr, c float64, f milp.Expr) milp.Expr {
	for _, t := range f.Terms {
		e = e.Add(c*t.Coef, t.Var)
	}
	return e.Plus(c * f.Const)
}

// structure reads the discrete part of a solution: each resource's operations sorted by
// start time, ties (zero durations, solver tolerances) broken by the number of operations
// the order binaries put before each, and each edge's shift.
func (x *schedulingILP) structure(sol *milp.Solution) structure {
	val := make([]float64, len(sol.Values))
	for i := range val {
		val[i] = sol.Value(x.m, milp.Var(i)) // binaries rounded
	}
	st := structure{order: make([][]int, len(x.g.res))}
	for r, ops := range x.g.res {
		preds := map[int]float64{}
		for _, a := range ops {
			for _, b := range ops {
				if a != b {
					preds[b] += x.before(a, b).Eval(val)
				}
			}
		}
		ord := slices.Clone(ops)
		slices.SortStableFunc(ord, func(a, b int) int {
			if ta, tb := val[x.tau[a]], val[x.tau[b]]; math.Abs(ta-tb) > 1e-7 {
				return cmp.Compare(ta, tb)
			}
			return cmp.Compare(preds[a], preds[b])
		})
		st.order[r] = ord
	}
	for i := range x.v {
		st.shift = append(st.shift, int(val[x.v[i]]+val[x.v2[i]]))
	}
	return st
}

// solve runs the model and returns the structure of its solution, the solver's status
// and its period.
func (x *schedulingILP) solve(ctx context.Context, s milp.Solver, opts milp.Options) (structure, *milp.Solution, error) {
	sol, err := s.Solve(ctx, x.m, opts)
	if err != nil || !sol.Status.HasSolution() {
		return structure{}, sol, err
	}
	return x.structure(sol), sol, nil
}
