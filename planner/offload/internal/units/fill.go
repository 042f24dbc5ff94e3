package units

import "math"

// FillCD computes every entry of the discretized C_Δ bottom-up, by increasing sub-chain
// length (an entry only reads shorter sub-chains), and the lower bounds CDLB reads. Within
// a length the entries are independent and are split between the available cores;
// visiting the states in index order keeps the lookups of neighbouring states close in
// memory. The top-down memoized recursion computes only the reachable states but in an
// order that misses the cache on nearly every lookup; on the example chains the bottom-up
// fill is several times faster.
func (tb *Table) FillCD() {
	n := tb.C.N
	m := int(tb.M)
	g := tb.Grid
	cd := &tb.cd
	for s := 1; s <= n; s++ {
		for t := s; t <= n; t++ {
			for _, run := range []bool{false, true} {
				cd.Alloc(tb.cdSlab(s, t, run))
			}
		}
	}
	tb.cdMin = make([][]float64, (n+1)*(n+1))
	for d := 0; d < n; d++ {
		Parallel(2*(n-d), func(i int) {
			s := i/2 + 1
			t := s + d
			run := i%2 == 1
			for a := 0; a <= m; a++ {
				tb.fillCDRow(s, t, run, a)
			}
		})
		// Publish the bounds of this length only once all of it is filled.
		for s := 1; s+d <= n; s++ {
			row := make([]float64, m+1)
			for a := 0; a <= m; a++ {
				row[a] = math.Inf(1)
				for _, run := range []bool{false, true} {
					p := tb.cdSlab(s, s+d, run)
					for j := 0; j < g.W[a]; j++ {
						row[a] = min(row[a], cd.Vals[p][g.Off1[a]+j])
					}
				}
			}
			tb.cdMin[s*(n+1)+s+d] = row
		}
	}
}

// fillCDRow computes C_Δ(s, t, A, ·) for one A: the base case and case 1 for every Δ
// (cdStart), then case 2 split point by split point s′ for every Δ still in the race. The
// lookups go straight to the slabs of the two sub-chains, both shorter and already filled;
// the arithmetic is that of cdCompute term by term and every Δ sees the split points in
// the same order, so values and choices are the same.
func (tb *Table) fillCDRow(s, t int, run bool, a int) {
	cd := &tb.cd
	g := tb.Grid
	p := tb.cdSlab(s, t, run)
	vals, chs := cd.Vals[p], cd.Chs[p]
	base, w, fa := g.Off1[a], g.W[a], float64(a)
	alive := make([]int, 0, w)
	case2 := s < t && tb.cdCase2OK(s, t, fa)
	for j := range w {
		e := tb.cdStart(s, t, fa, float64(j), run)
		vals[base+j], chs[base+j] = e.V, e.Ch
		if case2 {
			alive = append(alive, j)
		}
	}
	fmax, sumF := math.Inf(-1), 0.0
	for sp := s; sp < t && len(alive) > 0; sp++ {
		fmax, sumF = tb.cdRun(s, t, sp, fmax, sumF)
		stopAt := sumF + tb.seq2[t] - tb.seq2[s-1]
		keep := tb.QA(tb.C.A[sp])
		lb := sumF + tb.CDLB(s, sp, fa) + tb.CDLB(sp+1, t, fa+keep)
		last := cd.Vals[tb.cdSlab(s, sp, run)]       // C_Δ(s, s′, A, Δ), last in time
		middle := cd.Vals[tb.cdSlab(sp+1, t, false)] // C_Δ(s′+1, t, A + a_{s′}, Δ_2)
		a1 := a + int(keep)
		next := alive[:0]
		for _, j := range alive {
			best := vals[base+j]
			if !Beats(stopAt, best) {
				continue
			}
			next = append(next, j)
			if !Beats(lb, best) {
				continue
			}
			c2 := last[base+j]
			if math.IsInf(c2, 1) {
				continue
			}
			d2 := tb.Q(float64(j) - c2*tb.Beta)
			k := g.StepAt(a1, d2)
			if k < 0 {
				continue
			}
			c1 := middle[g.Off1[a1]+k]
			if math.IsInf(c1, 1) {
				continue
			}
			d3 := max(d2-c1*tb.Beta, 0)
			excF := max(fmax-tb.M+fa+d3, 0)
			if v := sumF + c1 + c2 + excF/tb.Beta; v < best {
				vals[base+j], chs[base+j] = v, int16(sp)
			}
		}
		alive = next
	}
}
