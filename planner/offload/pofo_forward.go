package offload

import (
	"math"

	"github.com/chainplan/chainplan/planner/offload/internal/units"
)

// This file is the forward phase and the loss of POFO: OC_x(s, A, Δ_F, Δ_B) of spec
// §4.5-4.6, the optimal time from the start of stage s to the end of B_s, where the input
// of stage s is I_s^x (a_{s−1} for x = 0, ā_{s−1} for x = 1), A is the memory of the stored
// segment inputs kept on the GPU, Δ_F the bytes of them still to be offloaded after
// F_{s−1} and Δ_B the bytes that must be prefetched before B_{s−1} starts.

// ocState is a forward state. run marks, for x = 1, that the previous F_all segment kept
// its input ā_{s−2}, so that keeping ā_{s−1} continues a run of incAbar (discretized mode
// only).
type ocState struct {
	x      int
	s      int
	run    bool
	a      float64
	dF, dB float64
}

type ocKey struct {
	x      uint8
	run    bool
	s      int32
	a      float64
	dF, dB float64
}

func (st ocState) key() ocKey {
	return ocKey{x: uint8(st.x), run: st.run, s: int32(st.s), a: st.a, dF: st.dF, dB: st.dB}
}

// Kinds of forward choices.
const (
	ocNone = iota // infeasible
	ocAll         // F_s^all, its own segment
	ocCk          // F_s^ck F_{s+1}^∅ … F_t^∅
	ocLoss        // the loss, stage L+1
)

// ocChoice is the decision taken at a forward state: the kind of segment, v = 1 to
// offload its input or 2 to keep it (Table 4.1), and t, the last stage of a ck segment.
type ocChoice struct {
	kind uint8
	v    uint8
	t    uint16
}

type ocEntry = units.Entry[ocChoice]

// input returns I_s^x.
func (tb *table) input(st ocState) float64 {
	if st.x == 1 {
		return tb.C.ABar[st.s-1]
	}
	return tb.C.A[st.s-1]
}

// savedInput reports whether the input of the state is a saved activation ā_{s−1} (a_0 is
// also ā_0), whose keeping can continue a run of incAbar.
func (st ocState) savedInput() bool { return st.x == 1 || st.s == 1 }

// keep returns what keeping the state's input adds to A: through incAbar for a saved
// activation, rounded up to whole units for a plain one.
func (tb *table) keep(st ocState) float64 {
	if st.savedInput() {
		return tb.IncAbar(st.s, st.run)
	}
	return tb.QA(tb.C.A[st.s-1])
}

// next applies Table 4.1: v = 1 offloads the input (it joins both backlogs), v = 2 keeps
// it (A grows). dF and dB are the bytes the link can move during the segment's forward
// (D_F) and backward (D_B), idle included. The offload of I is added before the forward
// capacity is subtracted, since it overlaps the segment's forward; the prefetch of I is
// added after the backward capacity is subtracted, since it must be done before the
// segment's backward starts (pitfall 7).
func (tb *table) next(st ocState, x, s, v int, i, capF, capB float64) ocState {
	out := ocState{x: x, s: s, a: st.a, dF: tb.nextF(st.dF, i, capF, v), dB: tb.nextB(st.dB, i, capB, v)}
	if v == 2 {
		out.a = st.a + tb.keep(st)
		// An F_all segment that keeps a saved input continues (or starts) a run.
		out.run = x == 1 && st.savedInput() && !tb.Continuous
	}
	return out
}

// nextF is the Δ_F column of Table 4.1: the offload of I (v = 1) joins the backlog before
// the segment's forward capacity is subtracted.
func (tb *table) nextF(dF, i, capF float64, v int) float64 {
	if v == 1 {
		return tb.Q(dF + i - capF)
	}
	return tb.Q(dF - capF)
}

// nextB is the Δ_B column of Table 4.1: the prefetch of I (v = 1) joins the backlog after
// the segment's backward capacity is subtracted.
func (tb *table) nextB(dB, i, capB float64, v int) float64 {
	if v == 1 {
		return tb.Q(max(dB-capB, 0) + i)
	}
	return tb.Q(dB - capB)
}

