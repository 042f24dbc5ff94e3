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

// The exact memory model (docs/rotor.md) adds a bit to a sub-chain (s, t): whether its
// input a_{s-1} is pinned, held by the filled graph of stage s-1 that saved it, which
// F_s^all then cannot free. Plane 1 of a sub-chain is the pinned one. It differs from plane
// 0 only for a stage where Pinnable(s) holds; the table stores it only there.

// after returns the plane of the sub-chain (s+1, t) that F_s^all leaves: its input a_s is
// the output of stage s's filled graph, pinned when the stage saved it.
func after(c *discretize.Chain, s int) int {
	if c.OutSaved(s) {
		return 1
	}
	return 0
}

// mAll is m_all^{s,t} of spec §3.1: the memory needed to run F_s^all with δ_t held, and to
// run B_s later. Note δ_t, not δ_s, in the forward term (spec pitfall 5). With the exact
// memory model B_s holds ABarB(s), which leaves out an output the stage did not save, and
// finds the input a_{s-1} gone when F_s^all was its last reader and no graph holds it:
// Credit(s, pinned) more room than the input counted outside.
//
// The base case (s, s) of a stage before the loss runs F_s^all right before B_s, the
// recomputation that stops at the saved tensors: its forward term is EarlyPeak(s).
func mAll(c *discretize.Chain, s, t, p int) int64 {
	fwd := c.ABar[s] + c.OF[s]
	if s == t && s < c.N {
		fwd = c.EarlyPeak(s)
	}
	return max(c.Grad(t)+fwd, c.ABarB(s)+c.Grad(s)+c.Grad(s-1)+c.OB[s]-c.Credit(s, p == 1))
}

// mOpt is mAll for F_s^all with option o ≥ 1: the forward keeps the option's ā and has its
// temporaries; right before B_s the option's recomputation restores what B_s needs (its
// temporaries on top, bounded by the option's o_F), and B_s runs as without the option.
// The input stays to B_s, which recomputes from it: no credit.
//
// A form option (discretize.Option.Form) runs another computation of the stage and
// recomputes nothing: B_s holds the form's own ā with its own temporaries.
func mOpt(c *discretize.Chain, s, t, o int) int64 {
	opt := c.Option(s, o)
	if opt.Form {
		return max(c.Grad(t)+opt.ABar+opt.OF, opt.ABarB+c.Grad(s)+c.Grad(s-1)+opt.OB)
	}
	return max(c.Grad(t)+opt.ABar+opt.OF, c.ABarB(s)+c.Grad(s)+max(c.Grad(s-1)+c.OB[s], opt.OF))
}

// held returns what F_s^all with option o leaves for the sub-chain (s+1, t) to count as its
// stored input: the option's ā, less the credit when F_s^all frees its input.
func held(c *discretize.Chain, s, o, p int) int64 {
	if o == 0 {
		return c.ABar[s] - c.Credit(s, p == 1)
	}
	return c.Option(s, o).ABar
}

// needTable holds, for every sub-chain (s, t) and plane p, the smallest budget m (input
// excluded) at which C_MP(s, t, m) is finite. Because C_MP is non-increasing in m, the
// finite entries of a row are exactly those from need(s, t) on, so the DP never adds an
// infinity and the smallest feasible budget of a chain is need(1, N) + a_0 without any
// table.
type needTable struct {
	n    int
	need [2][]int64 // per plane, (n+1)×(n+1), row-major by s
}

func (nt *needTable) at(s, t, p int) int64 { return nt.need[p][s*(nt.n+1)+t] }

// minMemory evaluates the feasibility side of Theorem 6 alone: each branch of (2.10) is
// finite iff m clears its threshold and each sub-call's budget clears that sub-chain's
// need, so need(s,t) = min over branches of the max of those bounds. The time complexity
// is O(N³); it needs no memory discretization. Errors: a *chainplan.SizeError, before the
// table is allocated, when it would pass chainplan.TableLimit.
func minMemory(c *discretize.Chain, v variant) (*needTable, error) {
	if err := checkTables(c, oneNeed, -1, v.asOptions()); err != nil {
		return nil, err
	}
	dpcount.Need.Add(1)
	n := c.N
	nt := &needTable{n: n}
	for p := range nt.need {
		nt.need[p] = make([]int64, (n+1)*(n+1))
	}
	set := func(s, t, p int, v int64) { nt.need[p][s*(n+1)+t] = v }
	for s := 1; s <= n; s++ {
		for p := 0; p < 2; p++ {
			set(s, s, p, mAll(c, s, s, p))
		}
	}
	for d := 1; d < n; d++ {
		for s := 1; s+d <= n; s++ {
			t := s + d
			me := mEmpty(c, s, t)
			for p := 0; p < 2; p++ {
				best := int64(-1)
				for sp := s; sp < t; sp++ {
					x := max(me, c.A[sp]+nt.at(sp+1, t, 0), nt.at(s, sp, p))
					if best < 0 || x < best {
						best = x
					}
				}
				if !v.revolve {
					q := after(c, s)
					if x := max(mAll(c, s, t, p), held(c, s, 0, p)+nt.at(s+1, t, q)); x < best {
						best = x
					}
					for o := 1; v.options && o <= len(c.Options(s)); o++ {
						if x := max(mOpt(c, s, t, o), held(c, s, o, p)+nt.at(s+1, t, q)); x < best {
							best = x
						}
					}
				}
				set(s, t, p, best)
			}
		}
	}
	return nt, nil
}
