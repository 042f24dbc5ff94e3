package rotor

import (
	"fmt"
	"math"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
	"github.com/chainplan/chainplan/planner/internal/dpcount"
)

// maxFloatingWork bounds floatingWork, the number of inner-loop steps of the floating DP.
// Measured on a 2-core AMD EPYC (BenchmarkFloating; the DP is single-threaded) one step
// takes 0.57-0.65 ns whatever the size, e.g. N = 44 stages at 500 slots is 1.16e10 steps
// in 6.6 s. The bound therefore keeps a solve under about 7 s there and under 10 s on a
// machine 40 % slower; at 500 slots it admits chains up to L = 43 stages plus the loss.
const maxFloatingWork = 1.2e10

// Choice codes of the floating table. Codes from flPick on encode a C_2 candidate
// (r, s', t') as flPick + (r·(N+1) + s')·(N+1) + t', which fits an int32 for N < 1290,
// far beyond any chain maxFloatingWork admits.
const (
	flNone int32 = iota // C_FL = ∞
	flAll               // C_1, or the base case (2.4): F_s^all, …, B_s
	flMove              // C_3 (fix D1): F_s^∅ … F_{ℓ-1}^∅, then C_FL(ℓ, t, ℓ, ·)
	flPick              // first C_2 code
)

// floatingTable holds C_FL(s, t, ℓ, m) for 1 ≤ s ≤ ℓ ≤ t ≤ N and 0 ≤ m ≤ M, one row of
// M+1 budgets per triple (s, ℓ, t), and the branch that attains each value.
type floatingTable struct {
	c      *discretize.Chain
	n      int
	m      int64
	row    []int32     // key(s, ℓ, t) -> row number; set for s ≤ ℓ ≤ t only
	val    []float64   // row-major, M+1 per row
	choice []int32     // same layout as val
	fsum   [][]float64 // fsum[s][e] = Σ_{k=s}^{e} u_F(k), summed left to right
}

// floatingTriples returns the number of triples 1 ≤ s ≤ ℓ ≤ t ≤ n, the rows of the table.
func floatingTriples(n int) float64 {
	var rows float64
	for d := 0; d < n; d++ {
		rows += float64(n-d) * float64(d+1) // (s, t = s+d) pairs, times d+1 choices of ℓ
	}
	return rows
}

// floatingWork estimates the work of the floating DP on a chain of n stages (the loss
// included) with budgets 0..m: the table has a row of m+1 cells per triple (s, ℓ, t), and
// each cell runs over the C_2 candidates (r, s', t') with s ≤ r ≤ ℓ < t' ≤ t and
// r ≤ s' < t', of which there are (ℓ−s+1)(t−ℓ)(t−s+1)/2, plus a few steps for the other
// branches. Summed over the triples this is Θ(m·n^6) (spec §3.3).
func floatingWork(n int, m int64) float64 {
	var perBudget float64
	for d := 0; d < n; d++ {
		// Σ_{i=0}^{d} (i+1)(d−i) = (d+2)(d+1)d/6 with i = ℓ−s, for each of the n−d pairs.
		cand := float64(d+1) * float64(d+2) * float64(d+1) * float64(d) / 12
		perBudget += float64(n-d) * (cand + 3*float64(d+1))
	}
	return perBudget * (float64(m) + 1)
}

