package service

import (
	"errors"

	"github.com/chainplan/chainplan"
	"github.com/chainplan/chainplan/planner"
)

// The random-number states of a plan (chainplan.Chain.ReplayStateBytes): an executor keeps
// one for every stage that draws random numbers and that the plan recomputes or runs with
// an option, from the stage's first forward to the end of the step. No planner's memory
// model holds bytes from one operation to a later one, so the states are counted here,
// once, on the plan every checkpointing planner returned: added to its peak, and, where
// the sum passes the budget, the chain is planned again at the budget less the states.
// A chain whose stages draw nothing (a chain without replay_bytes) and a plan that
// recomputes none of its random stages (store-all) are left as the planner made them.

// holdingStates returns p with the states it keeps added to its peak, solving again at a
// smaller budget while the sum passes req's budget (budget "min": the plan's budget is
// raised by its states instead). Each new budget is the request's less the states of the
// plan before, which is below that plan's own budget (its peak fits it, its peak and
// states do not): the budgets fall, through the finitely many sums of states, so the loop
// ends.
func holdingStates(c *chainplan.Chain, req Request, p *chainplan.Plan) (*chainplan.Plan, error) {
	states := c.ReplayStateBytes(p.Sequence)
	if states == 0 || p.Multichain != nil || p.Offload != nil {
		return p, nil
	}
	if req.Min {
		p.PeakBytes += states
		p.BudgetBytes = max(p.BudgetBytes+states, p.PeakBytes)
		return p, nil
	}
	budget := req.BudgetBytes
	tried := budget
	for p.PeakBytes+states > budget {
		r := req.Request
		r.BudgetBytes = budget - states
		if r.BudgetBytes >= tried || r.BudgetBytes <= 0 {
			return smallestWithin(c, req, budget, p.Algo)
		}
		tried = r.BudgetBytes
		q, err := planner.Solve(c, r)
		var inf *chainplan.InfeasibleError
		if errors.As(err, &inf) {
			return smallestWithin(c, req, budget, p.Algo)
		}
		if err != nil {
			return nil, err
		}
		p, states = q, c.ReplayStateBytes(q.Sequence)
	}
	p.PeakBytes += states
	p.BudgetBytes = budget
	return p, nil
}

// smallestWithin is the plan at a budget where planning again below it found no plan
// that fits with its states: the smallest plan (budget "min"), when it fits with its
// states, so that every budget from MinBudget's up has a plan (a plan at a lower budget
// may keep more states than the smallest one); otherwise the error of a budget no plan
// fits, naming the smallest plan's budget with its states.
func smallestWithin(c *chainplan.Chain, req Request, budget int64, algo string) (*chainplan.Plan, error) {
	least := req
	least.Min = true
	p, err := Solve(c, least)
	if err == nil && p.PeakBytes <= budget {
		p.BudgetBytes = budget
		return p, nil
	}
	e := &chainplan.InfeasibleError{Algo: algo, BudgetBytes: budget, Slots: req.Slots}
	if err == nil {
		e.MinBudgetBytes = p.BudgetBytes
	}
	return nil, e
}

// MinBudget returns the smallest budget at which Solve plans c for req (its budget
// ignored): planner.MinBudget's, or, for a chain whose stages draw random numbers, the
// budget of the smallest plan with its states (holdingStates).
func MinBudget(c *chainplan.Chain, req Request) (int64, error) {
	if !drawsRandom(c) {
		return planner.MinBudget(c, req.Request)
	}
	req.Min = true
	p, err := Solve(c, req)
	if err != nil {
		return 0, err
	}
	return p.BudgetBytes, nil
}

// drawsRandom reports whether any stage of c has a random-number state to replay.
func drawsRandom(c *chainplan.Chain) bool {
	for i := range c.Stages {
		if c.Stages[i].ReplayBytes > 0 {
			return true
		}
	}
	return false
}
