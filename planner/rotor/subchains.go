package rotor

import (
	"fmt"
	"math"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
)

// SubChains is the persistent DP of a whole chain kept for its sub-chains. By its
// definition (spec §3.2), C_MP(s, t, m) is the optimal time to run the backward steps
// B_t … B_s of stages s..t when a_{s−1} and δ_t are the only values in memory and m more
// units are available (a_{s−1} not counted, δ_t counted): it is what a pipeline stage
// (s..t) costs when it kept only its input after its forward and recomputes under an
// activation budget when its output's gradient arrives (docs/pipeline.md, "Checkpointing
// inside stages"). One table at one discretization answers every sub-chain and budget in
// O(1), where a rotor solve per stage and budget would cost O(S·n³) each.
//
// Stages are the chain's layers 1..L; the loss (stage L+1) is never part of a sub-chain:
// the gradient δ_t is given.
type SubChains struct {
	tb   *table
	dc   *discretize.Chain
	cols int64
}

// subChainsAlgo names what builds a SubChains table in its errors: the pipeline planners'
// stages that recompute (docs/pipeline.md, "Checkpointing inside stages").
const subChainsAlgo = "pipeline checkpointing"

// maxSubChainTableBytes bounds the table of NewSubChains: fewer slots are used for long
// chains (the table has one row per sub-chain).
const maxSubChainTableBytes = 256 << 20

// NewSubChains builds the table of c for budgets up to maxBytes (the sub-chain input
// excluded), discretized into at most slots units (0: DefaultSlots; fewer when the table
// would pass 256 MiB). The unit is max(1, floor(maxBytes/slots)) bytes, sizes rounded up,
// so a sequence that fits its budget in units fits it in bytes. O(S·L³) time, O(S·L²)
// memory. Errors: the chain's validation error; a *chainplan.SizeError, before anything is
// allocated, for a chain whose table passes chainplan.TableLimit even at one slot.
func NewSubChains(c *chainplan.Chain, maxBytes, slots int64) (*SubChains, error) {
	dc, m, err := subChainsGrid(c, maxBytes, slots)
	if err != nil {
		return nil, err
	}
	tb, err := newTable(dc, m, variant{}) // no operation-level options: the pipeline runner recomputes whole stages
	if err != nil {
		return nil, err
	}
	return &SubChains{tb: tb, dc: dc, cols: m + 1}, nil
}

// CheckSubChains returns the error NewSubChains would return for these arguments without
// building anything: the chain's validation error, or a *chainplan.SizeError for a table
// over chainplan.TableLimit. O(L).
func CheckSubChains(c *chainplan.Chain, maxBytes, slots int64) error {
	_, _, err := subChainsGrid(c, maxBytes, slots)
	return err
}

// subChainsGrid returns the discretized chain and the largest budget in units of
// NewSubChains' table, once its size is checked.
func subChainsGrid(c *chainplan.Chain, maxBytes, slots int64) (*discretize.Chain, int64, error) {
	if err := c.Validate(); err != nil {
		return nil, 0, err
	}
	// The version 1 reading of the chain: a pipeline stage's recomputation runs whole
	// stages from its input, which it holds to its backward's end, and simulate.RunFrom,
	// which checks the sequences, replays them so. The exact model's credits (an input freed
	// by F_all, an early-stopping recomputation of the sub-chain's last layer) would give
	// sequences that replay over their budget.
	c = c.Conservative()
	if slots <= 0 {
		slots = DefaultSlots
	}
	n := len(c.Stages) + 1
	rows := float64(n) * float64(n+1) / 2
	slots = max(1, min(slots, int64(maxSubChainTableBytes/(rows*10))-1))
	dc := discretize.ForBudget(c, max(maxBytes, 1), slots)
	m := dc.Units(max(maxBytes, 1))
	r, cols := tableShape(dc, m)
	if err := chainplan.CheckTables(subChainsAlgo, n-1,
		fmt.Sprintf("the rotor table of its sub-chains (%d sub-chains × %d budgets, and the feasibility table)", r, cols),
		needTableBytes(n)+tableBytes(r, cols),
		func(int64) string { return "plan without checkpointing inside the stages (no --checkpoint)" }); err != nil {
		return nil, 0, err
	}
	return dc, m, nil
}

// Unit returns the bytes of one memory unit of the table.
func (sc *SubChains) Unit() int64 { return sc.dc.Unit }

// units returns a budget in whole units, rounded down and capped at the table's largest
// (C_MP is non-increasing in the budget, and the largest budget holds every sub-chain's
// store-all sequence when maxBytes was large enough).
func (sc *SubChains) units(budgetBytes int64) int64 {
	if budgetBytes < 0 {
		return -1
	}
	return min(sc.dc.Units(budgetBytes), sc.cols-1)
}

func (sc *SubChains) check(s, t int) {
	if s < 1 || t < s || t >= sc.dc.N {
		panic(fmt.Sprintf("rotor: sub-chain %d..%d out of the layers 1..%d", s, t, sc.dc.N-1))
	}
}

// Time returns C_MP(s, t, m) for a budget of budgetBytes (1 ≤ s ≤ t ≤ L): the time of the
// forward recomputation and the backward of layers s..t with a_{s−1} and δ_t given,
// +Inf when no sequence fits.
func (sc *SubChains) Time(s, t int, budgetBytes int64) float64 {
	sc.check(s, t)
	m := sc.units(budgetBytes)
	if m < 0 {
		return math.Inf(1)
	}
	return sc.tb.value(s, t, 0, m) // plane 0: the sub-chain's input is given, not pinned
}

// Need returns the smallest budget in bytes at which Time(s, t, ·) is finite (a whole
// number of units), or −1 when even the table's largest budget is too small.
func (sc *SubChains) Need(s, t int) int64 {
	sc.check(s, t)
	u := sc.tb.need.at(s, t, 0)
	if u >= sc.cols {
		return -1
	}
	return u * sc.dc.Unit
}

// Sequence returns the operations of C_MP(s, t, budget) with stages renumbered from 1
// (layer s is stage 1): the sequence a recomputing stage runs when δ_t arrives, replayed
// by simulate.RunFrom. Errors wrap chainplan.ErrInfeasible when no sequence fits.
func (sc *SubChains) Sequence(s, t int, budgetBytes int64) ([]chainplan.Op, error) {
	sc.check(s, t)
	m := sc.units(budgetBytes)
	if m < 0 {
		return nil, fmt.Errorf("%w: a negative budget", chainplan.ErrInfeasible)
	}
	seq, err := sc.tb.sequence(s, t, m)
	if err != nil {
		return nil, err
	}
	for i := range seq {
		seq[i].Stage -= s - 1
	}
	return seq, nil
}
