package offload

import (
	"math"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
	"github.com/chainplan/chainplan/planner/offload/internal/units"
)

// table holds the POFO dynamic program of spec §4.5-4.8 on a chain in memory units: the
// forward-phase values OC_x(s, A, Δ_F, Δ_B) here, on top of the backward-phase values
// C_Δ(s, t, A, Δ) and the discretization both phases share (units.Table: the rounding of
// states, the grid, the continuous and discretized modes).
type table struct {
	*units.Table
	noOffload bool      // v = 2 only: POFO reduces to the persistent rematerialization DP
	seqFrom   []float64 // seqFrom[s] = Σ_{k=s}^{N} (u_F(k)+u_B(k)), a lower bound of OC at s
	tailF0    []float64 // tailF0[s] = max_{k∈(s,L]} rF0(·, k), −Inf when s = L
	oc        units.Store[ocKey, ocChoice]
	// ocMin[x·(N+1)+s][A] is the smallest OC over Δ_F, Δ_B (and run) at that A, filled by
	// the bottom-up fill; nil: the sequential times are used instead.
	ocMin [][]float64
}

// ocLB returns a lower bound of OC_x(s, A, ·, ·).
func (tb *table) ocLB(x, s int, a float64) float64 {
	if tb.ocMin != nil {
		if row := tb.ocMin[x*(tb.C.N+1)+s]; row != nil && int(a) < len(row) {
			return row[int(a)]
		}
	}
	return tb.seqFrom[s]
}

// newTable returns an empty table for M = m units and β in units per time unit. In the
// discretized mode A and Δ states are whole numbers of units.
func newTable(c *units.Chain, m, beta float64, continuous, noOffload bool) *table {
	return withOC(units.NewTable(c, m, beta, continuous), noOffload)
}

// withOC adds the forward phase to a table of C_Δ.
func withOC(cd *units.Table, noOffload bool) *table {
	c := cd.C
	n := c.N
	tb := &table{
		Table: cd, noOffload: noOffload,
		seqFrom: make([]float64, n+2),
		tailF0:  make([]float64, n+1),
	}
	for k := n; k >= 1; k-- {
		tb.seqFrom[k] = tb.seqFrom[k+1] + c.UF[k] + c.UB[k]
	}
	tb.tailF0[n] = math.Inf(-1)
	for s := n - 1; s >= 1; s-- {
		// rF0(s, k) for k > s does not depend on s.
		v := math.Inf(-1)
		if s+1 <= n-1 {
			v = max(tb.tailF0[s+1], c.RF0(0, s+1))
		}
		tb.tailF0[s] = v
	}
	if cd.Grid != nil {
		tb.oc.Init(false, 4*(n+1), cd.Grid.Size2())
	} else {
		tb.oc.Init(true, 0, 0)
	}
	return tb
}

// pofoTable returns the discretized POFO table of c for a budget (units.ForBudget: sizes
// exact in units, states rounded up).
func pofoTable(c *chainplan.Chain, budgetBytes, slots int64, beta float64, noOffload bool) *table {
	return withOC(units.TableForBudget(c, budgetBytes, slots, beta), noOffload)
}

// rotorTable is pofoTable with every size rounded up to whole units first, exactly as the
// rotor DP discretizes: with offloading disabled its value is rotor's (spec §4.8).
func rotorTable(c *chainplan.Chain, budgetBytes, slots int64, beta float64, noOffload bool) *table {
	dc := discretize.ForBudget(c, budgetBytes, slots)
	return newTable(units.FromDiscrete(dc), float64(dc.Units(budgetBytes)), beta/float64(dc.Unit), false, noOffload)
}

// ocSlab returns the slab of the states (x, run, s).
func (tb *table) ocSlab(s ocState) int {
	p := 2 * s.x
	if s.run {
		p++
	}
	return p*(tb.C.N+1) + s.s
}

// ocAt returns where OC(st) is memoized: its key, slab and grid position.
func (tb *table) ocAt(st ocState) (ocKey, int, int) {
	if tb.Grid == nil {
		return st.key(), 0, -1
	}
	return st.key(), tb.ocSlab(st), tb.Grid.Index2(st.a, st.dF, st.dB)
}