// solveFloating returns the optimal makespan C_FL(1, N, 1, m) of the exact floating DP
// (Theorem 5, spec §3.3) with the fixes of spec §3.4, and a sequence that attains it. m is
// the budget in c's units without the input a_0 (spec E3), so the sequence replays within
// m + a_0 in simulate.Run.
//
// The recurrences, for s ≤ ℓ ≤ t (Σu_F(i..j) is the forward time of stages i..j):
//
//	C(s,s,s,m)  = u_F(s) + u_B(s)                              if m ≥ m_all(s,s)      (2.4)
//	C_1(s,t,s,m) = u_F(s) + C(s+1,t,s+1, m−ā_s) + u_B(s)       if m ≥ m_all(s,t)      (2.8)
//	C_2(s,t,ℓ,m) = min over s ≤ r ≤ ℓ < t' ≤ t, r ≤ s' < t', a_{s-1} ≤ a_{r-1}, of  (2.6)-(2.7)
//	              Σu_F(s..s') + C(s'+1,t,t', m−a_{s'}−y) + C(r,t'−1,ℓ, m−y),   y = a_{r-1}−a_{s-1}
//	              if ℓ < t, m ≥ m_∅(s,t) and (fix D2) every F_h^∅, r < h ≤ s', fits next to
//	              a_{r-1}: δ_t + a_{h-1} + a_h + o_F(h) ≤ m − y
//	C_3(s,t,ℓ,m) = Σu_F(s..ℓ−1) + C(ℓ,t,ℓ, m−y),   y = a_{ℓ-1}−a_{s-1} ≥ 0,   s < ℓ  (fix D1)
//	              if δ_t + a_s + o_F(s) ≤ m and δ_t + a_{h-1} + a_h + o_F(h) ≤ m + a_{s-1}, s < h < ℓ
//
// and C(s,t,ℓ,m) is the minimum of the branches that apply (∞ if none). The sequence of
// C_2 is F_s^∅ … F_{r-1}^∅ F_r^ck F_{r+1}^∅ … F_{s'}^∅ followed by the two sub-sequences;
// the second sub-call gets m − y, not the m printed in Algorithm 2 (erratum E5).
//
// Ties: candidates are tried in a fixed order and replace the best so far only when
// strictly faster, so the first one wins: C_2 candidates by increasing r, then s', then t'
// (the first is r = s' = s, t' = ℓ+1: for ℓ = s, the persistent DP's first F_s^ck choice), then
// C_3, then C_1. Like rotor's persistent code (spec §3.2), this prefers checkpointing to
// F_all on equal cost.
//
// Errors wrap chainplan.ErrInfeasible when m < 0 or no sequence fits, and
// a *chainplan.SizeError when the table would take more than maxFloatingWork steps or more
// memory than chainplan.TableLimit. The time complexity is O(m·N^6) and the memory O(m·N^3) for
// N = c.N stages.
func solveFloating(c *discretize.Chain, m int64) (makespan float64, seq []chainplan.Op, err error) {
	n := c.N
	if m < 0 {
		return 0, nil, fmt.Errorf("floating DP: the budget is %d units short of the chain input a_0: %w", -m, chainplan.ErrInfeasible)
	}
	if err := floatingLimits(n, m); err != nil {
		return 0, nil, err
	}
	dpcount.Floating.Add(1)
	tb := newFloatingTable(c, m)
	tb.fill()
	v := tb.at(1, 1, n)[m]
	if math.IsInf(v, 1) {
		return 0, nil, fmt.Errorf("floating DP: no schedule fits in %d units plus the input a_0 = %d: %w", m, c.A[0], chainplan.ErrInfeasible)
	}
	seq = tb.build(nil, 1, n, 1, m)
	return v, seq, nil
}

func newFloatingTable(c *discretize.Chain, m int64) *floatingTable {
	n := c.N
	tb := &floatingTable{c: c, n: n, m: m, row: make([]int32, (n+1)*(n+1)*(n+1))}
	rows := int32(0)
	for s := 1; s <= n; s++ {
		for l := s; l <= n; l++ {
			for t := l; t <= n; t++ {
				tb.row[tb.key(s, l, t)] = rows
				rows++
			}
		}
	}
	cells := int(rows) * int(m+1)
	tb.val = make([]float64, cells)
	tb.choice = make([]int32, cells)
	for i := range tb.val {
		tb.val[i] = math.Inf(1)
	}
	tb.fsum = make([][]float64, n+1)
	for s := 1; s <= n; s++ {
		tb.fsum[s] = make([]float64, n+1)
		var sum float64
		for e := s; e <= n; e++ {
			sum += c.UF[e]
			tb.fsum[s][e] = sum
		}
	}
	return tb
}

// key flattens a triple (s, ℓ, t) for the row index.
func (tb *floatingTable) key(s, l, t int) int { return (s*(tb.n+1)+l)*(tb.n+1) + t }

// at returns the row of C_FL(s, t, ℓ, ·), indexed by the budget 0..M.
func (tb *floatingTable) at(s, l, t int) []float64 {
	w := int(tb.m + 1)
	r := int(tb.row[tb.key(s, l, t)])
	return tb.val[r*w : (r+1)*w : (r+1)*w]
}

