package offload

import (
	"errors"
	"testing"

	"github.com/chainplan/chainplan"
)

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
		for _, solve := range []Solver{SolvePOFO, SolveDynProg} {
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
