package offload

import (
	"math"
	"sync"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/offload/internal/units"
	"github.com/chainplan/chainplan/planner/rotor"
)

// MinBudgetPOFO returns the smallest budget at which SolvePOFO finds a schedule with these
// options (it depends on the bandwidth: a slow link leaves the offloaded bytes on the GPU
// longer): the smallest of its candidates' smallest budgets, the POFO DP's within
// hi/(8·slots) bytes, rotor's (the DP's grid is coarser than rotor's), AUTOCAPPER's and
// OPPORTUNIST's within 1 % of M_peak. The DP's search starts from the need with an
// infinitely fast link, a lower bound computed without any table, and runs the DP at each
// probe; the heuristics' searches run beside it. Before the heuristics were searched too,
// SolvePOFO planned below the budget this named on 5 of 12 small random chains (AUTOCAPPER
// or OPPORTUNIST winning there); the smallest budget is now the smallest within those
// precisions (docs/pofo.md, "The smallest budget"; TestSmallestBudgetOffloading).
func MinBudgetPOFO(c *chainplan.Chain, opts Options) (int64, error) {
	// What SolvePOFO refuses before any table (bad options, tables too large for the
	// grid) is refused here before the heuristics start their own tables.
	if err := opts.Check(c, 1); err != nil {
		return 0, err
	}
	hi := int64(units.Exact(c).StoreAllPeak())
	if err := checkTableSize(c, hi, opts.SlotsFor(hi, POFOSlots(c.Len()))); err != nil {
		return 0, err
	}
	// SolvePOFO tries the heuristics only from opNeed up (below it no schedule exists):
	// their searches, which a link faster than the simulator's time tolerance can fool
	// into a smaller budget, count from there too, or this would name a budget SolvePOFO
	// then refuses.
	need := int64(math.Ceil(opNeed(units.Exact(c)) - 1e-9))
	heuristic := int64(math.MaxInt64)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for _, search := range []func(*chainplan.Chain, Options) (int64, error){MinBudgetAutoCapper, MinBudgetOpportunist} {
			if b, err := search(c, opts); err == nil {
				heuristic = min(heuristic, max(b, need))
			}
		}
	}()
	dp, err := minBudgetDP(c, opts)
	wg.Wait()
	if err != nil {
		return 0, err
	}
	best := min(dp, heuristic)
	if rm, err := rotor.MinBudget(c, rotorOptions(opts, c.Len()+1)); err == nil {
		best = min(best, rm)
	}
	return best, nil
}

// minBudgetDP is MinBudgetPOFO for the POFO DP alone.
func minBudgetDP(c *chainplan.Chain, opts Options) (int64, error) {
	if err := opts.Check(c, 1); err != nil {
		return 0, err
	}
	exact := units.Exact(c)
	hi := int64(exact.StoreAllPeak())
	// Checked before pofoNeed, whose table is quadratic in the chain's length too.
	if err := checkReplay("pofo", c); err != nil {
		return 0, err
	}
	if err := checkTableSize(c, hi, opts.SlotsFor(hi, POFOSlots(c.Len()))); err != nil {
		return 0, err
	}
	lo := int64(math.Ceil(pofoNeed(exact) - 1e-9))
	prec := max(1, hi/(8*opts.SlotsFor(hi, POFOSlots(c.Len()))))
	feasible := func(b int64) bool {
		if b >= hi {
			return true
		}
		tb := pofoTable(c, b, opts.SlotsFor(b, POFOSlots(c.Len())), opts.BandwidthBytesPerS, false)
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
func pofoNeed(c *units.Chain) float64 {
	n := c.N
	mp := minMP(c)
	need := make([][2]float64, n+2)
	in := func(x, s int) float64 {
		if x == 1 {
			return c.ABar[s-1]
		}
		return c.A[s-1]
	}
	for s := n; s >= 1; s-- {
		for x := 0; x <= 1; x++ {
			i := in(x, s)
			if s == n {
				need[s][x] = max(c.RFall(s), c.RB(s)) + i
				continue
			}
			// Case 1, the input offloaded: the state at s+1 holds I (in Δ_B) and ā_s.
			best := max(c.RFall(s)+i, c.RB(s)+i, need[s+1][1], i+c.ABar[s])
			for t := s; t < n; t++ {
				v := max(c.RF0(s, s)+i, mp[s][t]+i, need[t+1][0], i+c.A[t])
				for k := s + 1; k < n; k++ {
					v = max(v, c.RF0(s, k))
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
func minMP(c *units.Chain) [][]float64 {
	n := c.N
	mp := make([][]float64, n+2)
	for i := range mp {
		mp[i] = make([]float64, n+2)
	}
	rb := func(s int) float64 { return c.ABar[s] + c.Delta(s) + c.Delta(s-1) + c.OB[s] }
	rfall := func(s, t int) float64 { return c.Delta(t) + c.ABar[s] + c.OF[s] }
	rf0 := func(s, t, k int) float64 {
		if k == s {
			return c.Delta(t) + c.A[s] + c.OF[s]
		}
		return c.Delta(t) + c.A[k-1] + c.A[k] + c.OF[k]
	}
	for d := 0; d < n; d++ {
		for s := 1; s+d <= n; s++ {
			t := s + d
			best := max(rfall(s, t), rb(s))
			if d == 0 {
				mp[s][t] = best
				continue
			}
			best = max(best, c.ABar[s]+mp[s+1][t])
			run := math.Inf(-1)
			for sp := s; sp < t; sp++ {
				run = max(run, rf0(s, t, sp))
			}
			for sp := s; sp < t; sp++ {
				best = min(best, max(run, mp[s][sp], c.A[sp]+mp[sp+1][t]))
			}
			mp[s][t] = best
		}
	}
	return mp
}
