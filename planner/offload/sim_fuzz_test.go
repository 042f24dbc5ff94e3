package offload

import (
	"math"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/testchains"
)

// FuzzSimulate feeds arbitrary schedules of the spec's example chain to the simulator: it
// must never panic, and a timing it accepts must pass its own checker with the same
// makespan, within the budget.
func FuzzSimulate(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, []byte{0, 255, 1, 9}, uint8(22), uint8(1), false)
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, []byte{0, 255, 0, 1}, uint8(18), uint8(4), true)
	f.Add([]byte{}, []byte{}, uint8(0), uint8(0), false)
	c := testchains.PofoExample(1)
	kinds := []chainplan.OpKind{chainplan.FAll, chainplan.FCk, chainplan.FNone, chainplan.B}
	f.Fuzz(func(t *testing.T, ops, xfers []byte, limit, beta uint8, integral bool) {
		if len(ops) > 40 || len(xfers) > 24 {
			return
		}
		var s Schedule
		for _, b := range ops {
			s.Compute = append(s.Compute, chainplan.Op{Kind: kinds[int(b)%4], Stage: 1 + int(b/4)%6})
		}
		for i := 0; i+1 < len(xfers); i += 2 {
			dir := chainplan.TransferOffload
			if xfers[i]&1 == 1 {
				dir = chainplan.TransferPrefetch
			}
			tensor := chainplan.Tensor{Stage: int(xfers[i]>>1) % 6, Saved: xfers[i]&0x80 != 0}
			s.Transfers = append(s.Transfers, chainplan.Transfer{Dir: dir, Tensor: tensor, Anchor: int(int8(xfers[i+1]))})
		}
		s.SyncAtLoss = limit%2 == 0
		model := chainplan.Fractional
		if integral {
			model = chainplan.Integral
		}
		opts := SimOptions{BandwidthBytesPerS: float64(beta%8 + 1), LimitBytes: int64(limit % 40), Model: model}
		r, err := Simulate(c, s, opts)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Valid {
			return
		}
		cr, err := Check(c, s, *r.Timing, opts)
		if err != nil || !cr.Valid || math.Abs(cr.Makespan-r.Makespan) > 1e-9*r.Makespan || r.PeakBytes > opts.LimitBytes {
			t.Fatalf("accepted timing fails its check: %v %+v (report %+v)", err, cr, r)
		}
	})
}
