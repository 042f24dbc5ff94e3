package madpipe

import (
	"math"
	"slices"

	"github.com/chainplan/chainplan/pipeplan"
)

// structure is the discrete part of a 1-periodic pattern of a graph: the order of the
// operations of each resource within its window of one period, and the shift of each
// edge of the mini-batch's path (the periods between the start of an operation's period
// and its successor's, 0, 1 or 2). The memory of every device follows from it alone
// (spec §3.4.3: counts change only at starts of forwards and ends of backwards), and so
// does the smallest period, which timing computes exactly: the solver's start times,
// right up to its tolerances, are never used.
type structure struct {
	order [][]int // per resource, its operations in window order
	shift []int   // per edge of graph.seq
}

// constraint is τ_to ≥ τ_from + c − k·T.
type constraint struct {
	from, to int
	c        float64
	k        int
}

// constraints lists the difference constraints of a structure: each resource's
// operations one after the other, the last ending at most T after the first starts (so
// its circular intervals do not overlap), and each edge's successor starting after its
// predecessor ends, shift periods later.
func (g *graph) constraints(st structure) []constraint {
	var cs []constraint
	for _, ord := range st.order {
		for i := 1; i < len(ord); i++ {
			cs = append(cs, constraint{ord[i-1], ord[i], g.ops[ord[i-1]].dur, 0})
		}
		if n := len(ord); n > 1 {
			cs = append(cs, constraint{ord[n-1], ord[0], g.ops[ord[n-1]].dur, 1})
		}
	}
	for i, s := range st.shift {
		p, q := g.seq[i], g.seq[i+1]
		cs = append(cs, constraint{p, q, g.ops[p].dur, s})
	}
	return cs
}

// startTimes returns the earliest start times satisfying cs at period T (longest paths
// from 0 by Bellman-Ford), or false when a cycle of positive length makes T too small.
func startTimes(n int, cs []constraint, T float64) ([]float64, bool) {
	tau := make([]float64, n)
	for range n + 1 {
		changed := false
		for _, c := range cs {
			if v := tau[c.from] + c.c - float64(c.k)*T; v > tau[c.to] {
				tau[c.to], changed = v, true
			}
		}
		if !changed {
			return tau, true
		}
	}
	return nil, false
}

// timing returns the smallest period (to a relative 1e-12) at which the structure is
// feasible, at least lo, with the start times there; false when no period is, or when it
// exceeds hi. The feasible periods are a half-line: every cycle has a length Σc − T·Σk
// with Σk ≥ 0.
func (g *graph) timing(st structure, lo, hi float64) (float64, []float64, bool) {
	cs := g.constraints(st)
	n := len(g.ops)
	lo = max(lo, g.loads())
	if _, ok := startTimes(n, cs, hi); !ok {
		return 0, nil, false
	}
	if tau, ok := startTimes(n, cs, lo); ok {
		return lo, tau, true
	}
	for range 200 {
		mid := lo + (hi-lo)/2
		if hi-lo <= 1e-12*hi || mid <= lo || mid >= hi {
			break
		}
		if _, ok := startTimes(n, cs, mid); ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	tau, _ := startTimes(n, cs, hi)
	return hi, tau, true
}

// plan builds the pipeline plan of the structure at period T with start times tau: each
// operation's mini-batch offset is the sum of the shifts before it on the path, plus the
// periods its start lies past 0; starts are reduced into [0, T) and F_0's shift made 0.
func (g *graph) plan(T float64, tau []float64, st structure) *pipeplan.Plan {
	p := g.prob.Header(Algo, T)
	p.Stages = slices.Clone(g.stages)
	h := 0
	shift := make([]int, len(g.ops))
	for i, x := range g.seq {
		q := math.Floor(tau[x] / T)
		shift[x] = h + int(q)
		if i < len(st.shift) {
			h += st.shift[i]
		}
	}
	base := shift[g.f[0]]
	for x, op := range g.ops {
		start := tau[x] - math.Floor(tau[x]/T)*T
		if start >= T || start < 0 {
			start = 0
		}
		p.Pattern = append(p.Pattern, pipeplan.Op{Op: op.kind, Stage: op.stage, Start: start, Duration: op.dur, Shift: shift[x] - base})
	}
	return p
}

// memory returns, per device, the weights and buffers plus the peak of the stored and
// transient bytes over the period under the structure: just after an operation r of the
// device starts, the count of stage k is S_k + [F_k at or before r] − [B_k before r], S_k
// being the shifts between F_k and B_k on the path, and r's transient comes on top.
func (g *graph) memory(st structure) []float64 {
	mem := slices.Clone(g.static)
	for dev := range g.prob.Options().GPUs {
		rank := map[int]int{}
		for i, x := range st.order[dev] {
			rank[x] = i
		}
		var peak float64
		for _, x := range st.order[dev] {
			if g.ops[x].kind != pipeplan.F && g.ops[x].kind != pipeplan.B {
				continue
			}
			act := g.ops[x].extra
			for k, s := range g.stages {
				if s.GPU != dev {
					continue
				}
				n := g.held(st, k)
				if rank[g.f[k]] <= rank[x] {
					n++
				}
				if rank[g.b[k]] < rank[x] {
					n--
				}
				act += float64(n) * g.stored[k]
			}
			peak = max(peak, act)
		}
		mem[dev] += peak
	}
	return mem
}

// held returns S_k, the shifts on the path from F_k to B_k.
func (g *graph) held(st structure, k int) int {
	n := 0
	for i := g.pos[g.f[k]]; i < g.pos[g.b[k]]; i++ {
		n += st.shift[i]
	}
	return n
}