// choices returns the row of branch codes that goes with at(s, l, t).
func (tb *floatingTable) choices(s, l, t int) []int32 {
	w := int(tb.m + 1)
	r := int(tb.row[tb.key(s, l, t)])
	return tb.choice[r*w : (r+1)*w : (r+1)*w]
}

// fill computes every row in order of increasing chain length t−s. Every branch refers
// only to strictly shorter chains (C_1: (s+1,t); C_2: (s'+1,t) and (r,t'−1) with s' ≥ s,
// r ≥ s, t' ≤ t; C_3: (ℓ,t) with ℓ > s), whatever the budget, so each row can be filled for
// all budgets at once; the filters a_{s-1} ≤ a_{r-1} and a_{s-1} ≤ a_{ℓ-1} keep every
// referenced budget within 0..M. This order is sound without the "m outermost" order of
// Algorithm 1 (spec pitfall 15) and lets the innermost loop run over contiguous budgets.
func (tb *floatingTable) fill() {
	n := tb.n
	for d := 0; d < n; d++ {
		for s := 1; s+d <= n; s++ {
			for l := s; l <= s+d; l++ {
				tb.fillRow(s, l, s+d)
			}
		}
	}
}

// fillRow computes C_FL(s, t, ℓ, ·) for every budget, trying the branches in the order of
// the tie rule (see solveFloating).
func (tb *floatingTable) fillRow(s, l, t int) {
	c, m := tb.c, tb.m
	best, pick := tb.at(s, l, t), tb.choices(s, l, t)
	// try offers value f + left[i−x] + right[i−y] at every budget i ≥ lo.
	try := func(lo, x, y int64, f float64, left, right []float64, code int32) {
		lo = max(lo, x, y)
		if lo > m {
			return
		}
		b, p := best[lo:], pick[lo:]
		lt := left[lo-x : lo-x+int64(len(b))]
		if right == nil {
			for i := range b {
				if v := f + lt[i]; v < b[i] {
					b[i], p[i] = v, code
				}
			}
			return
		}
		rt := right[lo-y : lo-y+int64(len(b))]
		for i := range b {
			if v := f + lt[i] + rt[i]; v < b[i] {
				b[i], p[i] = v, code
			}
		}
	}
	if s == t { // (2.4)
		lo := max(c.Grad(s)+c.ABar[s]+c.OF[s], c.ABar[s]+c.Grad(s)+c.Grad(s-1)+c.OB[s])
		for i := lo; i <= m; i++ {
			best[i], pick[i] = c.UF[s]+c.UB[s], flAll
		}
		return
	}
	n1 := int32(tb.n + 1)
	floatingBranches(c, s, l, t, func(b floatingBranch) {
		var right []float64
		var f float64
		code := b.kind
		switch b.kind {
		case flPick:
			right = tb.at(b.right.s, b.right.l, b.right.t)
			f = tb.fsum[s][b.sp]
			code = flPick + (int32(b.r)*n1+int32(b.sp))*n1 + int32(b.tp)
		case flMove:
			f = tb.fsum[s][l-1]
		default:
			f = c.UF[s] + c.UB[s]
		}
		try(b.lo, b.x, b.y, f, tb.at(b.left.s, b.left.l, b.left.t), right, code)
	})
}

// triple names the sub-problem C_FL(s, t, ℓ, ·) of the floating DP.
type triple struct{ s, l, t int }

// floatingBranch is one branch of the recurrences of C_FL(s, t, ℓ, ·) (see solveFloating)
// with its feasibility bounds: at budget m it is finite when m ≥ max(lo, x, y), the
// sub-problem left is finite at m − x and, for C_2, right at m − y.
type floatingBranch struct {
	kind        int32 // flAll (C_1), flMove (C_3) or flPick (C_2)
	lo, x, y    int64
	left, right triple // right is C_2's only
	r, sp, tp   int    // C_2's candidate (r, s', t')
}

