package rotor

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
)

// Choice codes stored in the table (spec §3.2: "store the argmin during the DP").
const (
	choiceNone = -1 // infeasible
	choiceAll  = 0  // F_s^all, then (s+1, t) on m − ā_s, then B_s
	// A positive code s' means F_s^ck F_{s+1}^∅ … F_{s'}^∅, then (s'+1, t) on m − a_{s'},
	// then (s, s') on m.
)

// maxTableBytes bounds the memory of one persistent table; a larger request is refused
// with ErrUnsupported rather than letting the process be killed.
const maxTableBytes = 6 << 30

// chunk is the width of the blocks the memory axis is cut into. The table is stored block
// by block: all sub-chains' values for budgets [0, 32), then for [32, 64), and so on, and
// the blocks are computed in that order. One block of a 339-stage table (58k sub-chains ×
// 32 values, with the choices 18 MB) stays in the last-level cache while all of its
// sub-chains are computed; a whole-row layout instead streams the table from memory once
// per candidate s', and measured 2-3× slower. References to smaller budgets (m − a_{s'})
// land in the current or in completed blocks.
const chunk = 32

// table is the persistent DP C_MP(s, t, m) for 1 ≤ s ≤ t ≤ N and 0 ≤ m ≤ M, with the
// choice that reaches each value. Within a block, sub-chains are ordered by length, then
// by s, so the rows a length depends on are complete before it starts.
type table struct {
	c       *discretize.Chain
	n       int
	rows    int
	cols    int // M+1
	need    *needTable
	revolve bool
	val     []float64
	choice  []int16
}

// rowIndex returns the row of sub-chain (s, t): rows of length d = t−s come after the
// Σ_{k<d}(N−k) rows of shorter sub-chains.
func (tb *table) rowIndex(s, t int) int {
	d := t - s
	return d*tb.n - d*(d-1)/2 + (s - 1)
}

// at returns the position of C(s, t, m) in val and choice.
func (tb *table) at(s, t int, m int64) int {
	b := int(m) / chunk
	return (b*tb.rows+tb.rowIndex(s, t))*chunk + int(m)%chunk
}

// span returns the values of sub-chain (s, t) for budgets [from, to), which must lie in one
// block.
func (tb *table) span(s, t int, from, to int64) []float64 {
	i := tb.at(s, t, from)
	return tb.val[i : i+int(to-from)]
}

// tableBytes is the memory the table of a chain of n stages (loss included) with budget m
// needs: one float64 value and one int16 choice per entry.
func tableBytes(n int, m int64) float64 {
	blocks := (m + chunk) / chunk
	return float64(n) * float64(n+1) / 2 * float64(blocks*chunk) * 10
}

// newTable fills the persistent table for budgets 0..m (units, input excluded).
//
// Loop order (spec §3.2, pitfall 15): budget block, then sub-chain length. Every reference
// of an entry is to a strictly shorter sub-chain at the same or a smaller budget, so all
// budgets of a block can be computed at once; the innermost loop then runs over budgets
// and is a contiguous add-and-min. Rows of one length are independent and are split
// between the available cores.
//
// The time complexity is O(M·N³), the memory O(M·N²).
func newTable(c *discretize.Chain, m int64, revolve bool) (*table, error) {
	if m < 0 {
		m = -1
	}
	n := c.N
	if n > math.MaxInt16 {
		return nil, fmt.Errorf("%w: a chain of %d stages is too long for the persistent DP", chainplan.ErrUnsupported, n)
	}
	if b := tableBytes(n, m); b > maxTableBytes {
		return nil, fmt.Errorf("%w: the DP table for %d stages and %d memory slots would take %s (limit %s); use fewer slots",
			chainplan.ErrUnsupported, n, m+1, chainplan.FormatBytes(int64(b)), chainplan.FormatBytes(maxTableBytes))
	}
	cols := int(m + 1)
	rows := n * (n + 1) / 2
	blocks := (cols + chunk - 1) / chunk
	tb := &table{
		c: c, n: n, rows: rows, cols: cols, revolve: revolve,
		need:   minMemory(c, revolve),
		val:    make([]float64, blocks*rows*chunk),
		choice: make([]int16, blocks*rows*chunk),
	}
	prefix := make([]float64, n+1) // prefix[k] = u_F(1) + … + u_F(k)
	for k := 1; k <= n; k++ {
		prefix[k] = prefix[k-1] + c.UF[k]
	}
	workers := min(runtime.GOMAXPROCS(0), 8)
	for start := 0; start < cols; start += chunk {
		end := min(start+chunk, cols)
		// Base case (2.9): C(s, s, m) = u_F(s) + u_B(s) for m ≥ m_all^{s,s}.
		for s := 1; s <= n; s++ {
			tb.fillBlock(s, s, int64(start), int64(end), prefix)
		}
		for d := 1; d < n; d++ {
			count := n - d // sub-chains of length d: s = 1..count
			if workers == 1 || count < 8 {
				for s := 1; s <= count; s++ {
					tb.fillBlock(s, s+d, int64(start), int64(end), prefix)
				}
				continue
			}
			var wg sync.WaitGroup
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					// Interleave rows so that each worker gets the same mix of work.
					for s := 1 + w; s <= count; s += workers {
						tb.fillBlock(s, s+d, int64(start), int64(end), prefix)
					}
				}(w)
			}
			wg.Wait()
		}
	}
	return tb, nil
}

// fillBlock computes C(s, t, m) for start ≤ m < end (one block) by (2.9)/(2.10). Ties:
// candidates are tried in the order F_ck with s' = s, s+1, …, t−1, then F_all, and only a
// strictly smaller value replaces the current one, so the checkpoint branch with the
// smallest s' wins every tie (rotor's rule, spec §3.2).
func (tb *table) fillBlock(s, t int, start, end int64, prefix []float64) {
	c := tb.c
	base := tb.at(s, t, start)
	out := tb.val[base : base+int(end-start)]
	ch := tb.choice[base : base+int(end-start)]
	for i := range out {
		out[i] = math.Inf(1)
		ch[i] = choiceNone
	}
	if s == t {
		v := c.UF[s] + c.UB[s]
		for m := max(start, mAll(c, s, s)); m < end; m++ {
			out[m-start], ch[m-start] = v, choiceAll
		}
		return
	}
	me := mEmpty(c, s, t)
	for sp := s; sp < t; sp++ {
		as := c.A[sp]
		lo := max(start, me, as+tb.need.at(sp+1, t), tb.need.at(s, sp))
		if lo >= end {
			continue
		}
		p := prefix[sp] - prefix[s-1] // Σ_{k=s}^{s'} u_F(k)
		left := tb.span(s, sp, lo, end)
		// The right sub-chain is read at m − a_{s'}, which may straddle two blocks.
		for from := lo; from < end; {
			to := min(end, ((from-as)/chunk+1)*chunk+as)
			relaxSum(out[from-start:to-start], ch[from-start:to-start], left[from-lo:to-lo],
				tb.span(sp+1, t, from-as, to-as), p, int16(sp))
			from = to
		}
	}
	if tb.revolve {
		return
	}
	ab := c.ABar[s]
	lo := max(start, mAll(c, s, t), ab+tb.need.at(s+1, t))
	u := c.UF[s] + c.UB[s]
	for from := lo; from < end; {
		to := min(end, ((from-ab)/chunk+1)*chunk+ab)
		relaxShift(out[from-start:to-start], ch[from-start:to-start], tb.span(s+1, t, from-ab, to-ab), u)
		from = to
	}
}

// relaxSum lowers out[i] to p + left[i] + right[i] where that is strictly smaller and
// records code as the choice. The slices must have out's length.
func relaxSum(out []float64, ch []int16, left, right []float64, p float64, code int16) {
	_, _, _ = ch[len(out)-1], left[len(out)-1], right[len(out)-1]
	for i := range out {
		if v := p + right[i] + left[i]; v < out[i] {
			out[i], ch[i] = v, code
		}
	}
}

// relaxShift lowers out[i] to u + right[i] where that is strictly smaller and records the
// F_all choice.
func relaxShift(out []float64, ch []int16, right []float64, u float64) {
	_, _ = ch[len(out)-1], right[len(out)-1]
	for i := range out {
		if v := u + right[i]; v < out[i] {
			out[i], ch[i] = v, choiceAll
		}
	}
}

// value returns C(s, t, m), +Inf when m is out of the table or infeasible.
func (tb *table) value(s, t int, m int64) float64 {
	if m < 0 || m >= int64(tb.cols) {
		return math.Inf(1)
	}
	return tb.val[tb.at(s, t, m)]
}

// choiceAt returns the choice of C(s, t, m), choiceNone when out of the table.
func (tb *table) choiceAt(s, t int, m int64) int16 {
	if m < 0 || m >= int64(tb.cols) {
		return choiceNone
	}
	return tb.choice[tb.at(s, t, m)]
}
