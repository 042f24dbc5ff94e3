package pofo

import (
	"math"
	"runtime"
	"sync"
)

// fill computes every entry of the discretized tables bottom-up: C_Δ by increasing
// sub-chain length, then OC by decreasing s (an entry only reads longer-s OC entries and
// C_Δ entries). Within a level the entries are independent and are split between the
// available cores; visiting the states of a level in index order keeps the lookups of
// neighbouring states close in memory. The top-down memoized recursion computes only the
// reachable states but in an order that misses the cache on nearly every lookup; on the
// example chains the bottom-up fill is several times faster.
func (tb *table) fill() {
	workers := max(1, min(runtime.GOMAXPROCS(0), 8))
	n := tb.c.n
	m := int(tb.m)
	parallel := func(count int, body func(i int)) {
		if workers == 1 || count < 2 {
			for i := 0; i < count; i++ {
				body(i)
			}
			return
		}
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := w; i < count; i += workers {
					body(i)
				}
			}(w)
		}
		wg.Wait()
	}
	cd := &tb.cd
	g := cd.g
	for s := 1; s <= n; s++ {
		for t := s; t <= n; t++ {
			for _, run := range []bool{false, true} {
				p := cd.slab(s, t, run)
				cd.vals[p] = nanSlice(cd.size())
				cd.chs[p] = make([]int16, cd.size())
			}
		}
	}
	tb.cdMin = make([][]float64, (n+1)*(n+1))
	tb.ocMin = make([][]float64, 2*(n+1))
	for d := 0; d < n; d++ {
		parallel(2*(n-d), func(i int) {
			s := i/2 + 1
			t := s + d
			run := i%2 == 1
			p := cd.slab(s, t, run)
			for a := 0; a <= m; a++ {
				for j := 0; j < g.w[a]; j++ {
					e := tb.cdCompute(s, t, float64(a), float64(j*g.k), run)
					cd.vals[p][g.off1[a]+j], cd.chs[p][g.off1[a]+j] = e.v, int16(e.ch)
				}
			}
		})
		// Publish the bounds of this length only once all of it is filled.
		for s := 1; s+d <= n; s++ {
			row := make([]float64, m+1)
			for a := 0; a <= m; a++ {
				row[a] = math.Inf(1)
				for _, run := range []bool{false, true} {
					p := cd.slab(s, s+d, run)
					for j := 0; j < g.w[a]; j++ {
						row[a] = min(row[a], cd.vals[p][g.off1[a]+j])
					}
				}
			}
			tb.cdMin[s*(n+1)+s+d] = row
		}
	}
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
				p := oc.slab(ocState{x: x, s: s, run: run})
				oc.vals[p] = nanSlice(oc.size())
				oc.chs[p] = make([]ocChoice, oc.size())
				parallel(m+1, func(a int) { tb.fillRow(x, s, run, a, oc.vals[p], oc.chs[p], row) })
			}
			tb.ocMin[x*(n+1)+s] = row
		}
	}
}

// fillRow computes OC_x(s, A, ·, ·) for one A, candidate by candidate across all of its
// states: case 1 for every state, then each t for every state still in the race. The
// successors of one t all lie in the table of stage t+1, which stays in the cache while
// the states sweep it; each state sees its candidates in the order of ocCompute, so the
// values and choices are the same. row[A] is lowered to the smallest value.
func (tb *table) fillRow(x, s int, run bool, a int, vals []float64, chs []ocChoice, row []float64) {
	g := tb.oc.g
	w := g.w[a]
	base := g.off2[a]
	type live struct {
		j             int
		st            ocState
		i             float64
		keepOK, offOK bool
	}
	var todo []live
	for f := 0; f < w; f++ {
		for b := 0; b < w; b++ {
			st := ocState{x: x, s: s, run: run, a: float64(a), dF: float64(f * g.k), dB: float64(b * g.k)}
			best, keepOK, offOK, more := tb.ocStart(st)
			j := base + f*w + b
			vals[j], chs[j] = best.v, best.ch
			if more {
				todo = append(todo, live{j, st, tb.input(st), keepOK, offOK})
			}
		}
	}
	fmax, sumF := math.Inf(-1), 0.0
	for t := s; t < tb.c.n && len(todo) > 0; t++ {
		fmax, sumF = tb.ocRun(s, t, fmax, sumF)
		keep := todo[:0]
		for _, l := range todo {
			best := ocEntry{v: vals[l.j], ch: chs[l.j]}
			stop := tb.ocStep(l.st, l.i, t, fmax, sumF, l.keepOK, l.offOK, &best)
			vals[l.j], chs[l.j] = best.v, best.ch
			if !stop {
				keep = append(keep, l)
			}
		}
		todo = keep
	}
	for j := base; j < base+w*w; j++ {
		row[a] = min(row[a], vals[j])
	}
}
