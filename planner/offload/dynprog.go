package offload

import "math"

// This file is DYNPROG, Algorithm 5 of the thesis (spec §3.4): the dynamic program over
// ordered, no-wait offloading schedules without recomputation in the model of fractional
// communications (O.7''). For each stage i = 1..L+1 it decides whether to offload ā_{i−1},
// the input of stage i, over the states (A, Δ_F, Δ_B) in whole memory units.

// dynState is one state of Algorithm 5 at stage i.
type dynState struct {
	a, dF, dB int64
}

type dynEntry struct {
	dynState
	val  float64
	prev int32 // index of the predecessor in the previous stage
	off  bool  // ā_{i−1} offloaded on the way in
}

func pos(x int64) int64 { return max(x, 0) }

// table runs Algorithm 5 and returns the offload decisions of the best end state
// (off[ℓ] for ā_ℓ, ℓ = 0..L) and its value; ok is false when no state survives.
// With cheap, the junction is the synchronized ε_G = (Δ_F⁺+Δ_B⁺)/β of L1965 and negative
// backlogs are clipped at 0; otherwise it is the full ε_G of (3.16)/(3.17).
func (d *dynChain) table(cheap bool) (off []bool, value float64, ok bool) {
	n := d.n
	stages := make([][]dynEntry, n+2)
	stages[1] = []dynEntry{{}}
	kept := 1.0 // the states of the stages before i
	for i := 1; i <= n; i++ {
		index := make(map[dynState]int32, len(stages[i]))
		var next []dynEntry
		aa := d.abar[i-1]
		mF := d.oF[i] + d.abar[i]
		mB := d.oB[i] + d.abar[i] + d.delta[i] + d.delta[i-1]
		relax := func(s dynState, val float64, prev int32, isOff bool) {
			if cheap {
				s.dF, s.dB = pos(s.dF), pos(s.dB)
			}
			if j, seen := index[s]; seen {
				// Ties keep the first entry, reached by keeping (tried first).
				if val < next[j].val {
					next[j] = dynEntry{s, val, prev, isOff}
				}
				return
			}
			// The states are counted before they are stored: the DP keeps every stage's
			// for the backtrack, which the limit bounds (limits.go).
			if kept+float64(len(next)+1)*dynStageFactor > d.maxStates {
				d.over = d.statesError(kept + float64(len(next)+1)*dynStageFactor)
				return
			}
			index[s] = int32(len(next))
			next = append(next, dynEntry{s, val, prev, isOff})
		}
		for j, e := range stages[i] {
			// (3.8), (3.9): ā_{i−1} must stay resident during F_i and B_i.
			if mF > d.m-e.a-aa || mB > d.m-e.a-aa {
				continue
			}
			mf := e.a + pos(e.dF) + aa // (3.4)
			mb := e.a + pos(e.dB) + aa // (3.5)
			excF := pos(mF - d.m + mf) // ε_F·β (3.6), idle before F_i
			excB := pos(mB - d.m + mb) // ε_B·β (3.7), idle after B_i
			val := e.val + d.uF[i] + d.uB[i] + float64(excF+excB)/d.beta
			dF := excF + d.capF[i]
			dB := excB + d.capB[i]
			// Keep first: ties prefer no transfer (pitfall 16).
			relax(dynState{e.a + aa, e.dF - dF, e.dB - dB}, val, int32(j), false)             // (3.13)-(3.15)
			relax(dynState{e.a, pos(e.dF) + aa - dF, pos(e.dB-dB) + aa}, val, int32(j), true) // (3.10)-(3.12)
			if d.over != nil {
				return nil, math.Inf(1), false
			}
		}
		stages[i+1] = next
		kept += float64(len(next))
	}
	best, bestVal := -1, math.Inf(1)
	for j, e := range stages[n+1] {
		g := d.junctionCheap(e.dynState)
		if !cheap {
			g = d.junctionFull(e.dynState)
		}
		v := e.val + g
		// Ties prefer the state that keeps more on the GPU (fewer transfers).
		if v < bestVal || v == bestVal && best >= 0 && e.a > stages[n+1][best].a {
			best, bestVal = j, v
		}
	}
	if best < 0 {
		return nil, math.Inf(1), false
	}
	off = make([]bool, n)
	j := int32(best)
	for i := n + 1; i >= 2; i-- {
		e := stages[i][j]
		off[i-2] = e.off
		j = e.prev
	}
	return off, bestVal, true
}

// junctionCheap is the synchronized idle time at the loss (L1965).
func (d *dynChain) junctionCheap(s dynState) float64 {
	return float64(pos(s.dF)+pos(s.dB)) / d.beta
}

// junctionFull is ε_G of (3.16)/(3.17) (spec §3.4.3), read at the end state L+2.
func (d *dynChain) junctionFull(s dynState) float64 {
	switch {
	case s.dF <= 0 && s.dB <= 0:
		return 0
	case s.dF > 0 && s.dB > 0:
		return float64(s.dF+s.dB) / d.beta
	case s.dF > 0: // offloading continues into the backward phase (3.16)
		return d.spill(s, s.dF, s.dB, d.uB, func(j int) int64 { return d.delta[j-1] + d.delta[j] + d.oB[j] })
	default: // prefetching starts during the forward phase (3.17)
		return d.spill(s, s.dB, s.dF, d.uF, func(j int) int64 { return d.oF[j] })
	}
}

// spill is ε_G when one phase's transfers (over bytes) run past the loss into the other
// phase, which offers room bytes of link time (−room ≥ 0) before they collide: the
// transfer time left, or the time to wait until the stages from the end, whose durations
// are u and whose own memory need(j) is, have freed enough for the overflow to fit in m.
func (d *dynChain) spill(s dynState, over, room int64, u []float64, need func(j int) int64) float64 {
	n, beta, m := d.n, d.beta, float64(d.m)
	avail := float64(-room) / beta
	held := float64(s.a + over + d.abar[n])
	eps := float64(over)/beta - avail
	var sum float64 // Σ_{i=j+1}^{L+1} u(i)
	var later int64
	for j := n; j >= 1; j-- {
		if j < n {
			sum += u[j+1]
			later += d.abar[j+1]
		}
		if sum >= avail {
			break
		}
		eps = max(eps, (float64(need(j)-later)-m+held)/beta-sum)
	}
	return max(eps, 0)
}
