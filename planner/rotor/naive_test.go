package rotor

import (
	"math"

	"github.com/chainplan/chainplan/planner/internal/discretize"
)

// naivePersistent evaluates Theorem 6 (rotor spec §3.2, (2.9)-(2.10)) by memoized
// recursion, written straight from the formulas and sharing no code with the table, as the
// "compare with naive code" oracle for the vectorized DP.
type naivePersistent struct {
	c       *discretize.Chain
	revolve bool
	memo    map[[3]int64]float64
}

func newNaive(c *discretize.Chain, revolve bool) *naivePersistent {
	return &naivePersistent{c: c, revolve: revolve, memo: map[[3]int64]float64{}}
}

func (nv *naivePersistent) C(s, t int, m int64) float64 {
	if m < 0 {
		return math.Inf(1)
	}
	key := [3]int64{int64(s), int64(t), m}
	if v, ok := nv.memo[key]; ok {
		return v
	}
	c := nv.c
	d := func(l int) int64 { return c.A[l] } // δ_ℓ = a_ℓ
	mall := c.ABar[s] + c.OF[s] + d(t)
	if b := c.ABar[s] + d(s) + d(s-1) + c.OB[s]; b > mall {
		mall = b
	}
	best := math.Inf(1)
	if s == t {
		if m >= mall {
			best = c.UF[s] + c.UB[s]
		}
		nv.memo[key] = best
		return best
	}
	mnull := d(t) + c.A[s] + c.OF[s]
	for h := s + 1; h < t; h++ {
		if v := d(t) + c.A[h-1] + c.A[h] + c.OF[h]; v > mnull {
			mnull = v
		}
	}
	if m >= mnull {
		for sp := s; sp < t; sp++ {
			f := 0.0
			for k := s; k <= sp; k++ {
				f += c.UF[k]
			}
			if v := f + nv.C(sp+1, t, m-c.A[sp]) + nv.C(s, sp, m); v < best {
				best = v
			}
		}
	}
	if !nv.revolve && m >= mall {
		if v := c.UF[s] + nv.C(s+1, t, m-c.ABar[s]) + c.UB[s]; v < best {
			best = v
		}
	}
	nv.memo[key] = best
	return best
}
