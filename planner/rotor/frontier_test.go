package rotor

import (
	"github.com/chainplan/chainplan/internal/racedetect"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/chainplan/chainplan/planner/internal/testchains"
)

// TestFrontierMatchesSolve checks in exact bytes that every frontier point is the optimum
// at its budget and that one byte less costs strictly more time (or is infeasible).
func TestFrontierMatchesSolve(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for i := 0; i < 300; i++ {
		c := testchains.Random(rng, 1+rng.IntN(8), testchains.RandomOptions{MaxSize: 10})
		f, err := SolveFrontier(c, exact)
		if err != nil {
			t.Fatal(err)
		}
		minB, _ := MinBudget(c, exact)
		if len(f.Points) == 0 || f.Points[0].BudgetBytes != minB {
			t.Fatalf("chain %d: frontier starts at %v, want the smallest budget %d", i, f.Points, minB)
		}
		last := f.Points[len(f.Points)-1]
		if last.Makespan != c.SumTime() || last.BudgetBytes > StoreAllPeak(c) {
			t.Fatalf("chain %d: frontier ends at %+v, want Σ %v by the store-all peak %d", i, last, c.SumTime(), StoreAllPeak(c))
		}
		for k, pt := range f.Points {
			p, err := Solve(c, pt.BudgetBytes, exact)
			if err != nil || p.Makespan != pt.Makespan {
				t.Fatalf("chain %d point %d %+v: Solve gives %v, %v", i, k, pt, p, err)
			}
			if k > 0 {
				if q, err := Solve(c, pt.BudgetBytes-1, exact); err != nil || q.Makespan <= pt.Makespan {
					t.Fatalf("chain %d point %d %+v: one byte less gives %v, %v", i, k, pt, q, err)
				}
			}
		}
	}
}

// TestFrontierFractionalTimes checks that with fractional times, where two sums of the
// same operations in another order may differ in the last bits, every point of the
// frontier is a real step (Solve at one byte less is slower by more than rounding, or
// infeasible) and the last is (peak, Σ) exactly. The frontier once listed such ulp drops
// as points (1630 in these chains), the peak twice, or ended one ulp below Σ.
func TestFrontierFractionalTimes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*b }
	for i := 0; i < racedetect.Scale(1000); i++ {
		c := testchains.Random(rng, 1+rng.IntN(10), testchains.RandomOptions{MaxSize: 30, Float: true})
		f, err := SolveFrontier(c, exact)
		if err != nil {
			t.Fatal(err)
		}
		for k, pt := range f.Points {
			if p, err := Solve(c, pt.BudgetBytes, exact); err != nil || !near(p.Makespan, pt.Makespan) {
				t.Fatalf("chain %d point %d %+v: Solve gives %v, %v", i, k, pt, p, err)
			}
			if k == 0 {
				continue
			}
			if q, err := Solve(c, pt.BudgetBytes-1, exact); err != nil || q.Makespan <= pt.Makespan*(1+1e-12) {
				t.Fatalf("chain %d point %d %+v: one byte less gives %v, %v", i, k, pt, q, err)
			}
		}
		if last := f.Points[len(f.Points)-1]; last.BudgetBytes != StoreAllPeak(c) || last.Makespan != f.SumTime {
			t.Fatalf("chain %d: frontier ends at %+v, want (%d, %v)", i, last, StoreAllPeak(c), f.SumTime)
		}
	}
}

// TestFrontierOnTheDefaultGrid checks the frontier with the default 500 slots on chains of
// large sizes, where rounding to the peak's unit matters: it is never empty, never starts
// below the exact smallest budget, rotor's ends at (store-all peak, Σ), and every point's
// own slots (budget/unit) reproduce its makespan. Rounding once made the grid's store-all
// need a few units more than the rounded-down peak: the frontier then had no point at all
// (6 of 1000 chains here, for rotor and revolve alike).
func TestFrontierOnTheDefaultGrid(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*b }
	for i := 0; i < racedetect.Scale(1000); i++ {
		c := testchains.Random(rng, 1+rng.IntN(12), testchains.RandomOptions{MaxSize: 100000, Float: true})
		for _, revolve := range []bool{false, true} {
			opts := Options{Revolve: revolve}
			f, err := SolveFrontier(c, opts)
			if err != nil {
				t.Fatal(err)
			}
			exactMin, _ := MinBudget(c, Options{Revolve: revolve, Slots: -1})
			if len(f.Points) == 0 || f.Points[0].BudgetBytes < exactMin {
				t.Fatalf("chain %d revolve=%v: frontier %+v, exact smallest budget %d", i, revolve, f.Points, exactMin)
			}
			last := f.Points[len(f.Points)-1]
			if !revolve && (last.BudgetBytes != f.StoreAllPeakByte || last.Makespan != f.SumTime) {
				t.Fatalf("chain %d: rotor's frontier ends at %+v, want (%d, %v)", i, last, f.StoreAllPeakByte, f.SumTime)
			}
			for k, pt := range f.Points {
				p, err := Solve(c, pt.BudgetBytes, Options{Revolve: revolve, Slots: pt.BudgetBytes / f.UnitBytes})
				if err != nil || !near(p.Makespan, pt.Makespan) {
					t.Fatalf("chain %d revolve=%v point %d %+v: Solve gives %v, %v", i, revolve, k, pt, p, err)
				}
			}
		}
	}
}
