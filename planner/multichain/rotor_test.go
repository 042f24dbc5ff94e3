package multichain_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/testchains"
	"github.com/chainplan/chainplan/planner/multichain"
	"github.com/chainplan/chainplan/planner/rotor"
)

// one makes a bundle of the single chain c, its loss the joint loss.
func one(c *chainplan.Chain) *chainplan.MultiChain {
	b := *c
	b.Loss = chainplan.Loss{}
	return &chainplan.MultiChain{Format: chainplan.MultiChainFormat, Branches: []chainplan.Chain{b}, Loss: c.Loss}
}

// TestOneTowerIsRevolve is the K = 1 cross-check of spec §6 through the public APIs: on a
// chain of n identical stages with a = δ = 1 byte and ā = X (rotor spec §4.2's reduction
// chain, here with a zero loss and X = 50), H0 at every budget equals rotor's revolve variant, the
// persistent AD-style optimum, solved in exact bytes. H0's slot is 1 byte and its reserve
// ā + a = X + 1, so budget X + 1 + m gives the dynamic program m slots; revolve's F_all
// before each backward needs the same X + 1 on top of the values the AD model counts. Both
// are infeasible below the same budget.
func TestOneTowerIsRevolve(t *testing.T) {
	t.Parallel()
	const x = 50 // large enough that F_all can only run right before its B (rotor spec §4.2)
	maxN := 25
	if testing.Short() {
		maxN = 12
	}
	for _, u := range [][2]float64{{1, 0}, {1, 1}, {2, 3}} {
		for n := 1; n <= maxN; n++ {
			c := &chainplan.Chain{Format: chainplan.ChainFormat, InputBytes: 1}
			for range n {
				c.Stages = append(c.Stages, chainplan.Stage{FwdTime: u[0], BwdTime: u[1], OutBytes: 1, SavedBytes: x})
			}
			for m := int64(0); m <= int64(n)+3; m++ {
				budget := x + 1 + m
				rv, rerr := rotor.Solve(c, budget, rotor.Options{Slots: -1, Revolve: true})
				h0, herr := multichain.Solve(one(c), budget, multichain.Options{Method: multichain.DP})
				if errors.Is(rerr, chainplan.ErrInfeasible) != errors.Is(herr, chainplan.ErrInfeasible) {
					t.Fatalf("u=%v n=%d m=%d: revolve %v, H0 %v", u, n, m, rerr, herr)
				}
				if rerr != nil {
					continue
				}
				if herr != nil {
					t.Fatal(herr)
				}
				if rv.Makespan != h0.Makespan {
					t.Fatalf("u=%v n=%d m=%d: revolve %v, H0 %v", u, n, m, rv.Makespan, h0.Makespan)
				}
			}
		}
	}
}

// TestOneTowerLinearIsRotor: for K = 1 the linearized chain is the chain itself, so H1's
// plan is rotor's, at every budget of random chains, and Best is never slower.
func TestOneTowerLinearIsRotor(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 11))
	for i := range 100 {
		c := testchains.Random(rng, 1+rng.IntN(10), testchains.RandomOptions{Float: i%2 == 0})
		peak := rotor.StoreAllPeak(c)
		for range 5 {
			budget := 1 + rng.Int64N(peak+1)
			r, rerr := rotor.Solve(c, budget, rotor.Options{})
			h1, herr := multichain.Solve(one(c), budget, multichain.Options{Method: multichain.Linear})
			if errors.Is(rerr, chainplan.ErrInfeasible) != errors.Is(herr, chainplan.ErrInfeasible) {
				t.Fatalf("chain %d budget %d: rotor %v, H1 %v", i, budget, rerr, herr)
			}
			if rerr != nil {
				continue
			}
			if herr != nil {
				t.Fatal(herr)
			}
			if math.Abs(r.Makespan-h1.Makespan) > 1e-9*r.Makespan || r.PeakBytes != h1.PeakBytes {
				t.Fatalf("chain %d budget %d: rotor %v (peak %d), H1 %v (peak %d)", i, budget, r.Makespan, r.PeakBytes,
					h1.Makespan, h1.PeakBytes)
			}
			best, err := multichain.Solve(one(c), budget, multichain.Options{})
			if err != nil || best.Makespan > h1.Makespan {
				t.Fatalf("chain %d budget %d: Best %v, %v; H1 %v", i, budget, best, err, h1.Makespan)
			}
		}
	}
}
