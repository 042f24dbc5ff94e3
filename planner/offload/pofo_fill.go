package offload

import (
	"math"

	"github.com/chainplan/chainplan/planner/offload/internal/units"
)

// fill computes every entry of the discretized tables bottom-up: C_Δ by increasing
// sub-chain length (units.Table.FillCD), then OC by decreasing s (an entry only reads
// longer-s OC entries and C_Δ entries). Within a level the entries are independent and are
// split between the available cores (units.Parallel).
func (tb *table) fill() {
	n := tb.C.N
	m := int(tb.M)
	tb.FillCD()
	tb.ocMin = make([][]float64, 2*(n+1))
	oc := &tb.oc
	for s := n; s >= 1; s-- {
		for x := 0; x <= 1; x++ {
			if x == 1 && s == 1 {
				continue // a_0 = ā_0: the first input is plain
			}
			row := make([]float64, m+1)
			for a := range row {
				row[a] = math.Inf(1)
			}
			// The run state exists only for saved inputs (x = 1).
			for _, run := range []bool{false, true}[:1+x] {
				p := tb.ocSlab(ocState{x: x, s: s, run: run})
				oc.Alloc(p)
				units.Parallel(m+1, func(a int) { tb.fillRow(x, s, run, a, oc.Vals[p], oc.Chs[p], row) })
			}
			tb.ocMin[x*(n+1)+s] = row
		}
	}
}

// fillRow computes OC_x(s, A, ·, ·) for one A: case 1 for every state (fillAll, or ocStart
// at the loss), then each t of case 2 for every state still in the race (fillSegments).
// row[A] is lowered to the smallest value.
func (tb *table) fillRow(x, s int, run bool, a int, vals []float64, chs []ocChoice, row []float64) {
	g := tb.Grid
	w := g.W[a]
	base := g.Off2[a]
	var todo []rowState
	if s == tb.C.N {
		for f := 0; f < w; f++ {
			for b := 0; b < w; b++ {
				st := ocState{x: x, s: s, run: run, a: float64(a), dF: float64(f), dB: float64(b)}
				best, _, _, _ := tb.ocStart(st)
				vals[base+f*w+b], chs[base+f*w+b] = best.V, best.Ch
			}
		}
	} else {
		st := ocState{x: x, s: s, run: run, a: float64(a)}
		case1, keepOK, offOK := tb.choicesOK(st)
		todo = tb.fillAll(st, case1, keepOK || offOK, vals, chs)
		if len(todo) > 0 {
			tb.fillSegments(st, todo, keepOK, offOK, vals, chs)
		}
	}
	for j := base; j < base+w*w; j++ {
		row[a] = min(row[a], vals[j])
	}
}

// fillAll is ocStart for every state of one row before the loss (one x, s, run and A; row.dF
// and row.dB unused): the pruning of states whose content exceeds M, then case 1 (F_s^all,
// keep before offload). As in fillSegments, the idle times, link capacities and next
// backlogs depend on Δ_F or on Δ_B alone and are computed once per value, with the
// arithmetic of ocCase1 and next. case1 and case2 say which cases are feasible in the row
// (choicesOK). It returns the states that go on to case 2.
func (tb *table) fillAll(row ocState, case1, case2 bool, vals []float64, chs []ocChoice) []rowState {
	c, g := tb.C, tb.Grid
	s, a, w := row.s, int(row.a), g.W[int(row.a)]
	i, keep := tb.input(row), tb.keep(row)
	aKeep := a + int(keep)
	// A state holds A + Δ + I on the GPU, for Δ_F and Δ_B alike (ocStart's pruning).
	ok := make([]bool, w)
	excF, excB := make([]float64, w), make([]float64, w)
	nf1, nf2, nb1, nb2 := make([]int, w), make([]int, w), make([]int, w), make([]int, w)
	for k := range w {
		d := float64(k)
		ok[k] = tb.Fits(row.a+d+i, tb.M)
		excF[k] = max(c.RFall(s)-tb.M+row.a+d+i, 0)
		excB[k] = max(c.RB(s)-tb.M+row.a+d+i, 0)
		nf1[k], nf2[k] = tb.nextSteps(tb.nextF, a, aKeep, d, i, c.UF[s]*tb.Beta+excF[k])
		nb1[k], nb2[k] = tb.nextSteps(tb.nextB, a, aKeep, d, i, c.UB[s]*tb.Beta+excB[k])
	}
	// Successors: x = 1 at s+1; keeping a saved input continues a run (next).
	saved := row.savedInput() && !tb.Continuous
	next1 := tb.oc.Vals[tb.ocSlab(ocState{x: 1, s: s + 1})]
	next2 := tb.oc.Vals[tb.ocSlab(ocState{x: 1, s: s + 1, run: saved})]
	lb1, lb2 := tb.ocLB(1, s+1, row.a), tb.ocLB(1, s+1, row.a+keep)
	var todo []rowState
	base := g.Off2[a]
	for f := range w {
		for b := range w {
			j := base + f*w + b
			best := ocEntry{V: math.Inf(1)}
			if !ok[f] || !ok[b] {
				vals[j], chs[j] = best.V, best.Ch
				continue
			}
			if case1 {
				cost := c.UF[s] + c.UB[s] + (excF[f]+excB[b])/tb.Beta
				if nf2[f] >= 0 && nb2[b] >= 0 && units.Beats(cost+lb2, best.V) {
					if v := cost + next2[g.Off2[aKeep]+nf2[f]*g.W[aKeep]+nb2[b]]; v < best.V {
						best = ocEntry{V: v, Ch: ocChoice{kind: ocAll, v: 2}}
					}
				}
				if !tb.noOffload && nf1[f] >= 0 && nb1[b] >= 0 && units.Beats(cost+lb1, best.V) {
					if v := cost + next1[base+nf1[f]*w+nb1[b]]; v < best.V {
						best = ocEntry{V: v, Ch: ocChoice{kind: ocAll, v: 1}}
					}
				}
			}
			vals[j], chs[j] = best.V, best.Ch
			if case2 {
				todo = append(todo, rowState{j: j, f: f, b: b})
			}
		}
	}
	return todo
}

