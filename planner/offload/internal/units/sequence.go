package units

import (
	"fmt"

	"github.com/chainplan/chainplan"
)

// CDSequence returns the operations of C_Δ(s, t, A, Δ) called without a run (REC_CΔ of
// spec §4.11).
func (tb *Table) CDSequence(s, t int, a, d float64) []chainplan.Op {
	return tb.CDOps(nil, s, t, a, d, false)
}

// CDOps appends the operations of C_Δ(s, t, A, Δ) to ops, following the memoized choices
// with the arithmetic of the table (spec §4.11, pitfall 17). It panics if it reaches an
// infeasible state, which the caller rules out by checking CD first.
func (tb *Table) CDOps(ops []chainplan.Op, s, t int, a, d float64, run bool) []chainplan.Op {
	emit := func(kind chainplan.OpKind, stage int) { ops = append(ops, chainplan.Op{Kind: kind, Stage: stage}) }
	var rec func(s, t int, a, d float64, run bool)
	rec = func(s, t int, a, d float64, run bool) {
		ch := tb.cdChoice(s, t, a, d, run)
		switch {
		case ch == cdInfeasible:
			panic(fmt.Sprintf("pofo: backtrack reached an infeasible C_Δ(%d, %d, %g, %g)", s, t, a, d))
		case ch == cdBase:
			emit(chainplan.FAll, s)
			emit(chainplan.B, s)
		case ch == cdAll:
			emit(chainplan.FAll, s)
			d1, _ := tb.cdCase1Delta(s, a, d)
			rec(s+1, t, a+tb.IncAbar(s+1, run), d1, !tb.Continuous)
			emit(chainplan.B, s)
		default:
			sp := int(ch)
			emit(chainplan.FCk, s)
			for k := s + 1; k <= sp; k++ {
				emit(chainplan.FNone, k)
			}
			_, d2, _ := tb.cdCase2Deltas(s, t, sp, a, d, run)
			rec(sp+1, t, a+tb.QA(tb.C.A[sp]), d2, false)
			rec(s, sp, a, d, run)
		}
	}
	rec(s, t, a, d, run)
	return ops
}
