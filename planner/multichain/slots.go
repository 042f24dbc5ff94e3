package multichain

import (
	"github.com/chainplan/chainplan"
)

// slotModel is H0's conversion of a bundle to the uniform-size model (spec §9.2): one slot
// of UnitBytes, the largest activation of any tower (inputs included), so that every value
// the slot model counts fits its slot; and a reserve of ReserveBytes for what the slot model
// leaves out, the transients of each operation:
//
//	R = max( max_{j,q} max( a_q + o_F(q),  ā_q + o_F(q),  ā_q + a_{q−1} + o_B(q) ),
//	         loss.fwd_tmp_bytes,  Σ_j a_{L_j} + loss.bwd_tmp_bytes )
//
// F_none adds its output and o_F to slots already counted; F_ck's output is a slot; each B
// of the AD model runs as F_all (ā_q and o_F on top) then B (ā_q, δ_{q−1} and o_B on top);
// the loss adds its temporaries, and its backward the K output gradients before the
// outputs go. A plan that keeps m slots thus never needs more than m·s + R bytes.
type slotModel struct {
	UnitBytes, ReserveBytes int64
}

func slotModelOf(mc *chainplan.MultiChain) slotModel {
	var s, r, outs int64 = 1, mc.Loss.FwdTmpBytes, 0
	for j := range mc.Branches {
		c := &mc.Branches[j]
		s = max(s, c.InputBytes)
		prev := c.InputBytes
		for _, st := range c.Stages {
			s = max(s, st.OutBytes)
			r = max(r, st.OutBytes+st.FwdTmpBytes, st.SavedBytes+st.FwdTmpBytes, st.SavedBytes+prev+st.BwdTmpBytes)
			prev = st.OutBytes
		}
		outs += prev // a_{L_j}, the input itself for a tower without stages
	}
	return slotModel{UnitBytes: s, ReserveBytes: max(r, outs+mc.Loss.BwdTmpBytes)}
}

// slots returns m = floor((budget − R) / s), or −1 when the budget does not even cover R.
func (sm slotModel) slots(budgetBytes int64) int64 {
	if budgetBytes < sm.ReserveBytes {
		return -1
	}
	return (budgetBytes - sm.ReserveBytes) / sm.UnitBytes
}

// budget returns the smallest budget with m slots, m·s + R.
func (sm slotModel) budget(m int) int64 { return int64(m)*sm.UnitBytes + sm.ReserveBytes }
