package pofo

import (
	"fmt"
	"math"

	"github.com/chainplan/chainplan"
)

// schedule rebuilds the POFO schedule from the memoized choices (spec §4.11), repeating the
// arithmetic of the table exactly (pitfall 17): the compute sequence in time order, each
// offloaded segment input offloaded right after the operation that produced it and
// prefetched right before the first operation of its segment's backward (pitfall 25).
// exact gives the sizes in bytes of the transfers. It panics if the table has no finite
// value at the start, which the caller checks first.
func (tb *table) schedule(exact *chain) Schedule {
	var ops []chainplan.Op
	var offs, pres []chainplan.Transfer
	emit := func(kind chainplan.OpKind, stage int) { ops = append(ops, chainplan.Op{Kind: kind, Stage: stage}) }
	recCD := func(s, t int, a, d float64, run bool) { ops = tb.cdOps(ops, s, t, a, d, run) }
	var recOC func(st ocState)
	recOC = func(st ocState) {
		e, ok := tb.oc.get(st)
		if !ok {
			e = tb.ocCompute(st)
		}
		if math.IsInf(e.v, 1) {
			panic(fmt.Sprintf("pofo: backtrack reached an infeasible state %+v", st))
		}
		s := st.s
		if e.ch.kind == ocLoss {
			emit(chainplan.FAll, s)
			emit(chainplan.B, s)
			return
		}
		x := tensorOf(s-1, st.x == 1)
		size := exact.a[s-1]
		if x.Saved {
			size = exact.abar[s-1]
		}
		v := int(e.ch.v)
		if v == 1 {
			offs = append(offs, chainplan.Transfer{Dir: chainplan.TransferOffload, Tensor: x, Bytes: int64(size), Anchor: len(ops) - 1})
		}
		prefetch := func() {
			if v == 1 {
				pres = append(pres, chainplan.Transfer{Dir: chainplan.TransferPrefetch, Tensor: x, Bytes: int64(size), Anchor: len(ops)})
			}
		}
		if e.ch.kind == ocAll {
			emit(chainplan.FAll, s)
			_, nx := tb.ocCase1(st, v)
			recOC(nx)
			prefetch()
			emit(chainplan.B, s)
			return
		}
		t := int(e.ch.t)
		emit(chainplan.FCk, s)
		for k := s + 1; k <= t; k++ {
			emit(chainplan.FNone, k)
		}
		run, sumF := math.Inf(-1), 0.0
		for k := s; k <= t; k++ {
			run, sumF = tb.ocRun(s, k, run, sumF)
		}
		_, _, capF, capB := tb.ocSegment(st, tb.input(st), t, run, sumF)
		nx := tb.ocCase2(st, tb.input(st), t, v, capF, capB)
		recOC(nx)
		prefetch()
		recCD(s, t, st.a+tb.keep(st), st.dB, st.savedInput() && !tb.continuous)
	}
	recOC(ocState{x: 0, s: 1})
	return Schedule{Compute: ops, Transfers: append(offs, pres...), SyncAtLoss: true}
}

// cdSequence returns the operations of C_Δ(s, t, A, Δ) called without a run (REC_CΔ of
// spec §4.11).
func (tb *table) cdSequence(s, t int, a, d float64) []chainplan.Op {
	return tb.cdOps(nil, s, t, a, d, false)
}

// cdOps appends the operations of C_Δ(s, t, A, Δ) to ops, following the memoized choices
// with the arithmetic of the table.
func (tb *table) cdOps(ops []chainplan.Op, s, t int, a, d float64, run bool) []chainplan.Op {
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
			rec(s+1, t, a+tb.incAbar(s+1, run), d1, !tb.continuous)
			emit(chainplan.B, s)
		default:
			sp := int(ch)
			emit(chainplan.FCk, s)
			for k := s + 1; k <= sp; k++ {
				emit(chainplan.FNone, k)
			}
			_, d2, _ := tb.cdCase2Deltas(s, t, sp, a, d, run)
			rec(sp+1, t, a+tb.qa(tb.c.a[sp]), d2, false)
			rec(s, sp, a, d, run)
		}
	}
	rec(s, t, a, d, run)
	return ops
}
