package units

import "math"

// This file is the backward phase of POFO, C_Δ(s, t, A, Δ) of spec §4.8: the optimal time
// to process stages s..t with rematerialization only, starting with I_s and δ_t stored and
// ending with δ_{s−1}, while Δ bytes of lower stages must be prefetched by the end. A is
// all stored data, I_s included. With Δ = 0 it is the persistent DP C_MP(s, t, M − A) of
// spec §2 (the reduction check of §4.8).

// Choices of C_Δ.
const (
	cdInfeasible int16 = -2
	cdBase       int16 = -1
	cdAll        int16 = 0
	// A positive code s' is case 2: F_s^ck F_{s+1}^∅ … F_{s'}^∅, keep a_{s'}.
)

// cdRB, cdRFall and cdRF0 are the requirements of spec §4.8 for C_Δ(s, t, ·): the backward
// B_s, the forward F_s^all with δ_t stored, and RF0(k) for the F^ck/F^∅ run (every
// recomputation in the backward phase carries δ_t, pitfall 3).
func (tb *Table) cdRB(s int) float64 {
	c := tb.C
	return c.ABar[s] + c.Delta(s) + c.Delta(s-1) + c.OB[s]
}

func (tb *Table) cdRFall(s, t int) float64 {
	c := tb.C
	return c.Delta(t) + c.ABar[s] + c.OF[s]
}

func (tb *Table) cdRF0(s, t, k int) float64 {
	c := tb.C
	if k == s {
		return c.Delta(t) + c.A[s] + c.OF[s]
	}
	return c.Delta(t) + c.A[k-1] + c.A[k] + c.OF[k]
}

// cdCase1Delta and cdCase1Value are the F_s^all branch of C_Δ (L2258-2276): F_s^all, the
// sub-chain s+1..t on A + ā_s, then B_s. B_s runs last, so it absorbs the backlog first
// (Δ_1), then the sub-chain (Δ_2); ε_B is idle after B_s, ε_F idle before F_s.
// cdCase1Delta returns the Δ of the sub-chain, cdCase1Value the branch's value given the
// sub-chain's.
func (tb *Table) cdCase1Delta(s int, a, d float64) (d1, excB float64) {
	excB = max(tb.cdRB(s)-tb.M+a+d, 0)
	return tb.Q(d - tb.C.UB[s]*tb.Beta - excB), excB
}

func (tb *Table) cdCase1Value(s, t int, a, d1, excB, sub float64) float64 {
	c := tb.C
	d2 := max(d1-sub*tb.Beta, 0)
	excF := max(tb.cdRFall(s, t)-tb.M+a+d2, 0)
	return c.UF[s] + sub + c.UB[s] + (excF+excB)/tb.Beta
}

// CD returns C_Δ(s, t, A, Δ) (spec §4.8, combination (4.4)), memoized. run says that the
// saved activation kept last continued a run of IncAbar.
//
// A state whose stored data and backlog exceed M cannot end the sub-chain: it is
// infeasible. In exact arithmetic the recurrences never reach one (checked on 20,000
// random chains while writing this package); the rounding up of Δ can, and this keeps
// every C_Δ lookup of the discretized table on its grid.
//
// A table that would pass its memory limit (Overflow) answers +Inf from then on, which
// ends the recursion at once; its caller refuses the request.
func (tb *Table) CD(s, t int, a, d float64, run bool) float64 {
	if tb.over || !tb.Fits(a+d, tb.M) {
		return math.Inf(1)
	}
	k, p, i := tb.cdAt(s, t, run, a, d)
	if e, ok := tb.cd.Get(k, p, i); ok {
		return e.V
	}
	e := tb.cdCompute(s, t, a, d, run)
	if tb.over || !tb.reserve(p, i) {
		return math.Inf(1)
	}
	tb.cd.Put(k, p, i, e)
	return e.V
}

// cdChoice returns the choice of C_Δ(s, t, A, Δ).
func (tb *Table) cdChoice(s, t int, a, d float64, run bool) int16 {
	if !tb.Fits(a+d, tb.M) {
		return cdInfeasible
	}
	if e, ok := tb.cd.Get(tb.cdAt(s, t, run, a, d)); ok {
		return e.Ch
	}
	return tb.cdCompute(s, t, a, d, run).Ch
}

