package offload_test

import (
	"math/rand/v2"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/testchains"
	"github.com/chainplan/chainplan/planner/offload"
	"github.com/chainplan/chainplan/planner/offload/internal/units"
	"github.com/chainplan/chainplan/planner/rotor"
)

// TestStoreAllPeakAgrees holds the family to one store-all peak: the closed form M_peak of
// (3.3) its dynamic programs bound their budgets with equals the peak both simulators give
// the store-all sequence (rotor.StoreAllPeak replays it with planner/simulate, this
// package's Simulate with no transfer), including chains whose last stage saves less than
// its output (the loss consumes a_L).
func TestStoreAllPeakAgrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 31))
	n := 4000
	if testing.Short() {
		n = 1000
	}
	for i := 0; i < n; i++ {
		c := testchains.Random(rng, 1+rng.IntN(10), testchains.RandomOptions{
			MaxSize: 1 + rng.Int64N(1<<20), MaxOverhead: rng.Int64N(1 << 16)})
		if rng.IntN(3) == 0 {
			last := &c.Stages[len(c.Stages)-1]
			last.SavedBytes = rng.Int64N(last.OutBytes + 1)
		}
		if err := c.Validate(); err != nil {
			continue
		}
		closed := int64(units.Exact(c).StoreAllPeak())
		peak := rotor.StoreAllPeak(c)
		rep, err := offload.Simulate(c, offload.Schedule{Compute: chainplan.StoreAllSequence(c.Len())},
			offload.SimOptions{BandwidthBytesPerS: 1, LimitBytes: -1})
		if err != nil {
			t.Fatalf("chain %d: %v", i, err)
		}
		if closed != peak || rep.PeakBytes != peak {
			t.Fatalf("chain %d: closed form %d, planner/simulate %d, offloading simulator %d: want one peak",
				i, closed, peak, rep.PeakBytes)
		}
	}
}
