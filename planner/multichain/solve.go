package multichain

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/simulate"
)

// Method says which plans Solve compares.
type Method int

// The methods. Best is the zero value.
const (
	// Best compares H0 (the dynamic program), H1 (the linearized chain) and the schedule
	// without recomputation, and returns the fastest that fits: algorithm "multichain".
	Best Method = iota
	// DP is H0 alone: the exact dynamic program of spec §5-§6 on slots of the largest
	// activation, with the reserve of spec §9.2.
	DP
	// Linear is H1 alone: rotor on the towers concatenated in every order
	// (algorithm "multichain-linear").
	Linear
)

// Candidate names in Plan.Chosen and Plan.Candidates.
const (
	CandidateDP       = "dp"
	CandidateLinear   = "linear"
	CandidateStoreAll = "store-all"
)

// Options configures Solve. The zero value is algorithm "multichain" with rotor's default
// grid for the linearized chain.
type Options struct {
	// Method picks the plans compared (Best, DP or Linear).
	Method Method
	// Slots is the memory grid of rotor on the linearized chain (0: rotor.DefaultSlots).
	// The dynamic program's slots are set by the model: floor((budget − R) / s).
	Slots int64
}

func (o Options) algo() string {
	if o.Method == Linear {
		return "multichain-linear"
	}
	return "multichain"
}

// Solve returns the plan of bundle mc within budgetBytes (the total activation memory,
// every tower input included), its sequence replayed in bytes by simulate.RunMulti before
// it is returned: makespan and peak are the replay's. With Method Best it compares, at the
// budget, the no-recomputation schedule (optimal when it fits, in exact bytes), H0 and H1,
// and returns the fastest, naming it in Chosen and listing all three in Candidates; H0
// wins ties, its makespan being the optimum of the slot model.
//
// Errors: an *chainplan.InfeasibleError carrying the smallest feasible budget
// (MinBudget); ErrInvalidChain; ErrUnsupported when the dynamic program's table would be
// too large (merge stages into blocks) or for a Linear request on towers without stages.
func Solve(mc *chainplan.MultiChain, budgetBytes int64, opts Options) (*chainplan.Plan, error) {
	start := time.Now()
	if err := mc.Validate(); err != nil {
		return nil, err
	}
	type try struct {
		name string
		run  func() (*chainplan.Plan, error)
	}
	var tries []try
	if opts.Method == Best {
		tries = append(tries, try{CandidateStoreAll, func() (*chainplan.Plan, error) { return storeAllPlan(mc, budgetBytes), nil }})
	}
	if opts.Method != Linear {
		tries = append(tries, try{CandidateDP, func() (*chainplan.Plan, error) {
			p, err := solveDP(mc, budgetBytes)
			if errors.Is(err, chainplan.ErrUnsupported) && opts.Method == Best {
				return nil, nil // a table too large at this budget: the other candidates may do
			}
			return p, err
		}})
	}
	if opts.Method != DP {
		tries = append(tries, try{CandidateLinear, func() (*chainplan.Plan, error) {
			if len(orders(mc)) == 0 {
				if opts.Method == Linear {
					return nil, fmt.Errorf("%w: multichain-linear: no tower has a stage", chainplan.ErrUnsupported)
				}
				return nil, nil
			}
			return solveLinear(mc, budgetBytes, opts.Slots)
		}})
	}
	var best *chainplan.Plan
	var cands []chainplan.Candidate
	for _, tr := range tries {
		t0 := time.Now()
		p, err := tr.run()
		if err != nil {
			return nil, err
		}
		c := chainplan.Candidate{Algo: tr.name, SolveMS: msSince(t0)}
		if p != nil {
			if err := check(mc, p, budgetBytes, tr.name); err != nil {
				return nil, err
			}
			c.Feasible, c.Makespan, c.PeakBytes = true, p.Makespan, p.PeakBytes
			if best == nil || p.Makespan < best.Makespan*(1-1e-12) {
				best = p
				best.Chosen = tr.name
			}
		}
		cands = append(cands, c)
	}
	if best == nil {
		return nil, infeasible(mc, budgetBytes, opts)
	}
	best.Algo, best.SolveMS = opts.algo(), msSince(start)
	if opts.Method == Best {
		best.Candidates = cands
	} else {
		best.Chosen = ""
	}
	return best, nil
}

// check replays plan p of candidate name against the budget and fills its peak; a plan
// that does not replay, or whose makespan differs from the planner's, is an internal
// error, not bad input.
func check(mc *chainplan.MultiChain, p *chainplan.Plan, budgetBytes int64, name string) error {
	rep, err := replay(mc, p.Sequence, budgetBytes)
	if err != nil {
		return fmt.Errorf("multichain %s: internal error: the schedule does not replay: %w", name, err)
	}
	if math.Abs(rep.Makespan-p.Makespan) > 1e-9*max(1, math.Abs(p.Makespan)) {
		return fmt.Errorf("multichain %s: internal error: makespan %v, the replay says %v", name, p.Makespan, rep.Makespan)
	}
	p.Makespan, p.PeakBytes = rep.Makespan, rep.Peak
	return nil
}

// replay runs the multi-branch simulator in bytes against limitBytes.
func replay(mc *chainplan.MultiChain, seq []chainplan.Op, limitBytes int64) (*simulate.Report, error) {
	rep := simulate.RunMulti(mc, seq, limitBytes)
	return rep, rep.Err()
}

// MinBudget returns the smallest total budget in bytes, every tower input included, at
// which Solve finds a plan with opts, asked of each method directly: m_min(L, b⁰)·s + R for
// H0 (Lemma 2, no table), the smallest over the concatenation orders of rotor.MinBudget
// for H1, the no-recomputation peak; Best takes the smallest of the three. At least 1.
func MinBudget(mc *chainplan.MultiChain, opts Options) (int64, error) {
	if err := mc.Validate(); err != nil {
		return 0, err
	}
	var best int64 = math.MaxInt64
	if opts.Method == Best {
		best = storeAllPeak(mc)
	}
	if opts.Method != Linear {
		best = min(best, dpMinBudget(mc))
	}
	if opts.Method != DP && (opts.Method == Linear || len(orders(mc)) > 0) {
		b, err := linearMinBudget(mc, opts.Slots)
		if err != nil {
			return 0, err
		}
		best = min(best, b)
	}
	return max(1, best), nil
}

// SolveMin returns Solve's plan at MinBudget's budget.
func SolveMin(mc *chainplan.MultiChain, opts Options) (*chainplan.Plan, error) {
	b, err := MinBudget(mc, opts)
	if err != nil {
		return nil, err
	}
	return Solve(mc, b, opts)
}

func infeasible(mc *chainplan.MultiChain, budgetBytes int64, opts Options) error {
	minB, err := MinBudget(mc, opts)
	if err != nil {
		return err
	}
	return &chainplan.InfeasibleError{Algo: opts.algo(), BudgetBytes: budgetBytes, MinBudgetBytes: minB}
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }
