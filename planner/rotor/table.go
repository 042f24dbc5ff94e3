package rotor

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
	"github.com/chainplan/chainplan/planner/internal/dpcount"
)

// Choice codes stored in the table (spec §3.2: "store the argmin during the DP").
const (
	choiceNone = -1 // infeasible
	choiceAll  = 0  // F_s^all, then (s+1, t) on m − ā_s (+ the credit), then B_s
	// A positive code s' means F_s^ck F_{s+1}^∅ … F_{s'}^∅, then (s'+1, t) on m − a_{s'},
	// then (s, s') on m. A code below choiceNone, choiceNone − o, means F_s^all with the
	// stage's option o ≥ 1, then (s+1, t) on m − ā_s(o), then B_s.
)

// optionChoice returns the code of option o ≥ 1, and optionOf decodes it (0 for the others).
func optionChoice(o int) int16 { return int16(choiceNone - o) }
func optionOf(code int16) int {
	if code < choiceNone {
		return int(choiceNone - code)
	}
	return 0
}

// variant selects the recurrences: revolve allows F_all only right before its backward
// (spec §4.2); options lets F_s^all use each of the stage's operation-level options.
type variant struct{ revolve, options bool }

// startBlock is the number of sub-chain starts s processed together. The table is stored
// row by row (one contiguous row of budgets per sub-chain), and the rows are computed block
// of starts by block, t ascending within a block and s descending within a t: the
// candidates of (s, t) read the rows (s, s'), shared by every t of the same s, and the rows
// (s'+1, t) of column t, shared by every s of the block. Both then come from the cache: 8
// starts keep the left rows of a 339-stage chain (8 × 339 rows of 4 KB) in the last-level
// cache and read each right row once per 8 sub-chains, where a by-length order reads both
// from memory for every sub-chain.
const startBlock = 8

// table is the persistent DP C_MP(s, t, m) for 1 ≤ s ≤ t ≤ N and 0 ≤ m ≤ M, with the
// choice that reaches each value.
type table struct {
	c    *discretize.Chain
	n    int
	cols int   // M+1+pad: the budgets of the table
	top  int64 // M: the largest budget asked for
	need *needTable
	variant
	val    []float64
	choice []int16
	// pinned[s] is the first row of the pinned plane of start s (memory.go), -1 where it
	// is the same as plane 0.
	pinned []int
}

// rowIndex returns the row of sub-chain (s, t) in plane p: plane 0 first, ordered by s then
// t, then the pinned rows of the starts that have them.
func (tb *table) rowIndex(s, t, p int) int {
	if p == 1 && tb.pinned[s] >= 0 {
		return tb.pinned[s] + (t - s)
	}
	// Rows of starts 1..s−1 come first: Σ_{k<s} (N−k+1) of them.
	return (s-1)*(tb.n+1) - (s-1)*s/2 + (t - s)
}

func (tb *table) row(s, t, p int) []float64 {
	r := tb.rowIndex(s, t, p)
	return tb.val[r*tb.cols : (r+1)*tb.cols]
}

func (tb *table) choices(s, t, p int) []int16 {
	r := tb.rowIndex(s, t, p)
	return tb.choice[r*tb.cols : (r+1)*tb.cols]
}

// newTable fills the persistent table for budgets 0..m (units, input excluded).
//
// Order (spec §3.2, pitfall 15): every reference of (s, t, m) is to a strictly shorter
// sub-chain at the same or a smaller budget, either (s, s') with s' < t or (s'+1, t) with
// s' ≥ s, so a whole row over all budgets can be computed once the rows of the same start
// and smaller t, and of larger starts and the same t, are done. Blocks of startBlock starts
// are taken from the end of the chain; the cores work on consecutive blocks in a wavefront,
// a block computing column t once the previous block has finished it.
//
// The time complexity is O(M·N³), the memory O(M·N²).
//
// Errors: a *chainplan.SizeError, before anything is allocated, when the tables would pass
// chainplan.TableLimit.
func newTable(c *discretize.Chain, m int64, v variant) (*table, error) {
	if err := checkTables(c, oneNeed, m, v.asOptions()); err != nil {
		return nil, err
	}
	need, err := minMemory(c, v)
	if err != nil {
		return nil, err
	}
	return buildTable(c, need, m, v.asOptions())
}

// buildTable is newTable with the sub-chains' smallest budgets already computed.
func buildTable(c *discretize.Chain, need *needTable, m int64, opts Options) (*table, error) {
	if m < 0 {
		m = -1
	}
	n := c.N
	if err := checkTables(c, oneNeed, m, opts); err != nil {
		return nil, err
	}
	if n > math.MaxInt16 {
		return nil, fmt.Errorf("%w: a chain of %d stages is too long for the persistent DP", chainplan.ErrUnsupported, n)
	}
	v := opts.variant()
	dpcount.Table.Add(1)
	// A sub-chain after an F_all that frees its input (credit) may have more room than
	// its caller: the table extends past m by the most those credits can add up to, so
	// that every entry up to m reads only entries computed from the recurrences.
	rows, cols64 := tableShape(c, m)
	cols := int(cols64)
	pinned := make([]int, n+1)
	for s, r := 1, n*(n+1)/2; s <= n; s++ {
		pinned[s] = -1
		if c.Pinnable(s) {
			pinned[s] = r
			r += n - s + 1
		}
	}
	tb := &table{
		c: c, n: n, cols: cols, top: m, variant: v, pinned: pinned,
		need:   need,
		val:    make([]float64, rows*cols),
		choice: make([]int16, rows*cols),
	}
	if cols == 0 {
		return tb, nil
	}
	prefix := make([]float64, n+1) // prefix[k] = u_F(1) + … + u_F(k)
	for k := 1; k <= n; k++ {
		prefix[k] = prefix[k-1] + c.UF[k]
	}
	nblocks := (n + startBlock - 1) / startBlock
	lowest := func(b int) int { return max(1, n-(b+1)*startBlock+1) } // smallest s of block b
	// done[b] is the last column t that block b has completed.
	done := make([]atomic.Int64, nblocks)
	for b := range done {
		done[b].Store(int64(lowest(b) - 1))
	}
	var next atomic.Int64
	work := func() {
		for {
			b := int(next.Add(1) - 1)
			if b >= nblocks {
				return
			}
			lo, hi := lowest(b), n-b*startBlock
			for t := lo; t <= n; t++ {
				for b > 0 && done[b-1].Load() < int64(t) {
					runtime.Gosched()
				}
				for s := min(hi, t); s >= lo; s-- {
					tb.fillRow(s, t, 0, prefix)
					if pinned[s] >= 0 {
						tb.fillRow(s, t, 1, prefix)
					}
				}
				done[b].Store(int64(t))
			}
		}
	}
	workers := min(runtime.GOMAXPROCS(0), nblocks, 8)
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work()
		}()
	}
	work()
	wg.Wait()
	return tb, nil
}

// fillRow computes C(s, t, ·) by (2.9)/(2.10). Ties: candidates are tried in the order
// F_ck with s' = s, s+1, …, t−1, then F_all, then F_all with options 1, 2, …, and only a
// strictly smaller value replaces the current one, so the checkpoint branch with the
// smallest s' wins every tie (rotor's rule, spec §3.2).
//
// The exact memory model (docs/rotor.md) changes three things: the base case (s, s) is
// F_s^all right before B_s on a stage an earlier forward recorded, which recomputes only
// until it has the saved tensors (u_R(s)); F_s^all gives the sub-chain (s+1, t) the credit
// of its input when it frees it; and B_s's memory (mAll).
func (tb *table) fillRow(s, t, p int, prefix []float64) {
	c := tb.c
	out, ch := tb.row(s, t, p), tb.choices(s, t, p)
	for i := range out {
		out[i] = math.Inf(1)
		ch[i] = choiceNone
	}
	end := int64(tb.cols)
	if s == t {
		v := c.Recompute(s) + c.UB[s]
		for m := mAll(c, s, s, p); m < end; m++ {
			out[m], ch[m] = v, choiceAll
		}
		return
	}
	me := mEmpty(c, s, t)
	for sp := s; sp < t; sp++ {
		as := c.A[sp]
		lo := max(me, as+tb.need.at(sp+1, t, 0), tb.need.at(s, sp, p))
		if lo >= end {
			continue
		}
		f := prefix[sp] - prefix[s-1] // Σ_{k=s}^{s'} u_F(k)
		relaxSum(out[lo:], ch[lo:], tb.row(s, sp, p)[lo:], tb.row(sp+1, t, 0)[lo-as:end-as], f, int16(sp))
	}
	if tb.revolve {
		return
	}
	q := after(c, s)
	ab := held(c, s, 0, p)
	// With a credit (ab < 0) the top -ab budgets would read past the row; they lie in the
	// padding, beyond what any entry up to the requested budget reads.
	if lo, hi := max(mAll(c, s, t, p), ab+tb.need.at(s+1, t, q)), min(end, end+ab); lo < hi {
		relaxShift(out[lo:hi], ch[lo:hi], tb.row(s+1, t, q)[lo-ab:hi-ab], c.UF[s]+c.UB[s], choiceAll)
	}
	for o := 1; tb.options && o <= len(c.Options(s)); o++ {
		ab := held(c, s, o, p)
		if lo := max(mOpt(c, s, t, o), ab+tb.need.at(s+1, t, q)); lo < end {
			relaxShift(out[lo:], ch[lo:], tb.row(s+1, t, q)[lo-ab:end-ab], c.Option(s, o).UF+c.Option(s, o).UR+c.Option(s, o).UB, optionChoice(o))
		}
	}
}

// relaxSum lowers out[i] to p + left[i] + right[i] where that is strictly smaller and
// records code as the choice. The slices must be at least as long as out.
func relaxSum(out []float64, ch []int16, left, right []float64, p float64, code int16) {
	_, _, _ = ch[len(out)-1], left[len(out)-1], right[len(out)-1]
	for i := range out {
		if v := p + right[i] + left[i]; v < out[i] {
			out[i], ch[i] = v, code
		}
	}
}

// relaxShift lowers out[i] to u + right[i] where that is strictly smaller and records code,
// an F_all choice.
func relaxShift(out []float64, ch []int16, right []float64, u float64, code int16) {
	_, _ = ch[len(out)-1], right[len(out)-1]
	for i := range out {
		if v := u + right[i]; v < out[i] {
			out[i], ch[i] = v, code
		}
	}
}

// value returns C(s, t, m) in plane p, +Inf when m is out of the table or infeasible.
func (tb *table) value(s, t, p int, m int64) float64 {
	if m < 0 || m > tb.top {
		return math.Inf(1)
	}
	return tb.row(s, t, p)[m]
}

// choiceAt returns the choice of C(s, t, m) in plane p, choiceNone when out of the table.
func (tb *table) choiceAt(s, t, p int, m int64) int16 {
	if m < 0 || m >= int64(tb.cols) {
		return choiceNone // the backtrack reads the padding, which the top entries need
	}
	return tb.choices(s, t, p)[m]
}
