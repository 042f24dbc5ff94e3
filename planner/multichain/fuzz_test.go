package multichain

import (
	"errors"
	"testing"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/simulate"
)

// FuzzSolve plans small bundles drawn from the fuzzer's bytes with every method: a plan
// must replay within its budget with the makespan and peak it reports; an error must be an
// infeasibility whose smallest budget is above the budget and works.
func FuzzSolve(f *testing.F) {
	f.Add([]byte{2, 3, 5, 2, 4, 1, 6, 2, 3, 7, 1, 2, 2, 4, 0, 1}, uint16(30), uint8(0))
	f.Add([]byte{3, 0, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 1, 1, 1}, uint16(12), uint8(5))
	f.Fuzz(func(t *testing.T, data []byte, budget uint16, flags uint8) {
		if len(data) < 6 || len(data) > 40 {
			return
		}
		k := int(data[0]%3) + 1
		mc := &chainplan.MultiChain{Format: chainplan.MultiChainFormat,
			Loss: chainplan.Loss{FwdTime: float64(data[1] % 3), BwdTime: 1, FwdTmpBytes: int64(data[1] % 4), BwdTmpBytes: int64(data[2] % 3)}}
		for j := range k {
			mc.Branches = append(mc.Branches, chainplan.Chain{Format: chainplan.ChainFormat, InputBytes: int64(data[2+j]%8 + 1)})
			mc.KeepInputGrad = append(mc.KeepInputGrad, flags>>j&1 == 1)
		}
		for i := 5; i+4 < len(data); i += 5 {
			c := &mc.Branches[int(data[i])%k]
			if c.Len() >= 6 {
				continue
			}
			a := int64(data[i+1]%8 + 1)
			c.Stages = append(c.Stages, chainplan.Stage{FwdTime: float64(data[i+2] % 5), BwdTime: float64(data[i+3] % 5),
				OutBytes: a, SavedBytes: a + int64(data[i+4]%5), FwdTmpBytes: int64(data[i+4] % 3), BwdTmpBytes: int64(data[i+4] / 3 % 3)})
		}
		b := int64(budget%300) + 1
		for _, m := range []Method{Best, DP, Linear} {
			p, err := Solve(mc, b, Options{Method: m, Slots: []int64{-1, 12}[flags>>4&1]})
			if err != nil {
				var ie *chainplan.InfeasibleError
				if errors.As(err, &ie) && ie.MinBudgetBytes > b {
					if _, err := Solve(mc, ie.MinBudgetBytes, Options{Method: m, Slots: []int64{-1, 12}[flags>>4&1]}); err != nil {
						t.Fatalf("method %v: smallest budget %d refused: %v", m, ie.MinBudgetBytes, err)
					}
					continue
				}
				if m == Linear && errors.Is(err, chainplan.ErrUnsupported) {
					continue // towers without stages
				}
				t.Fatalf("method %v budget %d: %v", m, b, err)
			}
			r := simulate.RunMulti(mc, p.Sequence, b)
			if !r.Valid || r.Makespan != p.Makespan || r.Peak != p.PeakBytes {
				t.Fatalf("method %v plan does not replay: %v %+v", m, r.Err(), p)
			}
		}
	})
}
