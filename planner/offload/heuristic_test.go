package offload

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/testchains"
	"github.com/chainplan/chainplan/planner/offload/internal/units"
	"github.com/chainplan/chainplan/planner/rotor"
)

// TestHeuristicsReplay runs AUTOCAPPER and OPPORTUNIST (spec §4.13) on random chains: every
// plan replays within the budget with the makespan it reports, never beats Σ(u_F+u_B),
// costs exactly Σ once the store-all schedule fits, and AUTOCAPPER, whose first limit M'
// is the budget itself, is never slower than rotor's plan at the same slots. Failures are
// infeasibility errors with a smallest budget that works.
func TestHeuristicsReplay(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	n := 150
	if testing.Short() {
		n = 40
	}
	solvers := []struct {
		name  string
		solve func(*chainplan.Chain, int64, Options) (*chainplan.Plan, error)
	}{{"autocapper", SolveAutoCapper}, {"opportunist", SolveOpportunist}}
	for i := 0; i < n; i++ {
		c := testchains.Random(rng, 1+rng.IntN(7), testchains.RandomOptions{MaxSize: 1 << 20, MaxOverhead: 1 << 18, Float: true})
		peak := int64(units.Exact(c).StoreAllPeak())
		b := peak/3 + rng.Int64N(peak*3/4)
		opts := Options{BandwidthBytesPerS: float64(1<<20) * (0.5 + 4*rng.Float64()), Slots: 100}
		for _, sv := range solvers {
			p, err := sv.solve(c, b, opts)
			if err != nil {
				var ie *chainplan.InfeasibleError
				if !errors.As(err, &ie) || ie.MinBudgetBytes <= b {
					t.Fatalf("chain %d %s budget %d: %v", i, sv.name, b, err)
				}
				if _, err := sv.solve(c, ie.MinBudgetBytes, opts); err != nil {
					t.Fatalf("chain %d %s: the smallest budget %d fails: %v", i, sv.name, ie.MinBudgetBytes, err)
				}
				continue
			}
			r, err := Simulate(c, ScheduleOf(p), SimOptions{BandwidthBytesPerS: opts.BandwidthBytesPerS, LimitBytes: b})
			if err != nil || !r.Valid || r.Makespan != p.Makespan || p.PeakBytes > b {
				t.Fatalf("chain %d %s: plan %v/%d, replay %+v (%v)", i, sv.name, p.Makespan, p.PeakBytes, r, err)
			}
			sum := c.SumTime()
			if p.Makespan < sum*(1-1e-12) || b >= peak && p.Makespan > sum*(1+1e-12) {
				t.Fatalf("chain %d %s: makespan %v, Σ %v (budget %d, peak %d)", i, sv.name, p.Makespan, sum, b, peak)
			}
			if sv.name == "autocapper" {
				if rp, err := rotor.Solve(c, b, rotor.Options{Slots: 100}); err == nil && p.Makespan > rp.Makespan*(1+1e-12) {
					t.Fatalf("chain %d: AUTOCAPPER %v slower than rotor %v", i, p.Makespan, rp.Makespan)
				}
			}
		}
	}
}

// TestCapperOffloadsLowestIndex checks the choice rule of CAPPER (spec §4.13): on a chain
// whose store-all schedule is a little over the budget, the first offload is a_0, the
// lowest-indexed activation on the GPU at the failing operation.
func TestCapperOffloadsLowestIndex(t *testing.T) {
	c := testchains.PofoExample(1)
	ex := units.Exact(c)
	s, ok := capper(ex, chainplan.StoreAllSequence(4), SimOptions{BandwidthBytesPerS: 1, LimitBytes: 24, Model: chainplan.Fractional})
	if !ok {
		t.Fatal("CAPPER failed at M = 24")
	}
	if len(s.Transfers) != 2 || s.Transfers[0].Tensor != (chainplan.Tensor{}) {
		t.Fatalf("transfers %v, want a0 offloaded and prefetched", s.Transfers)
	}
	if r := Replay(ex, s, SimOptions{BandwidthBytesPerS: 1, LimitBytes: 24, Model: chainplan.Fractional}); !r.Valid || r.Makespan != 19 {
		t.Fatalf("replay %+v", r)
	}
}