// floatingBranches calls visit with every branch of C_FL(s, t, ℓ, ·) for s < t, in the
// order of the tie rule (see solveFloating): C_2 by increasing r, s', t', then C_3, then
// C_1. fillRow and floatingRowNeed both read the recurrences through it, so the values and
// the needs cannot disagree on a branch.
func floatingBranches(c *discretize.Chain, s, l, t int, visit func(floatingBranch)) {
	dt := c.Grad(t)
	// fwd(h) is the memory of F_h^∅ (or F_h^ck) with δ_t held and a_{h-1} counted in.
	fwd := func(h int) int64 { return dt + c.A[h-1] + c.A[h] + c.OF[h] }
	if l < t { // C_2, (2.6)-(2.7) with the D2 check
		mEmpty := dt + c.A[s] + c.OF[s] // m_∅(s,t) over s ≤ h ≤ t−1 (spec E14)
		for h := s + 1; h < t; h++ {
			mEmpty = max(mEmpty, fwd(h))
		}
		for r := s; r <= l; r++ {
			if c.A[r-1] < c.A[s-1] {
				continue
			}
			y := c.A[r-1] - c.A[s-1]
			// d2 = max fwd(h) over r < h ≤ s', the F_∅ steps run next to a_{r-1} (fix D2).
			var d2 int64
			for sp := r; sp < t; sp++ {
				if sp > r {
					d2 = max(d2, fwd(sp))
				}
				lo := mEmpty
				if r > s && sp > r {
					lo = max(lo, d2+y)
				}
				x := c.A[sp] + y
				for tp := max(l, sp) + 1; tp <= t; tp++ {
					visit(floatingBranch{kind: flPick, lo: lo, x: x, y: y,
						left: triple{sp + 1, tp, t}, right: triple{r, l, tp - 1}, r: r, sp: sp, tp: tp})
				}
			}
		}
	}
	if s < l && c.A[l-1] >= c.A[s-1] { // C_3, fix D1
		lo := dt + c.A[s] + c.OF[s]
		for h := s + 1; h < l; h++ {
			lo = max(lo, fwd(h)-c.A[s-1])
		}
		visit(floatingBranch{kind: flMove, lo: lo, x: c.A[l-1] - c.A[s-1], left: triple{l, l, t}})
	}
	if s == l { // C_1, (2.8)
		lo := max(dt+c.ABar[s]+c.OF[s], c.ABar[s]+c.Grad(s)+c.Grad(s-1)+c.OB[s])
		visit(floatingBranch{kind: flAll, lo: lo, x: c.ABar[s], left: triple{s + 1, s + 1, t}})
	}
}

// build appends to seq the operations of C_FL(s, t, ℓ, m) (Algorithm 2 with erratum E5 and
// the C_3 branch), following the recorded choices with the budgets of the recurrences.
func (tb *floatingTable) build(seq []chainplan.Op, s, t, l int, m int64) []chainplan.Op {
	c := tb.c
	op := func(k chainplan.OpKind, stage int) { seq = append(seq, chainplan.Op{Kind: k, Stage: stage}) }
	switch code := tb.choices(s, l, t)[m]; {
	case code == flNone:
		panic(fmt.Sprintf("rotor: floating DP rebuilds an infinite entry C(%d,%d,%d,%d)", s, t, l, m))
	case code == flAll && s == t:
		op(chainplan.FAll, s)
		op(chainplan.B, s)
	case code == flAll:
		op(chainplan.FAll, s)
		seq = tb.build(seq, s+1, t, s+1, m-c.ABar[s])
		op(chainplan.B, s)
	case code == flMove:
		for k := s; k < l; k++ {
			op(chainplan.FNone, k)
		}
		seq = tb.build(seq, l, t, l, m-c.A[l-1]+c.A[s-1])
	default:
		n1 := int32(tb.n + 1)
		code -= flPick
		tp := int(code % n1)
		sp := int(code / n1 % n1)
		r := int(code / n1 / n1)
		for k := s; k <= sp; k++ {
			if k == r {
				op(chainplan.FCk, k)
			} else {
				op(chainplan.FNone, k)
			}
		}
		y := c.A[r-1] - c.A[s-1]
		seq = tb.build(seq, sp+1, t, tp, m-c.A[sp]-y)
		seq = tb.build(seq, r, tp-1, l, m-y) // erratum E5: m − a_{r-1} + a_{s-1}, not m
	}
	return seq
}