// ocValue returns OC(st), memoized.
func (tb *table) ocValue(st ocState) float64 {
	k, p, i := tb.ocAt(st)
	if e, ok := tb.oc.Get(k, p, i); ok {
		return e.V
	}
	e := tb.ocCompute(st)
	tb.oc.Put(k, p, i, e)
	return e.V
}

// ocCase1 returns, for F_s^all and v, the cost of F_s^all and B_s with their idle times
// (L2205-2211) and the successor state.
func (tb *table) ocCase1(st ocState, v int) (float64, ocState) {
	c, s, i := tb.C, st.s, tb.input(st)
	excF := max(c.RFall(s)-tb.M+st.a+st.dF+i, 0)
	excB := max(c.RB(s)-tb.M+st.a+st.dB+i, 0)
	capF := c.UF[s]*tb.Beta + excF
	capB := c.UB[s]*tb.Beta + excB
	return c.UF[s] + c.UB[s] + (excF+excB)/tb.Beta, tb.next(st, 1, s+1, v, i, capF, capB)
}

// ocRun advances, from t−1 to t, the running max of rF0(s, k) − β·Σ_{h=s}^{k−1} u_F(h)
// (Lemma 8, offload case: distances from the segment's start, pitfall 9) and the forward
// time Σ_{k=s}^{t} u_F(k).
func (tb *table) ocRun(s, t int, run, sumF float64) (float64, float64) {
	return max(run, tb.C.RF0(s, t)-tb.Beta*sumF), sumF + tb.C.UF[t]
}

// ocSegment returns, for the segment F_s^ck … F_t^∅, its forward time with idle (fwd),
// the backward C_Δ of the segment (cb, +Inf when infeasible) and the link capacities
// during both (L2215-2227). The backward always receives A + I: OR.4 brings the input
// back first (pitfall 11).
func (tb *table) ocSegment(st ocState, i float64, t int, run, sumF float64) (fwd, cb, capF, capB float64) {
	excF := max(run-tb.M+st.a+st.dF+i, 0)
	cb = tb.CD(st.s, t, st.a+tb.keep(st), st.dB, st.savedInput() && !tb.Continuous)
	return sumF + excF/tb.Beta, cb, sumF*tb.Beta + excF, cb * tb.Beta
}

// ocCase2 returns the successor of the segment F_s^ck … F_t^∅ for v.
func (tb *table) ocCase2(st ocState, i float64, t, v int, capF, capB float64) ocState {
	return tb.next(st, 0, t+1, v, i, capF, capB)
}

// lossValue is OC at s = L+1 (spec §4.6): the loss input is never offloaded; the link
// finishes the offloads, then the prefetches that B_{L+1} could not hide, while compute
// waits (ε_G).
func (tb *table) lossValue(st ocState) float64 {
	c, s, i := tb.C, st.s, tb.input(st)
	avail := tb.M - st.a
	rF, rB := c.RFall(s), c.RB(s)
	if !tb.Fits(rF+i, avail) || !tb.Fits(rB+i, avail) {
		return math.Inf(1)
	}
	excF := max(rF-tb.M+st.a+st.dF+i, 0)
	excB := max(rB-tb.M+st.a+st.dB+i, 0)
	dF := max(st.dF-c.UF[s]*tb.Beta-excF, 0)
	dB := max(st.dB-c.UB[s]*tb.Beta-excB, 0)
	return c.UF[s] + c.UB[s] + (excF+excB+dF+dB)/tb.Beta
}

// ocCompute returns OC(st) and its choice by (4.3): the best of case 1 and of case 2 for
// every t, candidates tried in a fixed order (case 1, then t = s..L; keep before offload)
// and replaced only by a strictly smaller value.
func (tb *table) ocCompute(st ocState) ocEntry {
	best, keepOK, offOK, more := tb.ocStart(st)
	if !more {
		return best
	}
	run, sumF := math.Inf(-1), 0.0
	for t := st.s; t < tb.C.N; t++ {
		run, sumF = tb.ocRun(st.s, t, run, sumF)
		if tb.ocStep(st, tb.input(st), t, run, sumF, keepOK, offOK, &best) {
			break
		}
	}
	return best
}

