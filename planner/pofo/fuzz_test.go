package pofo

import (
	"errors"
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

// FuzzSolve plans small chains drawn from the fuzzer's bytes with POFO (exact bytes and a
// coarse grid) and DYNPROG, over slow and very fast links: a plan must replay within its budget with the makespan it
// reports; an error must be an infeasibility with a smallest budget above the budget.
func FuzzSolve(f *testing.F) {
	f.Add([]byte{3, 5, 2, 4, 1, 6, 2, 3, 7, 1, 2, 2}, uint16(30), uint8(2))
	f.Add([]byte{9, 9, 9, 9, 9, 9, 9, 9, 9}, uint16(12), uint8(7))
	f.Fuzz(func(t *testing.T, data []byte, budget uint16, beta uint8) {
		if len(data) < 6 || len(data) > 30 {
			return
		}
		c := &chainplan.Chain{Format: chainplan.ChainFormat, InputBytes: int64(data[0]%8 + 1)}
		for i := 1; i+4 < len(data); i += 5 {
			a := int64(data[i]%8 + 1)
			c.Stages = append(c.Stages, chainplan.Stage{FwdTime: float64(data[i+1] % 5), BwdTime: float64(data[i+2] % 5),
				OutBytes: a, SavedBytes: a + int64(data[i+3]%5), FwdTmpBytes: int64(data[i+4] % 3), BwdTmpBytes: int64(data[i+4] / 3 % 3)})
		}
		b := int64(budget%200) + 1
		// Slow links, and links so fast that a transfer is shorter than the time
		// tolerance (TestSolveFastLink).
		opts := Options{BandwidthBytesPerS: float64(beta%6+1) * []float64{1, 1e9}[beta/6%2], Slots: []int64{-1, 12}[beta%2]}
		for _, solve := range []func(*chainplan.Chain, int64, Options) (*chainplan.Plan, error){Solve, SolveOffload} {
			p, err := solve(c, b, opts)
			if err != nil {
				var ie *chainplan.InfeasibleError
				if !errors.As(err, &ie) || ie.MinBudgetBytes <= b {
					t.Fatalf("budget %d: %v", b, err)
				}
				continue
			}
			r, err := Simulate(c, ScheduleOf(p), SimOptions{BandwidthBytesPerS: opts.BandwidthBytesPerS, LimitBytes: b})
			if err != nil || !r.Valid || r.Makespan != p.Makespan || p.PeakBytes > b {
				t.Fatalf("%s plan does not replay: %v %+v", p.Algo, err, r)
			}
		}
	})
}
