package pofo

import "math"

// This file is the backward phase of POFO, C_Δ(s, t, A, Δ) of spec §4.8: the optimal time
// to process stages s..t with rematerialization only, starting with I_s and δ_t stored and
// ending with δ_{s−1}, while Δ bytes of lower stages must be prefetched by the end. A is
// all stored data, I_s included. With Δ = 0 it is the persistent DP C_MP(s, t, M − A) of
// spec §2 (the reduction check of §4.8).

// cdRB, cdRFall and cdRF0 are the requirements of spec §4.8 for C_Δ(s, t, ·): the backward
// B_s, the forward F_s^all with δ_t stored, and RF0(k) for the F^ck/F^∅ run (every
// recomputation in the backward phase carries δ_t, pitfall 3).
func (tb *table) cdRB(s int) float64 {
	c := tb.c
	return c.abar[s] + c.delta(s) + c.delta(s-1) + c.oB[s]
}

func (tb *table) cdRFall(s, t int) float64 {
	c := tb.c
	return c.delta(t) + c.abar[s] + c.oF[s]
}

func (tb *table) cdRF0(s, t, k int) float64 {
	c := tb.c
	if k == s {
		return c.delta(t) + c.a[s] + c.oF[s]
	}
	return c.delta(t) + c.a[k-1] + c.a[k] + c.oF[k]
}

// cdCase1Delta and cdCase1Value are the F_s^all branch of C_Δ (L2258-2276): F_s^all, the
// sub-chain s+1..t on A + ā_s, then B_s. B_s runs last, so it absorbs the backlog first
// (Δ_1), then the sub-chain (Δ_2); ε_B is idle after B_s, ε_F idle before F_s.
// cdCase1Delta returns the Δ of the sub-chain, cdCase1Value the branch's value given the
// sub-chain's.
func (tb *table) cdCase1Delta(s int, a, d float64) (d1, excB float64) {
	excB = max(tb.cdRB(s)-tb.m+a+d, 0)
	return tb.q(d - tb.c.uB[s]*tb.beta - excB), excB
}

func (tb *table) cdCase1Value(s, t int, a, d1, excB, sub float64) float64 {
	c := tb.c
	d2 := max(d1-sub*tb.beta, 0)
	excF := max(tb.cdRFall(s, t)-tb.m+a+d2, 0)
	return c.uF[s] + sub + c.uB[s] + (excF+excB)/tb.beta
}

// cdValue returns C_Δ(s, t, A, Δ) (spec §4.8, combination (4.4)), memoized.
//
// A state whose stored data and backlog exceed M cannot end the sub-chain: it is
// infeasible. In exact arithmetic the recurrences never reach one (checked on 20,000
// random chains while writing this package); the rounding up of Δ can, and this keeps
// every C_Δ lookup of the discretized table on its grid.
func (tb *table) cdValue(s, t int, a, d float64, run bool) float64 {
	if !tb.fits(a+d, tb.m) {
		return math.Inf(1)
	}
	if e, ok := tb.cd.get(s, t, run, a, d); ok {
		return e.v
	}
	e := tb.cdCompute(s, t, a, d, run)
	tb.cd.put(s, t, run, a, d, e)
	return e.v
}

// cdChoice returns the choice of C_Δ(s, t, A, Δ).
func (tb *table) cdChoice(s, t int, a, d float64, run bool) int32 {
	if !tb.fits(a+d, tb.m) {
		return cdInfeasible
	}
	if e, ok := tb.cd.get(s, t, run, a, d); ok {
		return e.ch
	}
	return tb.cdCompute(s, t, a, d, run).ch
}

func (tb *table) cdCompute(s, t int, a, d float64, run bool) cdEntry {
	best := tb.cdStart(s, t, a, d, run)
	if s == t || !tb.cdCase2OK(s, t, a) {
		return best
	}
	c := tb.c
	fmax, sumF := math.Inf(-1), 0.0
	for sp := s; sp < t; sp++ {
		fmax, sumF = tb.cdRun(s, t, sp, fmax, sumF)
		// F_s … F_{s'} run twice: value ≥ Σ_{k=s}^{s'} u_F(k) + Σ_{k=s}^{t} (u_F+u_B).
		if !beats(sumF+tb.seq2[t]-tb.seq2[s-1], best.v) {
			break
		}
		if !beats(sumF+tb.cdLB(s, sp, a)+tb.cdLB(sp+1, t, a+tb.qa(c.a[sp])), best.v) {
			continue
		}
		v := tb.cdCase2Value(s, t, sp, a, d, fmax, sumF, run)
		if v < best.v {
			best = cdEntry{v: v, ch: int32(sp)}
		}
	}
	return best
}

// cdStart computes the base case (s = t) or case 1 (F_s^all) of C_Δ(s, t, A, Δ); case 2
// (F_s^ck, F^∅ …, for every s′) remains for s < t when cdCase2OK, which depends on A alone.
func (tb *table) cdStart(s, t int, a, d float64, run bool) cdEntry {
	c := tb.c
	inf := cdEntry{v: math.Inf(1), ch: cdInfeasible}
	avail := tb.m - a
	rb, rfall := tb.cdRB(s), tb.cdRFall(s, t)
	if s == t {
		if !tb.fits(rfall, avail) || !tb.fits(rb, avail) {
			return inf
		}
		// Lemma 8 (prefetch case) over [F_s^all, B_s]: the F term is measured to the end
		// of the sequence, hence − β·u_B(s) (pitfall 9).
		exc := max(rfall-tb.beta*c.uB[s]-tb.m+a+d, rb-tb.m+a+d, 0)
		return cdEntry{v: c.uF[s] + c.uB[s] + exc/tb.beta, ch: cdBase}
	}
	best := inf
	if tb.fits(rfall, avail) && tb.fits(rb, avail) {
		d1, excB := tb.cdCase1Delta(s, a, d)
		if sub := tb.cdValue(s+1, t, a+tb.incAbar(s+1, run), d1, !tb.continuous); !math.IsInf(sub, 1) {
			best = cdEntry{v: tb.cdCase1Value(s, t, a, d1, excB, sub), ch: cdAll}
		}
	}
	return best
}

// cdCase2OK reports whether case 2 of C_Δ(s, t, A, ·) is feasible: every F of the run must
// fit; like rotor's m_∅ the check stops at t−1, since F_t always runs as F_all inside the
// sub-chain (spec §8, L2294).
func (tb *table) cdCase2OK(s, t int, a float64) bool {
	for k := s; k < t; k++ {
		if !tb.fits(tb.cdRF0(s, t, k), tb.m-a) {
			return false
		}
	}
	return true
}

// cdRun advances the running max of RF0(k) − β·Σ_{h=k+1}^{s'} u_F(h) over k = s..s' and the
// forward time Σ_{k=s}^{s'} u_F(k) from s'−1 to s' (Lemma 8, prefetch case: distances to
// the end of the run, pitfall 9).
func (tb *table) cdRun(s, t, sp int, fmax, sumF float64) (float64, float64) {
	return max(fmax-tb.beta*tb.c.uF[sp], tb.cdRF0(s, t, sp)), sumF + tb.c.uF[sp]
}

// cdCase2Deltas returns the values and Δ arguments of the two sub-chains of case 2 for s':
// C_Δ(s, s', A, Δ) runs last in time and absorbs the backlog first (pitfall 10), then
// C_Δ(s'+1, t, A + a_{s'}, Δ_2). The first keeps the run state of the call (same A, same
// s); the second starts afresh after the plain a_{s'}.
func (tb *table) cdCase2Deltas(s, t, sp int, a, d float64, run bool) (c2, d2, c1 float64) {
	c2 = tb.cdValue(s, sp, a, d, run)
	if math.IsInf(c2, 1) {
		return c2, 0, c2
	}
	d2 = tb.q(d - c2*tb.beta)
	c1 = tb.cdValue(sp+1, t, a+tb.qa(tb.c.a[sp]), d2, false)
	return c2, d2, c1
}

func (tb *table) cdCase2Value(s, t, sp int, a, d, fmax, sumF float64, run bool) float64 {
	c2, d2, c1 := tb.cdCase2Deltas(s, t, sp, a, d, run)
	if math.IsInf(c2, 1) || math.IsInf(c1, 1) {
		return math.Inf(1)
	}
	d3 := max(d2-c1*tb.beta, 0)
	excF := max(fmax-tb.m+a+d3, 0)
	return sumF + c1 + c2 + excF/tb.beta
}
