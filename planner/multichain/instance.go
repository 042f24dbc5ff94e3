package multichain

import (
	"github.com/chainplan/chainplan"
)

// instance is the problem of the dynamic program (spec §5-§6): K branches of lengths L_j,
// per-stage times of the AD model, the loss time, and b⁰, in unit slots. Branches and
// positions are 0-based here (branch j of the spec is index j−1); stage q of branch j is
// uF[j][q] for q = 1..L_j, index 0 unused.
//
// keepInputs selects the model of the executors: a tower input belongs to the caller and
// stays in memory for the whole step, so B_1 replaces δ_1 by δ_0 without consuming a_0,
// and the loss adds δ_0 beside the input of a branch without stages. The thesis's model
// (keepInputs false) frees a_0 with B_1 and turns a_0 into δ_0 at the loss; its slot then
// serves the branches whose backward comes later, which a running model cannot give
// (docs/multichain.md, "The inputs stay").
type instance struct {
	L          []int
	uF         [][]float64 // u_F(j, q): one forward
	uB         [][]float64 // u_B(j, q): one backward of the AD model, B_q consuming a_{q−1} and δ_q
	uL         float64     // the loss
	b0         []bool      // keep δ_0 at the end
	keepInputs bool        // the inputs stay (above)
}

// uniformInstance is the homogeneous problem of Theorem 3: every F costs uF, every B uB,
// the loss uL.
func uniformInstance(l []int, b0 []bool, uF, uB, uL float64) *instance {
	in := &instance{L: append([]int(nil), l...), uL: uL, b0: append([]bool(nil), b0...)}
	if in.b0 == nil {
		in.b0 = make([]bool, len(l))
	}
	for _, n := range l {
		f, b := make([]float64, n+1), make([]float64, n+1)
		for q := 1; q <= n; q++ {
			f[q], b[q] = uF, uB
		}
		in.uF, in.uB = append(in.uF, f), append(in.uB, b)
	}
	return in
}

// instanceOf is the instance of H0 (spec §6): u_F(j, q) is the stage's forward time and
// u_B(j, q) its forward plus backward time, because each B of the AD model runs as F_all
// then B on the real tower (spec §10.14); the loss costs its forward plus its backward.
// Then the dynamic program's value is the real makespan of the plan it emits.
func instanceOf(mc *chainplan.MultiChain) *instance {
	in := &instance{uL: mc.Loss.FwdTime + mc.Loss.BwdTime}
	for j := range mc.Branches {
		c := &mc.Branches[j]
		n := c.Len()
		f, b := make([]float64, n+1), make([]float64, n+1)
		for q := 1; q <= n; q++ {
			s := c.Stages[q-1]
			f[q], b[q] = s.FwdTime, s.FwdTime+s.BwdTime
		}
		in.L = append(in.L, n)
		in.uF, in.uB = append(in.uF, f), append(in.uB, b)
		in.b0 = append(in.b0, mc.Keep(j+1))
	}
	in.keepInputs = true
	return in
}

// k returns the number of branches.
func (in *instance) k() int { return len(in.L) }

// sumL returns ΣL_j.
func (in *instance) sumL() int {
	s := 0
	for _, n := range in.L {
		s += n
	}
	return s
}

// stay returns 1 when the input of a branch with r remaining of its l stages stays in
// memory once the branch is done (keepInputs, and the branch untouched by the decisions
// above the state: r = l), else 0.
func (in *instance) stay(r, l int) int {
	if in.keepInputs && r == l {
		return 1
	}
	return 0
}

// bare returns the number of branches without stages when the inputs stay (their loss
// gradient δ_0 comes beside the input), else 0.
func (in *instance) bare() int {
	if !in.keepInputs {
		return 0
	}
	z := 0
	for _, n := range in.L {
		if n == 0 {
			z++
		}
	}
	return z
}

// storeAll returns the makespan without recomputation, Σ(u_F+u_B) + u_L: the value of
// every state once the slots reach K + ΣL.
func (in *instance) storeAll() float64 {
	t := in.uL
	for j := range in.L {
		for q := 1; q <= in.L[j]; q++ {
			t += in.uF[j][q] + in.uB[j][q]
		}
	}
	return t
}
