package rotor

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/bruteforce"
	"github.com/chainplan/chainplan/planner/internal/discretize"
	"github.com/chainplan/chainplan/planner/internal/testchains"
)

// TestPersistentAgainstExhaustive compares Solve and SolveFloating with the exhaustive
// search of rotor spec §4.6 on chains of at most 5 stages: the floating DP equals the
// optimum, the persistent DP is never below it, and is above it only rarely. The spec
// measured ≈0.1 % of its random cases; with these small sizes and overheads (more stages
// where moving right with F_none pays, spec §3.4 D1) it is about 1.4 %, so the bound
// below is a sanity check at 5 %.
func TestPersistentAgainstExhaustive(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	pairs, above := 0, 0
	for i := 0; i < randomCount()/2; i++ {
		c := testchains.Random(rng, 1+rng.IntN(5), testchains.RandomOptions{MaxSize: 8, MaxOverhead: 2})
		dc := discretize.Exact(c)
		peak := StoreAllPeak(c)
		for b := dc.A[0]; b <= peak+1; b++ {
			want, _, ok := bruteforce.Optimal(dc, b)
			p, perr := Solve(c, b, exact)
			f, ferr := SolveFloating(c, b, exact)
			if !ok {
				if !errors.Is(perr, chainplan.ErrInfeasible) || !errors.Is(ferr, chainplan.ErrInfeasible) {
					t.Fatalf("chain %d budget %d: exhaustive finds nothing, rotor %v, optimal %v", i, b, perr, ferr)
				}
				continue
			}
			if ferr != nil || f.Makespan != want {
				t.Fatalf("chain %d budget %d: optimal %v, %v; exhaustive %v", i, b, f, ferr, want)
			}
			mustReplay(t, c, f)
			pairs++
			if perr != nil {
				above++ // persistence can cost feasibility too
				continue
			}
			if p.Makespan < want {
				t.Fatalf("chain %d budget %d: rotor %v below the optimum %v", i, b, p.Makespan, want)
			}
			if p.Makespan > want {
				above++
			}
		}
	}
	if pairs == 0 || float64(above) > 0.05*float64(pairs) {
		t.Fatalf("rotor above the optimum in %d of %d feasible cases; expected about 1 %%", above, pairs)
	}
	t.Logf("rotor above the optimum in %d of %d feasible (chain, budget) pairs", above, pairs)
}
