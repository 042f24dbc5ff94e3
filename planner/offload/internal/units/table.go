package units

import (
	"math"
	"runtime"
	"sync"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
)

// Table holds the discretization of the POFO DP on a chain in memory units and the
// memoized C_Δ(s, t, A, Δ).
//
// In the discretized mode (the production mode, spec §4.9) the states lie on a grid: A is
// a whole number of units (a size joining A is rounded up) and every new Δ is rounded up to
// whole units; the sizes themselves, idle times and link capacities keep their exact
// values. FillCD computes every grid entry bottom-up. In the continuous mode nothing is
// rounded and the values are memoized top-down on the reachable states: exact, exponential
// in the worst case, for small chains and tests (spec §4.10 (a)).
type Table struct {
	C          *Chain
	M          float64 // M, the memory limit in units, chain input included
	Beta       float64 // β in units per time unit
	Continuous bool
	// NearestDelta rounds every new Δ state to the nearest unit instead of up: no longer
	// conservative (the value may fall below the replayed makespan), but the rounding
	// errors of a long backlog cancel instead of adding up (POFO's "pofo-nearest").
	NearestDelta bool
	Grid         *Grid // the states of the discretized mode; nil when continuous
	qtol         float64
	tol          float64
	pa           []float64 // pa[s] = Σ_{k<s} ā_k in units, for the rounding of runs of ā (IncAbar)
	seq2         []float64 // seq2[k] = Σ_{j≤k} (u_F(j)+u_B(j))
	cd           Store[cdKey, int16]
	// cdMin[s·(N+1)+t][A] is the smallest C_Δ(s, t, A, ·) over Δ and run, filled by
	// FillCD; nil: the sequential times are the lower bounds instead.
	cdMin [][]float64
	// lazyLeft is the memory left to the slabs CD allocates when first written (limits.go),
	// lazyUsed what they took; over is set once one would not fit.
	lazyLeft, lazyUsed float64
	over               bool
}

type cdKey struct {
	s, t    int32
	run     bool
	a, dlta float64
}

// NewTable returns an empty table for M = m units and β in units per time unit.
func NewTable(c *Chain, m, beta float64, continuous bool) *Table {
	n := c.N
	tb := &Table{
		C: c, M: m, Beta: beta, Continuous: continuous,
		qtol: 1e-12 * max(1, m), tol: 1e-9 * max(1, m),
		pa:   make([]float64, n+1),
		seq2: make([]float64, n+1),
	}
	for k := 1; k <= n; k++ {
		tb.seq2[k] = tb.seq2[k-1] + c.UF[k] + c.UB[k]
		tb.pa[k] = tb.pa[k-1] + c.ABar[k-1]
	}
	if !continuous {
		tb.lazyLeft = tableLimit() - IndexBytes(n, int(m))
		tb.Grid = NewGrid(int(m))
		tb.cd.Init(false, 2*(n+1)*(n+1), tb.Grid.Size1())
	} else {
		tb.cd.Init(true, 0, 0)
	}
	return tb
}

// TableForBudget returns the discretized table of c for a budget and a number of slots.
//
// Sizes keep their exact value in units (bytes/unit); only the states are whole units:
// a size joining A is rounded up, and so is every new Δ (spec §4.9). This is
// conservative like rounding every size up, as rotor does, but the requirement terms
// and the inputs that are not kept lose nothing: with the 50 slots of the thesis,
// rounding each of a few dozen stored activations up costs a large share of the budget.
func TableForBudget(c *chainplan.Chain, budgetBytes, slots int64, beta float64) *Table {
	unit := discretize.Unit(budgetBytes, slots)
	return NewTable(Exact(c).Scaled(unit), float64(budgetBytes/unit), beta/float64(unit), false)
}

// cdSlab returns the slab of C_Δ(s, t, ·, ·, run).
func (tb *Table) cdSlab(s, t int, run bool) int {
	p := 2 * (s*(tb.C.N+1) + t)
	if run {
		p++
	}
	return p
}

// cdAt returns where C_Δ(s, t, A, Δ, run) is memoized: its key, slab and grid position.
func (tb *Table) cdAt(s, t int, run bool, a, d float64) (cdKey, int, int) {
	k := cdKey{int32(s), int32(t), run, a, d}
	if tb.Grid == nil {
		return k, 0, -1
	}
	return k, tb.cdSlab(s, t, run), tb.Grid.Index1(a, d)
}

// CDLB returns a lower bound of C_Δ(s, t, A, ·).
func (tb *Table) CDLB(s, t int, a float64) float64 {
	if tb.cdMin != nil {
		if row := tb.cdMin[s*(tb.C.N+1)+t]; row != nil && int(a) < len(row) {
			return row[int(a)]
		}
	}
	return tb.seq2[t] - tb.seq2[s-1]
}

// Q rounds a new Δ state up to whole units in the discretized mode (spec §4.9: new Δ
// states → ⌈·⌉, conservative), or to the nearest unit with NearestDelta.
func (tb *Table) Q(x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case tb.Continuous:
		return x
	case tb.NearestDelta:
		return math.Floor(x + 0.5)
	}
	return math.Ceil(x - tb.qtol)
}

// QA rounds a stored size up to whole units when it joins A (discretized mode): the
// state A stays a whole number of units and never under-estimates the stored bytes,
// while every other size keeps its exact value (spec §4.9 reading, docs/pofo.md).
func (tb *Table) QA(x float64) float64 {
	if tb.Continuous {
		return x
	}
	return math.Ceil(x - tb.qtol)
}

// IncAbar returns what keeping ā_{s−1} adds to A. In the discretized mode the saved
// activations kept one after the other, ā_{i−1}, ā_i, …, ā_{j−1} (a run: the F_all
// segments of the forward phase, the F_all steps of case 1 in the backward phase), are
// rounded through the prefix sums Σ_{k<s} ā_k: the first adds ⌈Σ_{k<i}⌉ − ⌊Σ_{k<i−1}⌋, the
// next ones ⌈Σ_{k<s}⌉ − ⌈Σ_{k<s−1}⌉, so that a whole run costs less than two units more
// than its exact size instead of up to one unit per activation, and A never under-
// estimates the stored bytes. run says whether ā_{s−2} was the previous activation added.
// With 68 stages and 100 units, rounding each activation up cost more than a third of the
// budget on densenet121 (docs/pofo.md).
func (tb *Table) IncAbar(s int, run bool) float64 {
	if tb.Continuous {
		return tb.C.ABar[s-1]
	}
	hi := math.Ceil(tb.pa[s] - tb.qtol)
	if run {
		return hi - math.Ceil(tb.pa[s-1]-tb.qtol)
	}
	return hi - math.Floor(tb.pa[s-1]+tb.qtol)
}

// Fits reports need ≤ avail up to the memory tolerance.
func (tb *Table) Fits(need, avail float64) bool { return need <= avail+tb.tol }

// Beats reports whether a candidate whose value is at least lb may beat best: the
// branch-and-bound test of both phases. A candidate is skipped only when its lower bound
// exceeds the best value by more than the rounding of a sum, so every state's value stays
// exact; the bounds are the sequential times Σ(u_F+u_B) of what remains (no schedule runs
// a stage's forward and backward in less).
func Beats(lb, best float64) bool { return lb <= best+1e-12*math.Abs(best) }

// Parallel runs body(0..count−1) split between the available cores (at most 8), each
// worker taking every workers-th index; the bottom-up fills of both phases use it.
func Parallel(count int, body func(i int)) {
	workers := max(1, min(runtime.GOMAXPROCS(0), 8))
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
