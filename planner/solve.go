package planner

import (
	"fmt"

	"github.com/chainplan/chainplan"
)

// Solve plans c with the request's algorithm. Errors: *chainplan.InfeasibleError (with the
// smallest feasible budget), ErrInvalidChain, ErrUnsupported for a bad request.
func Solve(c *chainplan.Chain, req Request) (*chainplan.Plan, error) {
	e, err := req.check()
	if err != nil {
		return nil, err
	}
	if req.BudgetBytes <= 0 {
		return nil, fmt.Errorf("%w: the budget must be positive (got %d bytes)", chainplan.ErrUnsupported, req.BudgetBytes)
	}
	return e.Schedule.Solve(c, req)
}

// MinBudget returns the smallest budget, at least 1 byte, at which Solve succeeds for the
// request's algorithm, slots, segments and bandwidth (its BudgetBytes is ignored). It asks
// the algorithm's own search (Entry.Schedule.MinBudget), never Solve. Errors:
// ErrInvalidChain, ErrUnsupported for a bad request or a chain the algorithm refuses.
func MinBudget(c *chainplan.Chain, req Request) (int64, error) {
	e, err := req.check()
	if err != nil {
		return 0, err
	}
	if err := c.Validate(); err != nil {
		return 0, err
	}
	b, err := e.Schedule.MinBudget(c, req)
	if err != nil {
		return 0, err
	}
	return max(1, b), nil
}

// SolveMin returns the plan Solve gives at MinBudget's budget (req.BudgetBytes is
// ignored). Where the algorithm's search ends with what Solve needs (rotor, revolve,
// optimal, sequential) it runs that search once and no more; otherwise it finds the budget,
// then solves once. Errors are MinBudget's and Solve's.
func SolveMin(c *chainplan.Chain, req Request) (*chainplan.Plan, error) {
	e, err := req.check()
	if err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if e.Schedule.SolveMin != nil {
		return e.Schedule.SolveMin(c, req)
	}
	b, err := e.Schedule.MinBudget(c, req)
	if err != nil {
		return nil, err
	}
	req.BudgetBytes = max(1, b)
	return e.Schedule.Solve(c, req)
}
