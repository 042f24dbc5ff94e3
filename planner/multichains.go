package planner

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner/multichain"
	"github.com/chainplan/chainplan/planner/rotor"
	"github.com/chainplan/chainplan/planner/simulate"
)

// MultichainFuncs are the functions of an algorithm that plans K towers joined at the loss
// (a chainplan.MultiChain bundle). The Request they get has passed the request check; its
// BudgetBytes is positive for Solve and ignored by the others.
type MultichainFuncs struct {
	// Solve plans mc within req.BudgetBytes. Errors: *chainplan.InfeasibleError carrying
	// the smallest feasible budget, ErrInvalidChain, ErrUnsupported.
	Solve func(mc *chainplan.MultiChain, req Request) (*chainplan.Plan, error)
	// MinBudget returns the smallest budget at which Solve succeeds, asked directly.
	MinBudget func(mc *chainplan.MultiChain, req Request) (int64, error)
	// Simulate replays a plan on mc with the multi-branch simulator against limitBytes
	// (negative: no limit); an invalid plan is an error wrapping ErrInvalidPlan.
	Simulate func(mc *chainplan.MultiChain, p *chainplan.Plan, limitBytes int64) (Replay, error)
	// Frontier, when set, gives the makespan at every budget from one run.
	Frontier func(mc *chainplan.MultiChain, req Request) (*rotor.Frontier, error)
}

func multichainEntry(name, summary string, method multichain.Method) Entry {
	m := multichainMethod(method)
	f := &MultichainFuncs{Solve: m.Solve, MinBudget: m.MinBudget, Simulate: replayMultichain}
	if method == multichain.Best {
		f.Frontier = frontierMultichain
	}
	return Entry{Name: name, Family: Multichain, Format: formatMultichain, Summary: summary,
		Takes: []Field{FieldSlots}, Multichain: f}
}

// multichainMethod is a method of package multichain, the planner of the entry.
type multichainMethod multichain.Method

func (m multichainMethod) options(req Request) multichain.Options {
	return multichain.Options{Method: multichain.Method(m), Slots: req.Slots}
}

// Solve runs multichain.Solve at req's budget.
func (m multichainMethod) Solve(mc *chainplan.MultiChain, req Request) (*chainplan.Plan, error) {
	return multichain.Solve(mc, req.BudgetBytes, m.options(req))
}

// MinBudget runs multichain.MinBudget.
func (m multichainMethod) MinBudget(mc *chainplan.MultiChain, req Request) (int64, error) {
	return multichain.MinBudget(mc, m.options(req))
}

// frontierMultichain runs multichain.SolveFrontier (the Best method's).
func frontierMultichain(mc *chainplan.MultiChain, _ Request) (*rotor.Frontier, error) {
	return multichain.SolveFrontier(mc)
}

// replayMultichain is the Simulate of the multichain algorithms.
func replayMultichain(mc *chainplan.MultiChain, p *chainplan.Plan, limitBytes int64) (Replay, error) {
	if err := mc.Validate(); err != nil {
		return Replay{}, err
	}
	if p.Multichain == nil {
		return Replay{}, fmt.Errorf("%w: a %s plan needs its multichain section", chainplan.ErrInvalidPlan, p.Algo)
	}
	if p.Multichain.Branches != mc.K() {
		return Replay{}, fmt.Errorf("%w: the plan is for %d towers, the bundle has %d", chainplan.ErrInvalidPlan,
			p.Multichain.Branches, mc.K())
	}
	rep := simulate.RunMulti(mc, p.Sequence, limitBytes)
	if err := rep.Err(); err != nil {
		return Replay{}, err
	}
	return Replay{Makespan: rep.Makespan, PeakBytes: rep.Peak}, nil
}

// MultichainAlgos returns the names of the Multichain-family entries, in table order.
func MultichainAlgos() []string { return names(func(e Entry) bool { return e.Multichain != nil }) }

// checkMultichain validates a request for a bundle and returns the algorithm's entry: a
// multichain algorithm (an unknown name, or one of another family, named as such), slots
// not negative, no segments and no bandwidth.
func (r Request) checkMultichain() (Entry, error) {
	all := MultichainAlgos()
	e, ok := Lookup(r.Algo)
	switch {
	case !ok && slices.Contains(all, strings.ToLower(r.Algo)):
		return Entry{}, fmt.Errorf("%w: unknown algorithm %q (names are lower-case: did you mean %q?)",
			chainplan.ErrUnsupported, r.Algo, strings.ToLower(r.Algo))
	case !ok:
		return Entry{}, fmt.Errorf("%w: unknown algorithm %q for towers joined at the loss (want %s)",
			chainplan.ErrUnsupported, r.Algo, strings.Join(all, " or "))
	case e.Multichain == nil:
		return Entry{}, fmt.Errorf("%w: algorithm %q plans one chain, not towers joined at the loss (want %s)",
			chainplan.ErrUnsupported, r.Algo, strings.Join(all, " or "))
	case r.Slots < 0:
		return Entry{}, fmt.Errorf("%w: slots must be positive (got %d)", chainplan.ErrUnsupported, r.Slots)
	case r.Segments != 0:
		return Entry{}, fmt.Errorf("%w: segments apply to %s only (got algorithm %q)",
			chainplan.ErrUnsupported, readers(FieldSegments), e.Name)
	case r.Bandwidth != 0 || math.IsNaN(r.Bandwidth):
		return Entry{}, fmt.Errorf("%w: a bandwidth applies to %s only, not to %q",
			chainplan.ErrUnsupported, readers(FieldBandwidth), e.Name)
	}
	return e, nil
}

// SolveMultichain plans the towers of bundle mc with the request's multichain algorithm
// (Algo must name one; there is no default). Errors: *chainplan.InfeasibleError (with the
// smallest feasible budget), ErrInvalidChain, ErrUnsupported for a bad request.
func SolveMultichain(mc *chainplan.MultiChain, req Request) (*chainplan.Plan, error) {
	e, err := req.checkMultichain()
	if err != nil {
		return nil, err
	}
	if req.BudgetBytes <= 0 {
		return nil, fmt.Errorf("%w: the budget must be positive (got %d bytes)", chainplan.ErrUnsupported, req.BudgetBytes)
	}
	return e.Multichain.Solve(mc, req)
}

// MinBudgetMultichain returns the smallest budget, at least 1 byte, at which
// SolveMultichain succeeds for the request's algorithm (its BudgetBytes is ignored).
func MinBudgetMultichain(mc *chainplan.MultiChain, req Request) (int64, error) {
	e, err := req.checkMultichain()
	if err != nil {
		return 0, err
	}
	if err := mc.Validate(); err != nil {
		return 0, err
	}
	b, err := e.Multichain.MinBudget(mc, req)
	return max(1, b), err
}

// SolveMultichainMin returns SolveMultichain's plan at MinBudgetMultichain's budget.
func SolveMultichainMin(mc *chainplan.MultiChain, req Request) (*chainplan.Plan, error) {
	b, err := MinBudgetMultichain(mc, req)
	if err != nil {
		return nil, err
	}
	req.BudgetBytes = b
	e, _ := Lookup(req.Algo) // checked by MinBudgetMultichain
	return e.Multichain.Solve(mc, req)
}

// SimulateMultichain replays plan p on bundle mc with the multi-branch simulator against
// limitBytes (negative: no limit). Errors: ErrInvalidChain, ErrInvalidPlan.
func SimulateMultichain(mc *chainplan.MultiChain, p *chainplan.Plan, limitBytes int64) (Replay, error) {
	return replayMultichain(mc, p, limitBytes)
}
