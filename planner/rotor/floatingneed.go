package rotor

import (
	"fmt"
	"math"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
	"github.com/chainplan/chainplan/planner/internal/dpcount"
)

// noNeed marks a sub-problem of the floating DP that no budget makes feasible.
const noNeed = math.MaxInt64 / 4

// floatingNeed returns, for the chain c (in its units, a_0 counted outside), the smallest
// budget m at which C_FL(1, N, 1, m) of the floating DP is finite, or noNeed. It is the
// feasibility side of solveFloating's recurrences alone, as minMemory is for the
// persistent DP: every branch is finite exactly when m clears its thresholds and each
// sub-call's budget clears that sub-problem's need, so the finite budgets of every row are
// those from its need on, and the need of a row is the smallest, over its branches, of
// the largest of those bounds. It reads the branches of floatingTable.fillRow term by
// term. The time complexity is O(N⁶), that of one budget of the floating table.
func floatingNeed(c *discretize.Chain) int64 {
	dpcount.Need.Add(1)
	n := c.N
	key := func(s, l, t int) int { return (s*(n+1)+l)*(n+1) + t }
	need := make([]int64, (n+1)*(n+1)*(n+1))
	at := func(s, l, t int) int64 { return need[key(s, l, t)] }
	for d := 0; d < n; d++ {
		for s := 1; s+d <= n; s++ {
			t := s + d
			for l := s; l <= t; l++ {
				need[key(s, l, t)] = floatingRowNeed(c, s, l, t, at)
			}
		}
	}
	return at(1, 1, n)
}

// floatingRowNeed is the need of C_FL(s, t, ℓ, ·) given the needs of the shorter rows.
func floatingRowNeed(c *discretize.Chain, s, l, t int, at func(s, l, t int) int64) int64 {
	if s == t { // (2.4)
		return max(c.Grad(s)+c.ABar[s]+c.OF[s], c.ABar[s]+c.Grad(s)+c.Grad(s-1)+c.OB[s])
	}
	best := int64(noNeed)
	// A branch is try(lo, x, y, ·, left, right) of fillRow: finite from max(lo, x, y) on
	// where left is finite at m−x and right at m−y.
	floatingBranches(c, s, l, t, func(b floatingBranch) {
		left, right := at(b.left.s, b.left.l, b.left.t), int64(0)
		if b.kind == flPick {
			right = at(b.right.s, b.right.l, b.right.t)
		}
		if left >= noNeed || right >= noNeed {
			return
		}
		best = min(best, max(b.lo, b.x, b.y, b.x+left, b.y+right))
	})
	return best
}

// floatingLimits refuses, as solveFloating does, a floating DP over maxFloatingWork steps
// or whose tables pass chainplan.TableLimit, for n stages (the loss included) and budgets
// 0..m: the index of the triples (s, ℓ, t), (n+1)³ int32, and a float64 value and an
// int32 choice per triple and budget, or, for the feasibility side alone (floatingNeed),
// (n+1)³ int64. Errors: a *chainplan.SizeError.
func floatingLimits(n int, m int64) error {
	fix := "use --algo rotor (the persistent DP, O(S·L³), which differs from the optimum only on rare chains) or fewer slots"
	if w := floatingWork(n, m); w > maxFloatingWork {
		what := fmt.Sprintf("the floating DP, O(S·L^6), with a budget of %d memory slots,", m)
		if m == 0 {
			what = "the floating DP, O(S·L^6), even at its smallest budget,"
		}
		return &chainplan.SizeError{Algo: floatingAlgo, Stages: n - 1,
			What:      what,
			NeedSteps: w, LimitSteps: maxFloatingWork, Fix: fix}
	}
	cube := float64(n+1) * float64(n+1) * float64(n+1)
	bytes := max(cube*4+floatingTriples(n)*float64(m+1)*12, cube*8)
	return chainplan.CheckTables(floatingAlgo, n-1,
		fmt.Sprintf("the floating DP's table (%.3g sub-problems × %d budgets)", floatingTriples(n), m+1), bytes,
		func(int64) string { return fix })
}
