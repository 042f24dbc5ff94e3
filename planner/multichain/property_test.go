package multichain

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/testchains"
	"github.com/chainplan/chainplan/planner/rotor"
	"github.com/chainplan/chainplan/planner/simulate"
)

// randomBundle draws K ≤ 3 towers of at most maxLen stages (some without stages) with the
// random sizes, temporaries and integer times of testchains.Random, and a joint loss.
func randomBundle(rng *rand.Rand, maxLen int) *chainplan.MultiChain {
	mc := &chainplan.MultiChain{Format: chainplan.MultiChainFormat}
	k := 1 + rng.IntN(3)
	for range k {
		c := testchains.Random(rng, 1+rng.IntN(maxLen), testchains.RandomOptions{})
		if rng.IntN(8) == 0 {
			c.Stages = nil // an input that goes straight into the loss
		}
		mc.Loss = c.Loss
		c.Loss = chainplan.Loss{}
		mc.Branches = append(mc.Branches, *c)
		mc.KeepInputGrad = append(mc.KeepInputGrad, rng.IntN(3) == 0)
	}
	return mc
}

// TestSolveReplays solves random bundles at budgets from below the smallest to above the
// no-recomputation peak with each method: every plan replays in bytes within its budget
// (Solve checks it, a failure being an internal error), H0's makespan is the dynamic
// program's value at its slots, Best is never slower than H0 or H1, and a method is
// refused exactly below its MinBudget, with that budget in the error.
func TestSolveReplays(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 9))
	n := 300
	if testing.Short() {
		n = 25
	}
	for i := range n {
		mc := randomBundle(rng, 6)
		peak := storeAllPeak(mc)
		mins := map[Method]int64{}
		for _, m := range []Method{Best, DP, Linear} {
			b, err := MinBudget(mc, Options{Method: m})
			if m == Linear && len(orders(mc)) == 0 {
				if !errors.Is(err, chainplan.ErrUnsupported) {
					t.Fatalf("bundle %d: linear MinBudget without stages: %v", i, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("bundle %d: MinBudget(%v): %v", i, m, err)
			}
			mins[m] = b
		}
		if mins[Best] > mins[DP] || mins[Best] > peak {
			t.Fatalf("bundle %d: Best's smallest budget %d above H0's %d or the peak %d", i, mins[Best], mins[DP], peak)
		}
		for budget := mins[Best] - 2; budget <= peak+2; budget += 1 + int64(rng.IntN(3)) {
			plans := map[Method]*chainplan.Plan{}
			for m, lo := range mins {
				p, err := Solve(mc, budget, Options{Method: m})
				if budget < lo {
					var ie *chainplan.InfeasibleError
					if !errors.As(err, &ie) || ie.MinBudgetBytes != lo {
						t.Fatalf("bundle %d method %v budget %d below %d: %v", i, m, budget, lo, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("bundle %d method %v budget %d (smallest %d): %v", i, m, budget, lo, err)
				}
				if p.PeakBytes > budget {
					t.Fatalf("bundle %d method %v budget %d: peak %d", i, m, budget, p.PeakBytes)
				}
				plans[m] = p
			}
			if dp := plans[DP]; dp != nil {
				in := instanceOf(mc)
				tb := mustTable(t, in, int(dp.Slots))
				if got := tb.value(int(dp.Slots)); got != dp.Makespan {
					t.Fatalf("bundle %d budget %d: H0 makespan %v, DP %v at %d slots", i, budget, dp.Makespan, got, dp.Slots)
				}
			}
			if best := plans[Best]; best != nil {
				for _, m := range []Method{DP, Linear} {
					if p := plans[m]; p != nil && p.Makespan < best.Makespan {
						t.Fatalf("bundle %d budget %d: %v makespan %v below Best's %v", i, budget, m, p.Makespan, best.Makespan)
					}
				}
			}
		}
	}
}

// TestLinearIsConservative: on random bundles and budgets, the mapped and pruned schedule
// of the linear chain never needs more memory than rotor counted for it on the chain, nor
// more time (spec §6: the linearization over-counts carried tensors).
func TestLinearIsConservative(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 10))
	cases, n := 0, 1000
	if testing.Short() {
		n = 60
	}
	for range n {
		mc := randomBundle(rng, 7)
		for _, lin := range orders(mc) {
			peak := rotor.StoreAllPeak(lin.chain)
			for range 4 {
				budget := 1 + rng.Int64N(peak+1)
				p, err := rotor.Solve(lin.chain, budget, rotor.Options{Slots: -1})
				if err != nil {
					continue
				}
				seq := lin.towerOps(mc, p.Sequence)
				rep := simulate.RunMulti(mc, seq, -1)
				if err := rep.Err(); err != nil {
					t.Fatalf("order %v of %+v: mapped schedule invalid: %v\nlinear: %s\nmapped: %s", lin.order, mc, err,
						chainplan.FormatSequence(p.Sequence), chainplan.FormatSequence(seq))
				}
				if rep.Peak > p.PeakBytes || rep.Makespan > p.Makespan {
					t.Fatalf("order %v: towers need %d bytes and %v time, rotor counted %d and %v\nlinear: %s\nmapped: %s",
						lin.order, rep.Peak, rep.Makespan, p.PeakBytes, p.Makespan,
						chainplan.FormatSequence(p.Sequence), chainplan.FormatSequence(seq))
				}
				cases++
			}
		}
	}
	t.Logf("%d linear schedules mapped within rotor's accounting", cases)
}

// TestNeverWorseThanOneChain: planning the towers never loses to planning them as one
// chain (docs/multichain.md): at every budget where rotor plans the towers concatenated
// in their given order (the chain of linearize, each stage carrying what the other
// towers hold until the loss), multichain and multichain-linear plan too, no slower, and
// their smallest budgets are no larger; half the bundles on a coarse grid of 4-23 slots.
func TestNeverWorseThanOneChain(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 33))
	n, compared := 400, 0
	if testing.Short() {
		n = 100
	}
	for i := range n {
		mc := randomBundle(rng, 5)
		var given []int
		for j := range mc.Branches {
			if mc.Branches[j].Len() > 0 {
				given = append(given, j)
			}
		}
		if len(given) == 0 {
			continue // no chain to concatenate: the comparison is not defined
		}
		one := linearize(mc, given).chain
		var slots int64
		if rng.IntN(2) == 0 {
			slots = 4 + rng.Int64N(20)
		}
		r, err := rotor.MinBudget(one, rotor.Options{Slots: slots})
		if err != nil {
			continue // a grid too coarse for the chain
		}
		for _, m := range []Method{Best, Linear} {
			if b, err := MinBudget(mc, Options{Method: m, Slots: slots}); err != nil || b > r {
				t.Fatalf("bundle %d, %d slots, method %v: smallest budget %d (%v), one chain's %d", i, slots, m, b, err, r)
			}
		}
		peak := rotor.StoreAllPeak(one)
		for range 4 {
			budget := r + rng.Int64N(peak-r+2)
			p, err := rotor.Solve(one, budget, rotor.Options{Slots: slots})
			if err != nil {
				continue // rounding refuses a budget above rotor's smallest
			}
			compared++
			for _, m := range []Method{Best, Linear} {
				q, err := Solve(mc, budget, Options{Method: m, Slots: slots})
				if err != nil || q.Makespan > p.Makespan*(1+1e-12) {
					t.Fatalf("bundle %d, %d slots, method %v, budget %d: makespan %v (%v), one chain's %v", i, slots, m, budget, q, err, p.Makespan)
				}
			}
		}
	}
	if compared < n {
		t.Fatalf("only %d comparisons", compared)
	}
}
