package pofo

import (
	"math"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/rotor"
)

// infeasible answers a budget at which the algorithm found no schedule. minBudget searches
// the smallest budget at which it finds one. That is normally above the budget, and the
// answer is an *chainplan.InfeasibleError that states it. But rounding makes feasibility
// not quite monotone in the budget: a smaller budget can get a finer unit (at 12 slots,
// 23 bytes are counted in units of 1 and 24 in units of 2). A schedule found for a smaller
// budget fits this one too, so it is solved there and returned, replayed at this budget.
func infeasible(c *chainplan.Chain, algo string, budgetBytes int64, opts Options, start time.Time,
	minBudget func() (int64, error), solve func(*chainplan.Chain, int64, Options) (*chainplan.Plan, error)) (*chainplan.Plan, error) {
	e := &chainplan.InfeasibleError{Algo: algo, BudgetBytes: budgetBytes}
	mb, err := minBudget()
	switch {
	case err != nil:
		return nil, e
	case mb > budgetBytes:
		e.MinBudgetBytes = mb
		return nil, e
	}
	p, err := solve(c, mb, opts)
	if err != nil {
		return nil, e
	}
	out, err := finishPlan(algo, c, budgetBytes, p.Slots, ScheduleOf(p), opts, start)
	if err == nil {
		// The candidates' makespans were those at the smaller budget: only the name stays.
		out.Chosen = p.Chosen
	}
	return out, err
}

// searchBudget returns the smallest budget in [lo, hi] at which feasible holds, assuming
// it holds at hi and (almost) monotonically: first upwards from lo by doubling steps, then
// by bisection until the bracket is narrower than prec bytes. The result is always a budget
// feasible answered true for.
func searchBudget(lo, hi, prec int64, feasible func(int64) bool) int64 {
	if lo >= hi || feasible(lo) {
		return min(lo, hi)
	}
	bad, step := lo, max(1, prec)
	good := hi
	for b := lo + step; b < hi; b = lo + step {
		if feasible(b) {
			good = b
			break
		}
		bad, step = b, 2*step
	}
	for good-bad > max(1, prec) {
		mid := bad + (good-bad)/2
		if feasible(mid) {
			good = mid
		} else {
			bad = mid
		}
	}
	return good
}

// MinBudget returns, within hi/(8·slots) bytes, the smallest budget at which Solve finds
// a POFO schedule with these options (it depends on the bandwidth: a slow link leaves the
// offloaded bytes on the GPU longer), or rotor's smallest budget if that is smaller (the
// DP's grid is coarser than rotor's). The search starts from the need with an infinitely
// fast link, a lower bound computed without any table, and runs the DP at each probe.
// AUTOCAPPER and OPPORTUNIST, which Solve also tries, are not searched: they rarely go
// lower and each probe costs dozens of rotor solves.
func MinBudget(c *chainplan.Chain, opts Options) (int64, error) {
	dp, err := minBudgetDP(c, opts)
	if err != nil {
		return 0, err
	}
	if rm, err := rotor.MinBudget(c, rotorOptions(opts, c.Len()+1)); err == nil && rm < dp {
		return rm, nil
	}
	return dp, nil
}

// minBudgetDP is MinBudget for the POFO DP alone.
func minBudgetDP(c *chainplan.Chain, opts Options) (int64, error) {
	if err := opts.check(c, 1); err != nil {
		return 0, err
	}
	exact := exactChain(c)
	hi := int64(exact.storeAllPeak())
	lo := int64(math.Ceil(pofoNeed(exact) - 1e-9))
	prec := max(1, hi/(8*opts.slots(hi, DefaultSlots(c.Len()))))
	if err := checkTableSize(c, hi, opts.slots(hi, DefaultSlots(c.Len()))); err != nil {
		return 0, err
	}
	feasible := func(b int64) bool {
		if b >= hi {
			return true
		}
		tb := pofoTable(c, b, opts.slots(b, DefaultSlots(c.Len())), opts.BandwidthBytesPerS, false)
		tb.fill()
		return !math.IsInf(tb.solveValue(), 1)
	}
	return searchBudget(lo, hi, prec, feasible), nil
}

// pofoNeed returns the smallest memory at which the POFO recurrences are feasible with an
// infinitely fast link (every Δ is 0 right after it is created; a just-offloaded input
// still counts once, in Δ_B, at the next state): a lower bound of POFO's smallest budget at
// any bandwidth, in c's units. Offloading never hurts feasibility there, so every
// segment input but the loss's is offloaded and A stays 0.
func pofoNeed(c *chain) float64 {
	n := c.n
	mp := minMP(c)
	need := make([][2]float64, n+2)
	in := func(x, s int) float64 {
		if x == 1 {
			return c.abar[s-1]
		}
		return c.a[s-1]
	}
	for s := n; s >= 1; s-- {
		for x := 0; x <= 1; x++ {
			i := in(x, s)
			if s == n {
				need[s][x] = max(c.rFall(s), c.rB(s)) + i
				continue
			}
			// Case 1, the input offloaded: the state at s+1 holds I (in Δ_B) and ā_s.
			best := max(c.rFall(s)+i, c.rB(s)+i, need[s+1][1], i+c.abar[s])
			for t := s; t < n; t++ {
				v := max(c.rF0(s, s)+i, mp[s][t]+i, need[t+1][0], i+c.a[t])
				for k := s + 1; k < n; k++ {
					v = max(v, c.rF0(s, k))
				}
				best = min(best, v)
			}
			need[s][x] = best
		}
	}
	return need[1][0]
}

// minMP returns, for every sub-chain, the smallest M − A at which C_Δ(s, t, A, 0) — the
// persistent rematerialization DP — is finite, following the feasibility tests of
// cdCompute (rotor's minMemory, spec §2).
func minMP(c *chain) [][]float64 {
	n := c.n
	mp := make([][]float64, n+2)
	for i := range mp {
		mp[i] = make([]float64, n+2)
	}
	rb := func(s int) float64 { return c.abar[s] + c.delta(s) + c.delta(s-1) + c.oB[s] }
	rfall := func(s, t int) float64 { return c.delta(t) + c.abar[s] + c.oF[s] }
	rf0 := func(s, t, k int) float64 {
		if k == s {
			return c.delta(t) + c.a[s] + c.oF[s]
		}
		return c.delta(t) + c.a[k-1] + c.a[k] + c.oF[k]
	}
	for d := 0; d < n; d++ {
		for s := 1; s+d <= n; s++ {
			t := s + d
			best := max(rfall(s, t), rb(s))
			if d == 0 {
				mp[s][t] = best
				continue
			}
			best = max(best, c.abar[s]+mp[s+1][t])
			run := math.Inf(-1)
			for sp := s; sp < t; sp++ {
				run = max(run, rf0(s, t, sp))
			}
			for sp := s; sp < t; sp++ {
				best = min(best, max(run, mp[s][sp], c.a[sp]+mp[sp+1][t]))
			}
			mp[s][t] = best
		}
	}
	return mp
}