// nextSteps returns the grid indices of the next backlog (next = nextF or nextB, Table 4.1)
// after offloading the input (v = 1, A stays a) and after keeping it (v = 2, A becomes
// aKeep), for a backlog d and a link capacity capacity; −1 off the grid, where the
// successor holds more than M and is infeasible.
func (tb *table) nextSteps(next func(d, i, capacity float64, v int) float64, a, aKeep int, d, i, capacity float64) (v1, v2 int) {
	return tb.Grid.StepAt(a, next(d, i, capacity, 1)), tb.Grid.StepAt(aKeep, next(d, i, capacity, 2))
}

// rowState is a state of a row still trying case-2 segments: its position j in the slab
// and its Δ_F and Δ_B indices.
type rowState struct{ j, f, b int }

// fillSegments tries the case-2 segments F_s^ck … F_t^∅, t = s..L, for the states of one
// row (one x, s, run and A; row.dF and row.dB unused), keeping or offloading the input as
// choicesOK allows. The terms of a candidate separate:
// the segment's forward (its idle time, the link capacity, the next Δ_F) depends on Δ_F
// alone, and its backward C_Δ(s, t, A + I, Δ_B) with the next Δ_B on Δ_B alone. Each t
// computes them once per Δ value, then combines them for every state with one lookup in the
// table of stage t+1, which stays in the cache while the states sweep it. The arithmetic
// is that of ocStep term by term (ocSegment, next) and every state sees its candidates in
// the order of ocCompute, replacing its best only on a strictly smaller value, so values
// and choices are those of the top-down recursion, which the reconstruction repeats.
func (tb *table) fillSegments(row ocState, todo []rowState, keepOK, offOK bool, vals []float64, chs []ocChoice) {
	g := tb.Grid
	s, a, w := row.s, int(row.a), g.W[int(row.a)]
	i, keep := tb.input(row), tb.keep(row)
	saved := row.savedInput() && !tb.Continuous
	aKeep := a + int(keep) // A after keeping the input (v = 2); v = 1 leaves A
	// Per Δ_F index: forward time with idle, and the next Δ_F index for v = 1 and v = 2
	// (−1: off the grid, an infeasible successor). Per Δ_B index: C_Δ and the next Δ_B.
	fwd := make([]float64, w)
	nf1, nf2 := make([]int, w), make([]int, w)
	cb := make([]float64, w)
	nb1, nb2 := make([]int, w), make([]int, w)
	fmax, sumF := math.Inf(-1), 0.0
	for t := s; t < tb.C.N && len(todo) > 0; t++ {
		fmax, sumF = tb.ocRun(s, t, fmax, sumF)
		for f := range w {
			dF := float64(f)
			excF := max(fmax-tb.M+row.a+dF+i, 0)
			capF := sumF*tb.Beta + excF
			fwd[f] = sumF + excF/tb.Beta
			nf1[f], nf2[f] = tb.nextSteps(tb.nextF, a, aKeep, dF, i, capF)
		}
		for b := range w {
			dB := float64(b)
			cb[b] = tb.CD(s, t, row.a+keep, dB, saved)
			nb1[b], nb2[b] = tb.nextSteps(tb.nextB, a, aKeep, dB, i, cb[b]*tb.Beta)
		}
		next := tb.oc.Vals[tb.ocSlab(ocState{x: 0, s: t + 1})]
		stopAt := sumF + tb.seqFrom[s]
		lb1, lb2 := tb.ocLB(0, t+1, row.a), tb.ocLB(0, t+1, row.a+keep)
		lbRow := sumF + tb.CDLB(s, t, row.a+keep) + min(lb1, lb2)
		ch := ocChoice{kind: ocCk, t: uint16(t)}
		alive := todo[:0]
		for _, l := range todo {
			best := vals[l.j]
			// The segment's forward runs twice: value ≥ Σ_{k=s}^{t} u_F(k) + seqFrom[s],
			// which only grows with t (ocStep).
			if !units.Beats(stopAt, best) {
				continue
			}
			alive = append(alive, l)
			c := cb[l.b]
			if !units.Beats(lbRow, best) || math.IsInf(c, 1) {
				continue
			}
			head := fwd[l.f] + c
			if keepOK && nf2[l.f] >= 0 && nb2[l.b] >= 0 && units.Beats(head+lb2, best) {
				if v := head + next[g.Off2[aKeep]+nf2[l.f]*g.W[aKeep]+nb2[l.b]]; v < best {
					best, ch.v = v, 2
					vals[l.j], chs[l.j] = best, ch
				}
			}
			if offOK && nf1[l.f] >= 0 && nb1[l.b] >= 0 && units.Beats(head+lb1, best) {
				if v := head + next[g.Off2[a]+nf1[l.f]*w+nb1[l.b]]; v < best {
					ch.v = 1
					vals[l.j], chs[l.j] = v, ch
				}
			}
		}
		todo = alive
	}
}
