package rotor

import (
	"math"

	"github.com/chainplan/chainplan/planner/internal/discretize"
)

// naivePersistent evaluates Theorem 6 (rotor spec §3.2, (2.9)-(2.10)) by memoized
// recursion, written straight from the formulas and sharing no code with the table, as the
// "compare with naive code" oracle for the vectorized DP. With the exact memory model
// (docs/rotor.md) it reads the chain's fields directly: the base case recomputes in u_R,
// F_all frees an input that neither its stage nor the previous one saved (for stages
// 2..L), B_s holds ā_s less an output its stage did not save, and an option o ≥ 1 keeps
// its own ā and recomputes the rest before B_s.
type naivePersistent struct {
	c       *discretize.Chain
	revolve bool
	options bool
	memo    map[[4]int64]float64
}

func newNaive(c *discretize.Chain, revolve bool) *naivePersistent {
	return &naivePersistent{c: c, revolve: revolve, memo: map[[4]int64]float64{}}
}

func newNaiveOptions(c *discretize.Chain) *naivePersistent {
	return &naivePersistent{c: c, options: true, memo: map[[4]int64]float64{}}
}

// C returns C_MP(s, t, m) for a sub-chain whose input no graph pins.
func (nv *naivePersistent) C(s, t int, m int64) float64 { return nv.cp(s, t, m, false) }

// cp is C_MP(s, t, m) with the input pinned or not by the filled graph of stage s-1.
func (nv *naivePersistent) cp(s, t int, m int64, pinned bool) float64 {
	if m < 0 {
		return math.Inf(1)
	}
	pin := int64(0)
	if pinned {
		pin = 1
	}
	key := [4]int64{int64(s), int64(t), m, pin}
	if v, ok := nv.memo[key]; ok {
		return v
	}
	c := nv.c
	d := func(l int) int64 { return c.A[l] } // δ_ℓ = a_ℓ
	exact := c.Model != nil
	outPinned := !exact || c.Model.OutSaved[s] // the next sub-chain's input is this graph's output
	abarB := c.ABar[s]                         // what B_s holds
	var credit int64                           // the input F_s^all frees
	if exact {
		if !c.Model.OutSaved[s] {
			abarB -= c.A[s]
		}
		if s >= 2 && s < c.N && !c.Model.InSaved[s] && !pinned {
			credit = c.A[s-1]
		}
	}
	mall := c.ABar[s] + c.OF[s] + d(t)
	if exact && s == t && s < c.N {
		mall = abarB + c.Model.RT[s] + d(t)
	}
	if b := abarB + d(s) + d(s-1) + c.OB[s] - credit; b > mall {
		mall = b
	}
	best := math.Inf(1)
	if s == t {
		if m >= mall {
			best = c.UF[s] + c.UB[s]
			if exact && s < c.N {
				best = c.Model.UR[s] + c.UB[s]
			}
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
			if v := f + nv.cp(sp+1, t, m-c.A[sp], false) + nv.cp(s, sp, m, pinned); v < best {
				best = v
			}
		}
	}
	if !nv.revolve && m >= mall {
		if v := c.UF[s] + nv.cp(s+1, t, m-c.ABar[s]+credit, outPinned) + c.UB[s]; v < best {
			best = v
		}
	}
	if nv.options && exact {
		for _, o := range c.Model.Opts[s] {
			need := max(d(t)+o.ABar+o.OF, abarB+d(s)+d(s-1)+c.OB[s], abarB+d(s)+o.OF)
			if m >= need {
				if v := c.UF[s] + nv.cp(s+1, t, m-o.ABar, outPinned) + o.UR + c.UB[s]; v < best {
					best = v
				}
			}
		}
	}
	nv.memo[key] = best
	return best
}
