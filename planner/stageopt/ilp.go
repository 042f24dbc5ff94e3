package stageopt

import (
	"context"
	"fmt"
	"strconv"

	"github.com/chainplan/chainplan/planner/milp"
)

// solveILP returns the kept set of least recomputation time whose bytes fit budget, by the
// exact ILP (package comment):
//
//	minimize   Σ_n Time_n · r_n
//	subject to k_v + r_v ≥ 1         for each non-source, non-output node v whose value the
//	                                 backward reads, or whose own saved tensors it reads
//	           r_n ≤ r_u + k_u       for each input u of n that is neither a source nor a saved
//	                                 output (k_u only when u's value is saved)
//	           Σ_v cost_v · k_v ≤ budget
//
// with binaries k_v (keep v; candidates only) and r_n (recompute n). ok is false when the
// solver proved it infeasible (it never is: keeping nothing fits every budget ≥ 0) or gave
// no solution.
func solveILP(ctx context.Context, s milp.Solver, g *Graph, budget int64, opts milp.Options) (keep []int, ok bool, err error) {
	m := &milp.Model{}
	n := len(g.Nodes)
	kv := make([]milp.Var, n)
	rv := make([]milp.Var, n)
	for i := range kv {
		kv[i], rv[i] = -1, -1
	}
	var obj, mem milp.Expr
	for i := range g.Nodes {
		nd := &g.Nodes[i]
		if nd.Source {
			continue
		}
		rv[i] = m.Binary("r" + strconv.Itoa(i))
		obj = obj.Add(nd.Time, rv[i])
		if g.keepable(i) {
			kv[i] = m.Binary("k" + strconv.Itoa(i))
			mem = mem.Add(float64(g.cost(i)), kv[i])
		}
	}
	for i := range g.Nodes {
		nd := &g.Nodes[i]
		if nd.Source || nd.Output || !((nd.Saved && nd.Bytes > 0) || nd.Internal > 0) {
			continue
		}
		e := milp.Expr{}.Add(1, rv[i])
		if kv[i] >= 0 {
			e = e.Add(1, kv[i])
		}
		m.AddConstraint("need"+strconv.Itoa(i), e, milp.GE, 1)
	}
	for i := range g.Nodes {
		if g.Nodes[i].Source {
			continue
		}
		for _, u := range g.Nodes[i].Inputs {
			nu := &g.Nodes[u]
			if nu.Source || (nu.Output && nu.Saved) {
				continue
			}
			e := milp.Expr{}.Add(1, rv[i]).Add(-1, rv[u])
			if kv[u] >= 0 && nu.Saved {
				e = e.Add(-1, kv[u])
			}
			m.AddConstraint(fmt.Sprintf("avail%d_%d", i, u), e, milp.LE, 0)
		}
	}
	if len(mem.Terms) > 0 {
		m.AddConstraint("memory", mem, milp.LE, float64(budget))
	}
	m.Minimize(obj)
	sol, err := s.Solve(ctx, m, opts)
	if err != nil {
		return nil, false, err
	}
	if !sol.Status.HasSolution() {
		return nil, false, nil
	}
	for i := range g.Nodes {
		if kv[i] >= 0 && sol.Bool(m, kv[i]) {
			keep = append(keep, i)
		}
	}
	return keep, true, nil
}