// ocStart prunes the state, answers the loss, and tries case 1 (F_s^all). It returns the
// best entry so far and whether case 2 is worth trying, with its feasibility per v.
func (tb *table) ocStart(st ocState) (best ocEntry, keepOK, offOK, more bool) {
	c, s := tb.C, st.s
	i := tb.input(st)
	best = ocEntry{V: math.Inf(1)}
	// The state is real GPU content (spec §4.4, feasibility pruning).
	if !tb.Fits(st.a+st.dF+i, tb.M) || !tb.Fits(st.a+st.dB+i, tb.M) {
		return best, false, false, false
	}
	if s == c.N {
		return ocEntry{V: tb.lossValue(st), Ch: ocChoice{kind: ocLoss}}, false, false, false
	}
	case1, keepOK, offOK := tb.choicesOK(st)
	// Case 1: F_s^all. Keep is tried first: ties prefer no transfer (pitfall 16).
	if case1 {
		for v := 2; v >= 1; v-- {
			if v == 1 && tb.noOffload {
				break
			}
			cost, nx := tb.ocCase1(st, v)
			if !units.Beats(cost+tb.ocLB(1, s+1, nx.a), best.V) {
				continue
			}
			if val := cost + tb.ocValue(nx); val < best.V {
				best = ocEntry{V: val, Ch: ocChoice{kind: ocAll, v: uint8(v)}}
			}
		}
	}
	// Case 2: F_s^ck F_{s+1}^∅ … F_t^∅ for s ≤ t ≤ L (the thesis prints t ≤ L−1; §8, L2219).
	return best, keepOK, offOK, keepOK || offOK
}

// choicesOK returns the feasibility of the choices at a forward state before the loss,
// which depends on x, s and A only: case 1 (F_s^all), and case 2 keeping or offloading the
// input. Case 2 is checked over k ∈ [s, L] (L2227): keeping I needs it beside every F of
// the forward phase; an offloaded I is needed by F_s only.
func (tb *table) choicesOK(st ocState) (case1, keepOK, offOK bool) {
	c, s, i := tb.C, st.s, tb.input(st)
	avail := tb.M - st.a
	case1 = tb.Fits(c.RFall(s)+i, avail) && tb.Fits(c.RB(s)+i, avail)
	keepOK = tb.Fits(c.RF0(s, s)+i, avail) && tb.Fits(tb.tailF0[s]+i, avail)
	offOK = !tb.noOffload && tb.Fits(c.RF0(s, s)+i, avail) && tb.Fits(tb.tailF0[s], avail)
	return case1, keepOK, offOK
}

// ocStep tries the segment s..t of case 2 for both v, given the state's input size i and
// the running max and forward time up to t (ocRun). It returns true when no longer segment can beat best.
func (tb *table) ocStep(st ocState, i float64, t int, run, sumF float64, keepOK, offOK bool, best *ocEntry) bool {
	s := st.s
	// The segment's forward runs twice: value ≥ Σ_{k=s}^{t} u_F(k) + seqFrom[s], which
	// only grows with t.
	if !units.Beats(sumF+tb.seqFrom[s], best.V) {
		return true
	}
	// A cheaper bound before any lookup in the large tables: the smallest values of the
	// segment's backward and of the rest at the A each choice leads to.
	if !units.Beats(sumF+tb.CDLB(s, t, st.a+tb.keep(st))+min(tb.ocLB(0, t+1, st.a), tb.ocLB(0, t+1, st.a+tb.keep(st))), best.V) {
		return false
	}
	fwd, cb, capF, capB := tb.ocSegment(st, i, t, run, sumF)
	if math.IsInf(cb, 1) {
		return false
	}
	for v := 2; v >= 1; v-- {
		if v == 2 && !keepOK || v == 1 && !offOK {
			continue
		}
		nx := tb.ocCase2(st, i, t, v, capF, capB)
		if !units.Beats(fwd+cb+tb.ocLB(0, t+1, nx.a), best.V) {
			continue
		}
		if val := fwd + cb + tb.ocValue(nx); val < best.V {
			*best = ocEntry{V: val, Ch: ocChoice{kind: ocCk, v: uint8(v), t: uint16(t)}}
		}
	}
	return false
}

// solveValue returns POFO = OC_0(1, 0, 0, 0) (spec §4.7).
func (tb *table) solveValue() float64 { return tb.ocValue(ocState{x: 0, s: 1}) }