func (tb *Table) cdCompute(s, t int, a, d float64, run bool) Entry[int16] {
	best := tb.cdStart(s, t, a, d, run)
	if s == t || !tb.cdCase2OK(s, t, a) {
		return best
	}
	c := tb.C
	fmax, sumF := math.Inf(-1), 0.0
	for sp := s; sp < t; sp++ {
		fmax, sumF = tb.cdRun(s, t, sp, fmax, sumF)
		// F_s … F_{s'} run twice: value ≥ Σ_{k=s}^{s'} u_F(k) + Σ_{k=s}^{t} (u_F+u_B).
		if !Beats(sumF+tb.seq2[t]-tb.seq2[s-1], best.V) {
			break
		}
		if !Beats(sumF+tb.CDLB(s, sp, a)+tb.CDLB(sp+1, t, a+tb.QA(c.A[sp])), best.V) {
			continue
		}
		v := tb.cdCase2Value(s, t, sp, a, d, fmax, sumF, run)
		if v < best.V {
			best = Entry[int16]{V: v, Ch: int16(sp)}
		}
	}
	return best
}

// cdStart computes the base case (s = t) or case 1 (F_s^all) of C_Δ(s, t, A, Δ); case 2
// (F_s^ck, F^∅ …, for every s′) remains for s < t when cdCase2OK, which depends on A alone.
func (tb *Table) cdStart(s, t int, a, d float64, run bool) Entry[int16] {
	c := tb.C
	inf := Entry[int16]{V: math.Inf(1), Ch: cdInfeasible}
	avail := tb.M - a
	rb, rfall := tb.cdRB(s), tb.cdRFall(s, t)
	if s == t {
		if !tb.Fits(rfall, avail) || !tb.Fits(rb, avail) {
			return inf
		}
		// Lemma 8 (prefetch case) over [F_s^all, B_s]: the F term is measured to the end
		// of the sequence, hence − β·u_B(s) (pitfall 9).
		exc := max(rfall-tb.Beta*c.UB[s]-tb.M+a+d, rb-tb.M+a+d, 0)
		return Entry[int16]{V: c.UF[s] + c.UB[s] + exc/tb.Beta, Ch: cdBase}
	}
	best := inf
	if tb.Fits(rfall, avail) && tb.Fits(rb, avail) {
		d1, excB := tb.cdCase1Delta(s, a, d)
		if sub := tb.CD(s+1, t, a+tb.IncAbar(s+1, run), d1, !tb.Continuous); !math.IsInf(sub, 1) {
			best = Entry[int16]{V: tb.cdCase1Value(s, t, a, d1, excB, sub), Ch: cdAll}
		}
	}
	return best
}

// cdCase2OK reports whether case 2 of C_Δ(s, t, A, ·) is feasible: every F of the run must
// fit; like rotor's m_∅ the check stops at t−1, since F_t always runs as F_all inside the
// sub-chain (spec §8, L2294).
func (tb *Table) cdCase2OK(s, t int, a float64) bool {
	for k := s; k < t; k++ {
		if !tb.Fits(tb.cdRF0(s, t, k), tb.M-a) {
			return false
		}
	}
	return true
}

// cdRun advances the running max of RF0(k) − β·Σ_{h=k+1}^{s'} u_F(h) over k = s..s' and the
// forward time Σ_{k=s}^{s'} u_F(k) from s'−1 to s' (Lemma 8, prefetch case: distances to
// the end of the run, pitfall 9).
func (tb *Table) cdRun(s, t, sp int, fmax, sumF float64) (float64, float64) {
	return max(fmax-tb.Beta*tb.C.UF[sp], tb.cdRF0(s, t, sp)), sumF + tb.C.UF[sp]
}

// cdCase2Deltas returns the values and Δ arguments of the two sub-chains of case 2 for s':
// C_Δ(s, s', A, Δ) runs last in time and absorbs the backlog first (pitfall 10), then
// C_Δ(s'+1, t, A + a_{s'}, Δ_2). The first keeps the run state of the call (same A, same
// s); the second starts afresh after the plain a_{s'}.
func (tb *Table) cdCase2Deltas(s, t, sp int, a, d float64, run bool) (c2, d2, c1 float64) {
	c2 = tb.CD(s, sp, a, d, run)
	if math.IsInf(c2, 1) {
		return c2, 0, c2
	}
	d2 = tb.Q(d - c2*tb.Beta)
	c1 = tb.CD(sp+1, t, a+tb.QA(tb.C.A[sp]), d2, false)
	return c2, d2, c1
}

func (tb *Table) cdCase2Value(s, t, sp int, a, d, fmax, sumF float64, run bool) float64 {
	c2, d2, c1 := tb.cdCase2Deltas(s, t, sp, a, d, run)
	if math.IsInf(c2, 1) || math.IsInf(c1, 1) {
		return math.Inf(1)
	}
	d3 := max(d2-c1*tb.Beta, 0)
	excF := max(fmax-tb.M+a+d3, 0)
	return sumF + c1 + c2 + excF/tb.Beta
}
