package bruteforce

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
	"github.com/chainplan/chainplan/planner/internal/testchains"
	"github.com/chainplan/chainplan/planner/simulate"
)

// checkReplay fails t unless seq replays validly within limit with the claimed makespan.
func checkReplay(t *testing.T, dc *discretize.Chain, limit int64, makespan float64, seq []chainplan.Op) {
	t.Helper()
	rep := simulate.Run(dc, seq, limit)
	if err := rep.Err(); err != nil {
		t.Fatalf("limit %d: %v\nsequence: %s", limit, err, chainplan.FormatSequence(seq))
	}
	if rep.Makespan != makespan {
		t.Fatalf("limit %d: replayed makespan %v, Optimal said %v", limit, rep.Makespan, makespan)
	}
}

func TestBruteForceCases(t *testing.T) {
	var cases []testchains.Case
	cases = append(cases, testchains.ExampleA())
	// N = n+3 stages; n = 6 (9 stages) is the largest the search handles quickly.
	for n := 3; n <= 6; n++ {
		cases = append(cases, testchains.Counterexample(n))
	}
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			dc := discretize.Exact(tc.Chain)
			for limit, want := range tc.Want {
				if w, ok := tc.WantFloating[limit]; ok {
					want = w // the search is not restricted to persistent schedules
				}
				got, seq, ok := Optimal(dc, limit)
				if want == testchains.Inf {
					if ok {
						t.Errorf("limit %d: got makespan %v, want infeasible", limit, got)
					}
					continue
				}
				if !ok || got != want {
					t.Errorf("limit %d: Optimal() = %v, %v, want %v, true", limit, got, ok, want)
					continue
				}
				checkReplay(t, dc, limit, got, seq)
			}
		})
	}
}

// storeAll is the schedule without recomputation of an n-stage chain: F_all 1..n, B n..1.
func storeAll(n int) []chainplan.Op {
	var seq []chainplan.Op
	for k := 1; k <= n; k++ {
		seq = append(seq, chainplan.Op{Kind: chainplan.FAll, Stage: k})
	}
	for k := n; k >= 1; k-- {
		seq = append(seq, chainplan.Op{Kind: chainplan.B, Stage: k})
	}
	return seq
}

// TestBruteForceReplay checks every returned sequence in the simulator, and that the
// makespan never increases with the limit, on seeded random chains of 1..5 stages.
func TestBruteForceReplay(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	opts := testchains.RandomOptions{MaxSize: 5, MaxTime: 5, MaxOverhead: 2}
	chains := 200
	if testing.Short() {
		chains = 60
	}
	for i := range chains {
		l := 1 + i%5
		c := testchains.Random(rng, l, opts)
		dc := discretize.Exact(c)
		top := simulate.Run(dc, storeAll(dc.N), -1).Peak
		t.Run(fmt.Sprintf("chain%d", i), func(t *testing.T) {
			prev, feasible := 0.0, false
			for limit := int64(0); limit <= top+2; limit++ {
				got, seq, ok := Optimal(dc, limit)
				switch {
				case !ok && feasible:
					t.Fatalf("limit %d infeasible, limit %d was feasible", limit, limit-1)
				case !ok:
					continue
				case feasible && got > prev:
					t.Fatalf("limit %d: makespan %v above %v at limit %d", limit, got, prev, limit-1)
				}
				checkReplay(t, dc, limit, got, seq)
				prev, feasible = got, true
			}
			if !feasible || prev != dc.SumTime() {
				t.Fatalf("at the store-all peak %d: makespan %v (feasible %v), want Σ(u_F+u_B) = %v",
					top, prev, feasible, dc.SumTime())
			}
		})
	}
}

// TestLowerBound checks the shortcut of Optimal: below lowerBound the full search finds
// nothing either, on seeded random chains.
func TestLowerBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	opts := testchains.RandomOptions{MaxSize: 5, MaxTime: 5, MaxOverhead: 3}
	tight, chains := 0, 300
	if testing.Short() {
		chains = 100
	}
	for i := range chains {
		dc := discretize.Exact(testchains.Random(rng, 1+i%5, opts))
		lb := lowerBound(dc)
		if v, seq, ok := run(dc, lb-1); ok {
			t.Fatalf("chain %d (%+v): makespan %v at limit %d below the bound %d: %s",
				i, *dc, v, lb-1, lb, chainplan.FormatSequence(seq))
		}
		if _, _, ok := run(dc, lb); ok {
			tight++
		}
	}
	t.Logf("the bound was the smallest feasible limit for %d of %d chains", tight, chains)
}
