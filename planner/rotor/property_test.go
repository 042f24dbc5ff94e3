package rotor

import (
	"errors"
	"github.com/chainplan/chainplan/internal/racedetect"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/baseline"
	"github.com/chainplan/chainplan/planner/internal/discretize"
	"github.com/chainplan/chainplan/planner/internal/testchains"
)

// randomCount is the number of random chains per property test; -short keeps thousands.
func randomCount() int {
	if testing.Short() {
		return racedetect.Scale(1500)
	}
	return racedetect.Scale(6000)
}

// TestTableMatchesNaive compares every entry C(1, N, m) of the vectorized, parallel table
// with the memoized recursion of Theorem 6, for both variants.
func TestTableMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < randomCount()/3; i++ {
		c := testchains.Random(rng, 1+rng.IntN(9), testchains.RandomOptions{MaxSize: 12, Float: i%2 == 0})
		dc := discretize.Exact(c)
		m := int64(rng.IntN(80))
		for _, revolve := range []bool{false, true} {
			tb, err := newTable(dc, m, variant{revolve: revolve})
			if err != nil {
				t.Fatal(err)
			}
			nv := newNaive(dc, revolve)
			for mm := int64(0); mm <= m; mm++ {
				got, want := tb.value(1, dc.N, 0, mm), nv.C(1, dc.N, mm)
				if !(got == want || math.Abs(got-want) <= 1e-9*math.Abs(want)) {
					t.Fatalf("chain %d m=%d revolve=%v: table %v, naive %v", i, mm, revolve, got, want)
				}
				if need := tb.need.at(1, dc.N, 0); (mm >= need) != !math.IsInf(got, 1) {
					t.Fatalf("chain %d m=%d: need %d disagrees with value %v", i, mm, need, got)
				}
			}
		}
	}
}

// TestSolveProperties checks, on thousands of random chains and every budget around the
// feasible range (exact bytes), the invariants of rotor spec §4.4-4.5: each plan replays
// within its budget with the makespan it claims; the makespan is never below Σ(u_F+u_B),
// never increases with the budget, equals Σ from the store-all peak on, and is never worse
// than revolve or sequential at the same budget; infeasibility starts exactly below
// MinBudget.
func TestSolveProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < randomCount(); i++ {
		c := testchains.Random(rng, 1+rng.IntN(10), testchains.RandomOptions{MaxSize: 10})
		sum := c.SumTime()
		minB, err := MinBudget(c, exact)
		if err != nil {
			t.Fatal(err)
		}
		peak := StoreAllPeak(c)
		prev := math.Inf(1)
		for b := minB - 2; b <= peak+1; b++ {
			p, err := Solve(c, b, exact)
			if b < minB {
				var ie *chainplan.InfeasibleError
				if !errors.As(err, &ie) || ie.MinBudgetBytes != minB {
					t.Fatalf("chain %d budget %d < min %d: got %v", i, b, minB, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("chain %d budget %d ≥ min %d: %v", i, b, minB, err)
			}
			mustReplay(t, c, p)
			if p.Makespan < sum {
				t.Fatalf("chain %d budget %d: makespan %v below Σ %v", i, b, p.Makespan, sum)
			}
			if p.Makespan > prev {
				t.Fatalf("chain %d budget %d: makespan %v grew from %v", i, b, p.Makespan, prev)
			}
			if b >= peak && p.Makespan != sum {
				t.Fatalf("chain %d budget %d ≥ store-all peak %d: makespan %v, want Σ %v", i, b, peak, p.Makespan, sum)
			}
			prev = p.Makespan
			if rv, err := Solve(c, b, Options{Slots: -1, Revolve: true}); err == nil {
				mustReplay(t, c, rv)
				if p.Makespan > rv.Makespan {
					t.Fatalf("chain %d budget %d: rotor %v worse than revolve %v", i, b, p.Makespan, rv.Makespan)
				}
			}
			if sq, err := baseline.Sequential(c, b, 0); err == nil {
				mustReplay(t, c, sq)
				if p.Makespan > sq.Makespan {
					t.Fatalf("chain %d budget %d: rotor %v worse than sequential %v (%d segments)", i, b, p.Makespan, sq.Makespan, sq.Segments)
				}
			}
		}
	}
}

// TestZeroRecomputeThreshold checks rotor spec §4.4 on the DP itself (Solve's store-all
// shortcut bypassed): with every u_F > 0, C(1, N, M − a_0) = Σ(u_F+u_B) iff M ≥ M_peak.
func TestZeroRecomputeThreshold(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < randomCount()/2; i++ {
		c := testchains.Random(rng, 1+rng.IntN(10), testchains.RandomOptions{MaxSize: 10})
		for k := range c.Stages {
			c.Stages[k].FwdTime++
		}
		c.Loss.FwdTime++
		dc := discretize.Exact(c)
		peak := StoreAllPeak(c)
		m := peak - dc.A[0]
		tb, err := newTable(dc, m, variant{})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := tb.value(1, dc.N, 0, m), c.SumTime(); got != want {
			t.Fatalf("chain %d: C at M_peak=%d is %v, want Σ %v", i, peak, got, want)
		}
		if got := tb.value(1, dc.N, 0, m-1); !(got > c.SumTime()) {
			t.Fatalf("chain %d: C just below M_peak=%d is %v, want more than Σ %v", i, peak, got, c.SumTime())
		}
	}
}

// TestDiscretizedPlansFit checks the default discretization on chains with byte-sized
// values: every plan fits its budget in exact bytes, and MinBudget returns a budget that
// Solve accepts.
func TestDiscretizedPlansFit(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < randomCount()/10; i++ {
		c := testchains.Random(rng, 2+rng.IntN(30), testchains.RandomOptions{MaxSize: 1 << 24, MaxOverhead: 1 << 20, Float: true})
		opts := Options{Slots: int64(50 + rng.IntN(500))}
		minB, err := MinBudget(c, opts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Solve(c, minB, opts); err != nil {
			t.Fatalf("chain %d: Solve(MinBudget=%d): %v", i, minB, err)
		}
		peak := StoreAllPeak(c)
		for j := 0; j < 5; j++ {
			b := minB + rng.Int64N(peak-minB+1)
			p, err := Solve(c, b, opts)
			if err != nil {
				continue // rounding can refuse a budget just above the minimum
			}
			mustReplay(t, c, p)
			if p.PeakBytes > b {
				t.Fatalf("chain %d: peak %d over budget %d", i, p.PeakBytes, b)
			}
		}
	}
}
