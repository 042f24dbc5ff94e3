package rotor

import (
	"github.com/chainplan/chainplan/planner/internal/discretize"
	"github.com/chainplan/chainplan/planner/internal/dpcount"
)

// mEmpty is m_∅^{s,t} of spec §3.1: the memory needed to run F_s^ck, F_{s+1}^∅ … F_{t-1}^∅
// while δ_t is held, the input a_{s-1} counted outside. The h = t term is omitted
// (spec §3.1, E14): F_t always runs as F_all, whose own check dominates it.
func mEmpty(c *discretize.Chain, s, t int) int64 {
	dt := c.Grad(t)
	m := dt + c.A[s] + c.OF[s]
	for h := s + 1; h <= t-1; h++ {
		m = max(m, dt+c.A[h-1]+c.A[h]+c.OF[h])
	}
	return m
}

// mAll is m_all^{s,t} of spec §3.1: the memory needed to run F_s^all with δ_t held, and to
// run B_s later. Note δ_t, not δ_s, in the forward term (spec pitfall 5).
func mAll(c *discretize.Chain, s, t int) int64 {
	return max(c.Grad(t)+c.ABar[s]+c.OF[s], c.ABar[s]+c.Grad(s)+c.Grad(s-1)+c.OB[s])
}

// needTable holds, for every sub-chain (s, t), the smallest budget m (input excluded) at
// which C_MP(s, t, m) is finite. Because C_MP is non-increasing in m, the finite entries of
// a row are exactly those from need(s, t) on, so the DP never adds an infinity and
// the smallest feasible budget of a chain is need(1, N) + a_0 without any table.
type needTable struct {
	n    int
	need []int64 // (n+1)×(n+1), row-major by s
}

func (nt *needTable) at(s, t int) int64 { return nt.need[s*(nt.n+1)+t] }

// minMemory evaluates the feasibility side of Theorem 6 alone: each branch of (2.10) is
// finite iff m clears its threshold and each sub-call's budget clears that sub-chain's
// need, so need(s,t) = min over branches of the max of those bounds. The time complexity
// is O(N³); it needs no memory discretization.
func minMemory(c *discretize.Chain, revolve bool) *needTable {
	dpcount.Need.Add(1)
	n := c.N
	nt := &needTable{n: n, need: make([]int64, (n+1)*(n+1))}
	set := func(s, t int, v int64) { nt.need[s*(n+1)+t] = v }
	for s := 1; s <= n; s++ {
		set(s, s, mAll(c, s, s))
	}
	for d := 1; d < n; d++ {
		for s := 1; s+d <= n; s++ {
			t := s + d
			best := int64(-1)
			me := mEmpty(c, s, t)
			for sp := s; sp < t; sp++ {
				v := max(me, c.A[sp]+nt.at(sp+1, t), nt.at(s, sp))
				if best < 0 || v < best {
					best = v
				}
			}
			if !revolve {
				v := max(mAll(c, s, t), c.ABar[s]+nt.at(s+1, t))
				if v < best {
					best = v
				}
			}
			set(s, t, best)
		}
	}
	return nt
}
