package baseline

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
	"github.com/chainplan/chainplan/planner/internal/testchains"
	"github.com/chainplan/chainplan/planner/simulate"
)

func TestSequentialSequenceShape(t *testing.T) {
	// The example drawn in SequentialSequence's comment.
	want := "F_ck 1, F_none 2, F_ck 3, F_none 4, F_all 5, F_all 6, F_all 7, B 7, B 6, B 5, " +
		"F_all 3, F_all 4, B 4, B 3, F_all 1, F_all 2, B 2, B 1"
	if got := chainplan.FormatSequence(SequentialSequence(6, 3)); got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
	// PyTorch puts the remainder in the last segment: 7 stages, 3 segments → 2, 2, 3.
	want = "F_ck 1, F_none 2, F_ck 3, F_none 4, F_all 5, F_all 6, F_all 7, F_all 8, B 8, B 7, B 6, B 5, " +
		"F_all 3, F_all 4, B 4, B 3, F_all 1, F_all 2, B 2, B 1"
	if got := chainplan.FormatSequence(SequentialSequence(7, 3)); got != want {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
}

// storeAllPeak is M_peak of rotor spec §4.4, eq. (3.1)-(3.3), computed from the formula
// rather than by replay.
func storeAllPeak(c *discretize.Chain) int64 {
	var peak, below int64
	below = c.A[0] // Σ_{k<ℓ} ā_k with ā_0 = a_0
	for l := 1; l <= c.N; l++ {
		mf := c.OF[l] + c.ABar[l]
		mb := c.OB[l] + c.ABar[l] + c.Grad(l) + c.Grad(l-1)
		peak = max(peak, max(mf, mb)+below)
		below += c.ABar[l]
	}
	return peak
}

func TestBaselinesOnRandomChains(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for i := 0; i < 2000; i++ {
		c := testchains.Random(rng, 1+rng.IntN(12), testchains.RandomOptions{MaxSize: 20})
		ex := discretize.Exact(c)
		peak := storeAllPeak(ex)
		p, err := StoreAll(c, peak)
		if err != nil {
			t.Fatalf("chain %d: StoreAll at its peak %d: %v", i, peak, err)
		}
		if p.PeakBytes != peak || p.Makespan != c.SumTime() {
			t.Fatalf("chain %d: store-all peak %d makespan %v, want %d and %v", i, p.PeakBytes, p.Makespan, peak, c.SumTime())
		}
		var ie *chainplan.InfeasibleError
		if _, err := StoreAll(c, peak-1); !errors.As(err, &ie) || ie.MinBudgetBytes != peak {
			t.Fatalf("chain %d: StoreAll below its peak: %v", i, err)
		}
		l := c.Len()
		for k := 1; k <= l; k++ {
			seq := SequentialSequence(l, k)
			rep := simulate.Run(ex, seq, -1)
			if !rep.Valid {
				t.Fatalf("chain %d, %d segments: %v", i, k, rep.Err())
			}
			// Makespan = Σ(u_F+u_B) + the forwards of the k−1 recomputed segments (spec §4.3).
			want := c.SumTime()
			for s := 1; s <= (k-1)*(l/k); s++ {
				want += c.Stages[s-1].FwdTime
			}
			if rep.Makespan != want {
				t.Fatalf("chain %d, %d segments: makespan %v, want %v", i, k, rep.Makespan, want)
			}
			if k == 1 && rep.Peak != peak {
				t.Fatalf("chain %d: one segment peaks at %d, want the store-all peak %d", i, rep.Peak, peak)
			}
			// A fixed segment count fits exactly from its own peak on.
			if _, err := Sequential(c, rep.Peak, k); err != nil {
				t.Fatalf("chain %d, %d segments at its peak: %v", i, k, err)
			}
			if _, err := Sequential(c, rep.Peak-1, k); !errors.Is(err, chainplan.ErrInfeasible) {
				t.Fatalf("chain %d, %d segments below its peak: %v", i, k, err)
			}
		}
		// The automatic choice is the fastest count that fits.
		budget := peak / 2
		best, err := Sequential(c, budget, 0)
		for k := 1; k <= l; k++ {
			rep := simulate.Run(ex, SequentialSequence(l, k), budget)
			if rep.Valid && (err != nil || rep.Makespan < best.Makespan) {
				t.Fatalf("chain %d: %d segments fit %d with makespan %v; Sequential chose %v, %v", i, k, budget, rep.Makespan, best, err)
			}
		}
	}
}
