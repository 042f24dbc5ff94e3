package rotor

import (
	"fmt"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/internal/discretize"
	"github.com/chainplan/chainplan/planner/simulate"
)

// DefaultSlots is the number of memory slots of the thesis experiments (spec §1.6).
const DefaultSlots = 500

// Options configures the solvers. The zero value gives rotor's defaults.
type Options struct {
	// Slots is the number S of memory units the budget is split into (DESIGN.md:
	// unit = max(1, floor(budget/S)), sizes rounded up). Zero means DefaultSlots; a
	// negative value means exact bytes (unit 1), which only small budgets can afford.
	Slots int64
	// Revolve restricts F_all to run right before its own backward: the AD-style
	// "revolve" baseline of spec §4.2. Such plans are named "revolve".
	Revolve bool
	// StageOptions lets F_s^all run each of stage s's operation-level options
	// (chainplan.chain/v2): the DP then picks one option per stage together with its
	// checkpoints. Such plans are named "rotor-ops" (docs/rotor.md).
	StageOptions bool
}

// variant returns the recurrences the options select.
func (o Options) variant() variant {
	return variant{revolve: o.Revolve, options: o.StageOptions && !o.Revolve}
}

// options returns options that select v's recurrences (their algo is v's).
func (v variant) asOptions() Options {
	return Options{Revolve: v.revolve, StageOptions: v.options}
}

func (o Options) slots(budget int64) int64 {
	return discretize.Slots(o.Slots, budget, DefaultSlots)
}

func (o Options) algo() string {
	switch {
	case o.Revolve:
		return "revolve"
	case o.StageOptions:
		return "rotor-ops"
	}
	return "rotor"
}

// Solve returns the optimal memory-persistent schedule of c within budgetBytes (the total
// activation memory, chain input included).
//
// When PyTorch's default schedule (no recomputation) fits the budget in exact bytes it is
// returned: its makespan Σ(u_F+u_B) is a lower bound, so it is optimal, and this keeps the
// rounding of the discretization from refusing the top of the budget range. Revolve plans
// never take this shortcut.
//
// Errors: an *chainplan.InfeasibleError (errors.Is ErrInfeasible) carrying the smallest
// feasible budget; ErrInvalidChain; a *chainplan.SizeError (errors.Is ErrUnsupported),
// before any table is allocated, when the tables would pass chainplan.TableLimit.
// The time complexity is O(S·N³) and the memory O(S·N²) for N = L+1 stages.
func Solve(c *chainplan.Chain, budgetBytes int64, opts Options) (*chainplan.Plan, error) {
	start := time.Now()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	slots := opts.slots(budgetBytes)
	var storeAll *chainplan.Plan
	if !opts.Revolve {
		if storeAll = storeAllIfFits(c, budgetBytes); storeAll != nil {
			storeAll.Algo, storeAll.Slots = opts.algo(), slots
			if !opts.StageOptions || !fasterForm(c) {
				storeAll.SolveMS = msSince(start)
				return storeAll, nil
			}
		}
	}
	plan, err := solveTable(c, budgetBytes, slots, opts, start)
	if storeAll != nil && (err != nil || plan.Makespan >= storeAll.Makespan) {
		// A faster form did not fit in the discretized budget: the default schedule stands.
		storeAll.SolveMS = msSince(start)
		return storeAll, nil
	}
	return plan, err
}

// fasterForm reports whether a stage has a form option (chainplan.StageOption.Form) whose
// forward and backward take less time than the stage's own: the default schedule's
// Σ(u_F+u_B) is then no longer a lower bound.
func fasterForm(c *chainplan.Chain) bool {
	for i := range c.Stages {
		s := &c.Stages[i]
		for _, o := range s.Options {
			if o.Form != "" && *o.FwdTime+*o.BwdTime+o.RecomputeTime < s.FwdTime+s.BwdTime {
				return true
			}
		}
	}
	return false
}

// solveTable is Solve past the store-all shortcut.
func solveTable(c *chainplan.Chain, budgetBytes, slots int64, opts Options, start time.Time) (*chainplan.Plan, error) {
	dc := discretize.ForBudget(c, budgetBytes, slots)
	// Both tables are checked before the first is built: the feasibility DP alone costs
	// O(N³) time, spent for nothing if the persistent table is then refused.
	if m := dc.Units(budgetBytes) - dc.A[0]; m >= 0 {
		if err := checkTables(dc, oneNeed, m, opts); err != nil {
			return nil, err
		}
	}
	need, err := minMemory(dc, opts.variant())
	if err != nil {
		return nil, err
	}
	return solveWith(c, budgetBytes, dc, need, opts, start)
}

// solveWith is Solve past the store-all shortcut, given the budget's discretization dc and
// its feasibility DP.
func solveWith(c *chainplan.Chain, budgetBytes int64, dc *discretize.Chain, need *needTable, opts Options, start time.Time) (*chainplan.Plan, error) {
	m := dc.Units(budgetBytes) - dc.A[0]
	if m < 0 || need.at(1, dc.N, 0) > m {
		return nil, infeasible(c, budgetBytes, opts)
	}
	tb, err := buildTable(dc, need, m, opts)
	if err != nil {
		return nil, err
	}
	seq, err := tb.sequence(1, dc.N, m)
	if err != nil {
		return nil, err
	}
	return finishPlan(c, opts.algo(), budgetBytes, opts.slots(budgetBytes), tb.value(1, dc.N, 0, m), seq, start)
}

// finishPlan measures the exact peak of seq and assembles the plan. A peak over the
// budget would mean the discretization is broken, which is a bug, not bad input.
func finishPlan(c *chainplan.Chain, algo string, budgetBytes, slots int64, makespan float64, seq []chainplan.Op, start time.Time) (*chainplan.Plan, error) {
	rep := simulate.Run(discretize.Exact(c), seq, budgetBytes)
	if !rep.Valid {
		return nil, fmt.Errorf("%s: internal error: the schedule does not replay: %w", algo, rep.Err())
	}
	return &chainplan.Plan{
		Algo: algo, Feasible: true, Makespan: makespan,
		PeakBytes: rep.Peak, BudgetBytes: budgetBytes, Slots: slots,
		SolveMS: msSince(start), Sequence: seq, Choices: chainplan.ChoicesOf(c, seq),
	}, nil
}

// storeAllIfFits returns the no-recomputation plan when its exact peak fits the budget.
func storeAllIfFits(c *chainplan.Chain, budgetBytes int64) *chainplan.Plan {
	seq := chainplan.StoreAllSequence(c.Len())
	rep := simulate.Run(discretize.Exact(c), seq, budgetBytes)
	if !rep.Valid {
		return nil
	}
	return &chainplan.Plan{Feasible: true, Makespan: rep.Makespan, PeakBytes: rep.Peak, BudgetBytes: budgetBytes, Sequence: seq}
}

// StoreAllPeak returns the exact peak of the no-recomputation schedule: the budget above
// which checkpointing is unnecessary (spec §4.4, M_peak).
func StoreAllPeak(c *chainplan.Chain) int64 {
	return simulate.Run(discretize.Exact(c), chainplan.StoreAllSequence(c.Len()), -1).Peak
}

func infeasible(c *chainplan.Chain, budgetBytes int64, opts Options) error {
	e := &chainplan.InfeasibleError{Algo: opts.algo(), BudgetBytes: budgetBytes, Slots: opts.slots(budgetBytes)}
	minB, err := MinBudget(c, opts)
	if err != nil {
		return err
	}
	e.MinBudgetBytes = minB
	e.Slots = opts.slots(minB)
	return e
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }
